"""Validation of the answers that the template pastes into C++, CUDA and Python."""

import pytest
import torch

from opgen.answers import collect_op, options_of
from opgen.cpp_expression import BOOL, FLOAT, INT, given_conditions, parse, shared_calls
from opgen.model import project_record, read_project
from opgen.spec import (
    SpecError,
    check_cpp_expression,
    check_python_expression,
    cpp_formula,
    parse_gradients,
    parse_signature,
)


def validate_answers(answers):
    """The op of these command-line answers, as opgen new reads them (no question asked)."""
    given = {k: v for k, v in answers.items() if k not in ("op_name", "exact")}
    return collect_op(answers["op_name"], given, exact=answers.get("exact", False))


DEFAULTS = {
    "op_name": "my_op",
    "kind": "elementwise",
    "signature": "x: Tensor, alpha: float = 2.0",
    "forward": "alpha * x",
    "reference": "alpha * x",
    "backward": True,
    "gradients": "x: alpha * grad",
    "dtypes": ["float32", "float64", "float16", "bfloat16"],
}


def test_defaults_are_valid():
    validate_answers(DEFAULTS)


def test_parses_a_signature_in_call_order():
    assert parse_signature("a: float, x: Tensor, b: Tensor, c: float = -1") == [
        {"name": "a", "type": "float", "default": None},
        {"name": "x", "type": "Tensor", "default": None},
        {"name": "b", "type": "Tensor", "default": None},
        {"name": "c", "type": "float", "default": -1.0},
    ]


@pytest.mark.parametrize(
    ("signature", "says"),
    [
        ("", "empty"),
        ("alpha: float", "no tensor argument"),
        ("x: str", "needs a type"),
        ("x", "needs a type"),
        ("x: Tensor = 1", "cannot have a default"),
        ("x: Tensor, x: Tensor", "'x' appears twice"),
        ("x: Tensor, alpha: float = 1, y: Tensor", "not a Python argument list"),
        ("x: Tensor, alpha: float = foo", "is foo, not a number"),
        ("x: Tensor, alpha: float = True", "is True, not a number"),
        ("x: Tensor, alpha: float = 1e400", "not a finite double"),
        ("*x: Tensor", "only plain"),
        (", ".join(f"x{i}: Tensor" for i in range(65)), "65 arguments, and a PyTorch op takes at most 64"),
        # Names the formulas use: an argument would hide them.
        ("x: Tensor, grad: Tensor", "would hide grad, the incoming gradient"),
        ("x: Tensor, acc_t: float", "would hide acc_t, the arithmetic type"),
        ("x: Tensor, torch: Tensor", "would hide torch, the module of the PyTorch references"),
        ("x: Tensor, exp: float", "would hide exp, a math function"),
        # The functions the C++ of a formula calls for `/` and for conditions on floats.
        ("x: Tensor, divide: float", "would hide divide, a function of the formulas"),
        ("where: Tensor, y: Tensor", "would hide where, a function of the formulas"),
        ("x: Tensor, int: float", "C++ keyword"),
        ("X: Tensor", "lower snake case"),
        ("x: Tensor); import os; (", "contains"),
        ("x: Tensor, {{ y }}: float", "contains"),
    ],
)
def test_refuses_bad_signatures(signature, says):
    with pytest.raises(SpecError) as error:
        parse_signature(signature)
    assert says in str(error.value)


@pytest.mark.parametrize(
    "expression",
    ["alpha * x", "x > 0 ? x : 0", "fmax(x, acc_t(0)) + exp(-x * x) / (1 + alpha)", "2.5e-3 * x",
     "x * 0 + 00 + 0.5 + 007.5 + 0x1F", "(x > 0) == (alpha > 1)", "(0 < x) && (x < 1)"],
)
def test_accepts_cpp_expressions(expression):
    check_cpp_expression("forward", expression, {"x", "alpha"})


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("", "empty"),
        ("y * x", "uses 'y'"),
        ("system(x)", "calls 'system', which is not a math function"),
        ("{{ 7 * 7 }}", "contains"),
        ("{% include 'x' %}", "contains"),
        ("x; return 0", "contains"),
        ('x + "s"', "contains"),
        ("x \\\n + 1", "contains"),
        ("x # comment", "contains"),
        ("$(rm -rf /)", "contains"),
        ("`id`", "contains"),
        ("(x + 1", "unbalanced"),
        ("x) + (x", "unbalanced"),
        # Python written where C++ is asked for: the message says what C++ writes.
        ("x ** 2", "'**' at position 3 is Python's power; C++ writes pow(a, b)"),
        ("x // 2", "'//' at position 3 is Python's floor division; C++ writes floor(a / b)"),
        ("x if x > 0 else 0", "a Python conditional: C++ writes condition ? a : b"),
        ("x > 0 and x < 1", "C++ writes && for 'and'"),
        ("x < 0 or x > 1", "C++ writes || for 'or'"),
        ("not x", "C++ writes ! for 'not'"),
        # A leading 0 is octal in C++ and an error in Python (the check crashed with Python's
        # SyntaxError, a traceback).
        ("x * 017", "'017' at position 5 starts with 0, which makes an octal number in C++; write 17"),
        ("x * 08", "'08' at position 5 starts with 0"),
        # Numbers C++ cannot hold: it warned and cut the integer to 64 bits (x * 7.8e18 where
        # Python's reference computes x * 1e20), or made the floating one inf or 0.
        ("x * 99999999999999999999", "'99999999999999999999' at position 5 is larger than C++'s largest "
                                     "integer (2**63 - 1), which would cut it to 64 bits; write it as a "
                                     "floating number, 99999999999999999999.0"),
        ("x * 0x8000000000000000", "'0x8000000000000000' at position 5 is larger than C++'s largest integer"),
        ("x * 1e400", "'1e400' at position 5 is beyond a double's range (it would be inf)"),
        ("x + 1.5e-400", "'1.5e-400' at position 5 is below a double's smallest number, 5e-324"),
        # Chained comparisons: Python tests each pair, C++ compares the first one's truth value
        # (0 or 1) with the next operand. They rendered as C++ reads them, with a reference
        # written the same way, so the generated tests passed an op that is not what it reads.
        ("0 < x < 1", "'0 < x < 1' chains comparisons, which Python reads as a test of each pair and "
                      "C++ as a comparison of the first one's truth value (0 or 1); write (0 < x) && (x < 1) "
                      "for Python's, or parentheses around the comparison made first"),
        ("x * (x == alpha == 1)", "'x == alpha == 1' chains comparisons"),
        ("x > 0 == alpha < 1", "write (x > 0) && (0 == alpha) && (alpha < 1) for Python's"),
    ],
)
def test_refuses_bad_cpp_expressions(expression, says):
    with pytest.raises(SpecError) as error:
        check_cpp_expression("forward", expression, {"x", "alpha"})
    assert says in str(error.value)


def test_python_reference_gets_a_hint_for_the_cpp_ternary():
    with pytest.raises(SpecError, match="use torch.where"):
        check_python_expression("reference", "x > 0 ? x : 0", {"x"})
    with pytest.raises(SpecError, match="uses 'os'"):
        check_python_expression("reference", "os.system(x)", {"x"})
    check_python_expression("reference", "torch.clamp(x, min=0)[..., :]", {"x"})


def test_gradients_are_parsed_against_the_signature():
    params = parse_signature("a: float, x: Tensor, b: Tensor")
    # In the signature's order, with the tensors each formula reads.
    assert parse_gradients("b: grad * x; x: a * grad", params) == ([
        {"input": "x", "formula": "a * grad", "cpp": "a * grad", "body": {"locals": [], "value": "a * grad"},
         "reads": []},
        {"input": "b", "formula": "grad * x", "cpp": "grad * x", "body": {"locals": [], "value": "grad * x"},
         "reads": ["x"]},
    ], [])
    declared = parse_gradients("x: a * grad; b: non_differentiable", params)
    assert declared == ([{"input": "x", "formula": "a * grad", "cpp": "a * grad",
                          "body": {"locals": [], "value": "a * grad"}, "reads": []}], ["b"])
    for bad, says in [
        ("a: grad", "not a tensor argument"),
        ("x: grad; x: grad", "twice"),
        ("x grad", "needs the form"),
        ("", "has no formula for 'x'"),
        ("x: a * grad", "has no formula for 'b': give 'b: <expression using grad>', or "
                        "'b: non_differentiable'"),
        ("x: non_differentiable; b: non_differentiable", "no input is differentiable"),
        ("x: grad * y", "uses 'y'"),
    ]:
        with pytest.raises(SpecError) as error:
            parse_gradients(bad, params)
        assert says in str(error.value)


def test_the_op_name_cannot_be_an_argument():
    with pytest.raises(SpecError, match="op's name"):
        validate_answers({**DEFAULTS, "signature": "my_op: Tensor", "forward": "my_op",
                          "reference": "my_op", "gradients": "my_op: grad"})


def test_integer_or_converted_outputs_have_no_backward():
    with pytest.raises(SpecError, match="pass --no-backward"):
        validate_answers({**DEFAULTS, "dtypes": ["uint16"], "out_dtype": "float32"})
    with pytest.raises(SpecError, match="pass --no-backward"):
        validate_answers({**DEFAULTS, "out_dtype": "float16"})
    validate_answers({**DEFAULTS, "dtypes": ["uint16"], "out_dtype": "float32", "backward": False})


WITHOUT_GRADIENTS = {k: v for k, v in DEFAULTS.items() if k != "gradients"}
PIXEL = {**WITHOUT_GRADIENTS, "kind": "pixel", "signature": "img: Tensor", "channels": "r, g, b",
         "forward": "0.299f * r + 0.587f * g + 0.114f * b", "reference": "img[..., 0]",
         "backward": False, "dtypes": ["uint8"]}


def test_pixel_ops_take_one_image_and_named_channels():
    validate_answers(PIXEL)
    for change, says in [
        ({"signature": "img: Tensor, other: Tensor"}, "one image tensor"),
        ({"channels": "r, , b"}, "name each channel"),
        ({"channels": "r, g, r"}, "must differ"),
        ({"channels": "r, exp, b"}, "not a C++ keyword, math function"),
            ({"channels": "r, acc_t, b"}, "not a C++ keyword, math function, acc_t"),
        ({"backward": True}, "pass --no-backward"),
        ({"forward": "img * 2"}, "uses 'img'"),  # the formula sees channels, not the image
    ]:
        with pytest.raises(SpecError) as error:
            validate_answers({**PIXEL, **change})
        assert says in str(error.value)


MATMUL = {**{k: v for k, v in WITHOUT_GRADIENTS.items() if k != "forward"}, "kind": "matmul",
           "signature": "a: Tensor, b: Tensor", "reference": "a @ b"}


def test_matmul_ops_take_two_floating_matrices():
    validate_answers(MATMUL)
    for change, says in [
        ({"signature": "a: Tensor, b: Tensor, alpha: float"}, "exactly two tensors"),
        ({"dtypes": ["int32"], "backward": False}, "floating dtypes"),
        ({"exact": True}, "not --exact"),
    ]:
        with pytest.raises(SpecError) as error:
            validate_answers({**MATMUL, **change})
        assert says in str(error.value)


@pytest.mark.parametrize("answers", [DEFAULTS, PIXEL, MATMUL,
                                     {**DEFAULTS, "signature": "x: Tensor, m: Tensor",
                                      "forward": "x * m", "reference": "x * m",
                                      "gradients": "m: non_differentiable; x: grad * m"}])
def test_an_op_record_reads_back_as_itself(answers):
    # regen, add and update re-read recorded ops with the parser opgen new uses.
    op = validate_answers(answers)
    assert collect_op(op["name"], options_of(op)) == op
    record = project_record("lib", [op])
    assert read_project(record) == record


def test_a_record_of_an_older_opgen_reads_as_a_one_op_project():
    old = {"_commit": "v0.1.0", "op_name": "my_op", **{k: v for k, v in DEFAULTS.items()
                                                          if k != "op_name"}, "exact": False}
    record = read_project(old)
    assert record["package"] == "my_op" and [op["name"] for op in record["ops"]] == ["my_op"]
    assert record["ops"][0]["gradients"] == [{"input": "x", "formula": "alpha * grad", "cpp": "alpha * grad",
                                              "body": {"locals": [], "value": "alpha * grad"}, "reads": []}]


@pytest.mark.parametrize("names, says", [
    (["relu", "relu"], "already has an op named 'relu'"),
    (["relu", "relu_backward"], "no op may be named relu_backward"),
    (["relu", "relu_reference"], "would write the same file, lib/relu_reference.py"),
    # csrc/relu_kernel.cpp (the second op's glue) and csrc/relu_kernel.cu (the first's kernels)
    # compile to one object: ninja refused the CUDA build ("multiple rules generate").
    (["relu", "relu_kernel"], "ops 'relu' and 'relu_kernel' would write the same file, the build's object "
                              "csrc/relu_kernel.o"),
    (["library"], "csrc/library.cpp"),
])
def test_ops_of_one_project_cannot_collide(names, says):
    ops = [validate_answers({**DEFAULTS, "op_name": name}) for name in names]
    with pytest.raises(SpecError, match=says):
        project_record("lib", ops)


def test_a_hand_edited_record_is_refused_naming_the_op():
    record = project_record("lib", [validate_answers(DEFAULTS)])
    record["ops"][0]["forward"] = "alpha * y"
    with pytest.raises(SpecError, match="op 'my_op': forward 'alpha \\* y'"):
        read_project(record)
    del record["ops"][0]["params"]
    with pytest.raises(SpecError, match="op 1 is malformed"):
        read_project(record)


@pytest.mark.parametrize(
    ("formula", "cpp", "torch"),
    [
        # Literals compute in acc_t: a double literal made float kernels compute in double.
        ("0.5 * x * (1 + tanh(0.79788 * (x + 0.044715 * x * x * x)))",
         "acc_t(0.5) * x * (acc_t(1) + tanh(acc_t(0.79788) * (x + acc_t(0.044715) * x * x * x)))",
         "0.5 * x * (1 + torch.tanh(0.79788 * (x + 0.044715 * x * x * x)))"),
        # A condition on floating values picks with where(): on the CPU it is a mask of 16 lanes.
        ("x > 0 ? x : 0.01f * x", "where(x > acc_t(0), x, acc_t(0.01) * x)",
         "torch.where(x > 0, x, 0.01 * x)"),
        ("expf(-x) + fminf(x, 1.0f)", "exp(-x) + fmin(x, acc_t(1.0))",
         "torch.exp(-x) + torch.fmin(x, torch.as_tensor(1.0, dtype=torch.float64))"),
        ("min(x, 0) + max(x, y)", "min(x, acc_t(0)) + max(x, y)",
         "torch.clamp(x, max=0) + torch.maximum(x, y)"),
        ("clamp(x, -1, alpha)", "clamp(x, acc_t(-1), alpha)", "torch.clamp(x, -1, alpha)"),
        ("pow(x, 2) * pow(x, n)", "pow(x, 2) * pow(x, acc_t(n))", "torch.pow(x, 2) * torch.pow(x, n)"),
        # Integers meet floating values in acc_t; among themselves they stay integers.
        ("n / 2 * x + (n + 1) * x", "divide(acc_t(n), acc_t(2)) * x + acc_t(n + 1) * x",
         "n / 2 * x + (n + 1) * x"),
        # Floats divide with divide() (as torch.compile divides them on a GPU), nested as written.
        ("exp((x - y) / alpha) / (1 + x)", "divide(exp(divide(x - y, alpha)), acc_t(1) + x)",
         "torch.exp((x - y) / alpha) / (1 + x)"),
        ("x * (n % 3 == 0)", "x * acc_t(n % 3 == 0)", None),
        ("flip ? -x : x", "flip ? -x : x", "-x if flip else x"),
        # A tensor either way: torch functions around it take tensors only.
        ("flip && n > 1 ? x : 2", "flip && n > 1 ? x : acc_t(2)",
         "x if flip and n > 1 else torch.as_tensor(2, dtype=torch.float64)"),
        ("alpha > 0 ? x : -x", "where(alpha > acc_t(0), x, -x)", "x if alpha > 0 else -x"),
        ("(x > 0) & (y < 1) ? grad : 0", "where((x > acc_t(0)) & (y < acc_t(1)), grad, acc_t(0))",
         "torch.where((x > 0) & (y < 1), grad, 0)"),
        ("x > 0 && flip ? x : y", "where(x > acc_t(0) && flip, x, y)", "torch.where((x > 0) & flip, x, y)"),
        # Truth values as numbers: 0 or 1, as C++'s acc_t makes them (torch subtracts no bool).
        ("(x > 0) * grad - !y", "acc_t(x > acc_t(0)) * grad - acc_t(!y)",
         "(x > 0).to(x.dtype) * grad - torch.logical_not(y).to(y.dtype)"),
        ("x > y", "acc_t(x > y)", "x > y"),
        # Signs of signs: "--2" is C++'s decrement (the op did not build).
        ("-(-2) * x + - -x", "acc_t(2) * x + -(-x)", "--2 * x + --x"),
        # A truth value meeting an integer in ?: is an integer, as in C++ (here 1 was the bound).
        ("clamp(x, 0, flip ? flip : n)", "clamp(x, acc_t(0), acc_t(flip ? flip : n))",
         "torch.clamp(x, 0, (1 if flip else 0) if flip else n)"),
        # ... and so 0 or 1 in its twin: torch subtracts no bool (x - True raised).
        ("x - (n ? 3 : flip)", "x - acc_t(n ? 3 : flip)", "x - (3 if n else 1 if flip else 0)"),
        # A comparison of floats meeting an integer in ?: (a mask where acc_t is Lanes, which
        # took the 4 for true: 1): both branches acc_t.
        ("flip ? x <= 3 : 2 * 2", "flip ? acc_t(x <= acc_t(3)) : acc_t(2 * 2)",
         "(x <= 3).to(x.dtype) if flip else torch.as_tensor(2 * 2, dtype=torch.float64)"),
        ("exp(alpha) * x", "exp(alpha) * x", "torch.exp(torch.as_tensor(alpha, dtype=torch.float64)) * x"),
        ("round(x)", "round(x)", None),
        # rint and nearbyint round halves to even, as torch.round does (C's round: away from 0).
        ("rint(x * alpha) + nearbyintf(y)", "rint(x * alpha) + nearbyint(y)",
         "torch.round(x * alpha) + torch.round(y)"),
    ],
)
def test_formulas_are_written_in_cpp_with_literals_in_acc_t_and_in_pytorch(formula, cpp, torch):
    names = {"x": FLOAT, "y": FLOAT, "grad": FLOAT, "alpha": FLOAT, "n": INT, "flip": BOOL}
    written = cpp_formula("forward", formula, names, {"x", "y", "grad"})
    assert (written.cpp, written.torch) == (cpp, torch)


@pytest.mark.parametrize(
    ("formula", "computes"),
    [
        # The sign idiom: torch refused the twin ("Subtraction ... with two bool tensors").
        ("(x > 0) - (x < 0)", lambda x, n, flip: torch.sign(x)),
        ("-(x > 0) * x", lambda x, n, flip: -x.clamp(min=0)),
        ("2 - (x > 0) + (flip - (x < 0))", lambda x, n, flip: 2 - (x > 0).double() + 1 - (x < 0).double()),
        # torch adds bool tensors as `or`: True + True was True, not C++'s 2.
        ("x * ((x > 0) + (x > 1))", lambda x, n, flip: x * ((x > 0).double() + (x > 1).double())),
        ("abs((x > 0) - 0.5) + min(x > 0, flip)", lambda x, n, flip: 0.5 + (x > 0).double()),
        # C++'s && gives a truth value; Python's `and` an operand (2 and 3 was 3), torch's &
        # a bitwise and (True & 2 was 0).
        ("x * (n && 3) + x * (flip && n)", lambda x, n, flip: 2 * x),
        ("x * ((x > 0) && n) + ((x < 0) || n)", lambda x, n, flip: x.clamp(min=0) + 1),
    ],
)
def test_the_pytorch_twin_computes_what_the_cpp_computes(formula, computes):
    names = {"x": FLOAT, "n": INT, "flip": BOOL}
    twin = cpp_formula("forward", formula, names, {"x"}).torch
    x = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], dtype=torch.float64)
    values = {"x": x, "n": 2, "flip": True, "torch": torch}
    torch.testing.assert_close(torch.as_tensor(eval(twin, values)).double().expand_as(x),
                               computes(x, 2, True), msg=twin)


def test_a_truth_value_is_not_complemented_with_tilde():
    with pytest.raises(SpecError, match="'~' flips every bit, which makes -1 or -2 of a truth value, "
                                        "not its negation; use ! for 'not'"):
        cpp_formula("forward", "x * ~flip", {"x": FLOAT, "flip": BOOL})


@pytest.mark.parametrize(
    ("formula", "given", "conditions"),
    [
        ("x > 0 ? grad : 0", "where(condition_0, grad, acc_t(0))", [("x > acc_t(0)", "x > 0")]),
        ("grad * (x > 0)", "grad * acc_t(condition_0)", [("x > acc_t(0)", "x > 0")]),
        # The largest truth value that reads no grad is one condition, however it is spelt.
        ("((x > alpha && x < 2)) ? grad : 0", "where(condition_0, grad, acc_t(0))",
         [("x > alpha && x < acc_t(2)", "x > alpha && x < 2")]),
        ("(x > 0) * grad + (y < n) * 2 * grad - (x > 0) * grad",
         "acc_t(condition_0) * grad + acc_t(condition_1) * acc_t(2) * grad - acc_t(condition_0) * grad",
         [("x > acc_t(0)", "x > 0"), ("y < acc_t(n)", "y < n")]),
        ("x > y && grad > 0 ? alpha * grad : 0",
         "where(condition_0 && grad > acc_t(0), alpha * grad, acc_t(0))", [("x > y", "x > y")]),
        ("max(x, y) > 1 ? grad : -grad", "where(condition_0, grad, -grad)",
         [("max(x, y) > acc_t(1)", "max(x, y) > 1")]),
        # Gradients that need more of a tensor than a truth value: no conditions.
        ("x > 0 ? grad * x : 0", None, []),
        ("grad * exp(x)", None, []),
        ("grad > x ? grad : 0", None, []),
        # No tensor at all: nothing to save, the formula as it is.
        ("alpha * grad", "alpha * grad", []),
    ],
)
def test_gradients_reading_tensors_only_through_conditions_are_written_over_them(formula, given, conditions):
    names = {"x": FLOAT, "y": FLOAT, "grad": FLOAT, "alpha": FLOAT, "n": INT}
    found = []
    assert given_conditions(formula, names, {"x", "y"}, found) == given
    assert [(c.cpp, c.text) for c in found] == conditions


def test_an_op_saves_conditions_only_where_every_gradient_reads_its_tensors_through_them():
    def saved(signature, forward, gradients):
        answers = {**DEFAULTS, "signature": signature, "forward": forward, "gradients": gradients}
        op = validate_answers({k: v for k, v in answers.items() if k != "reference"})
        given = {g["input"]: g.get("cpp_given") for g in op["gradients"]}
        return [c["text"] for c in op["saved_conditions"]], given

    # max: both gradients share one condition.
    assert saved("x: Tensor, y: Tensor", "x > y ? x : y", "x: x > y ? grad : 0; y: x > y ? 0 : grad") == (
        ["x > y"], {"x": "where(condition_0, grad, acc_t(0))", "y": "where(condition_0, acc_t(0), grad)"})
    # One gradient that reads y itself: the forward saves the tensors.
    gradients = "x: x > 0 ? grad * y : 0; y: x > 0 ? grad * x : 0"
    assert saved("x: Tensor, y: Tensor", "x > 0 ? x * y : 0", gradients) == ([], {"x": None, "y": None})
    # A gradient that is grad itself has no kernel, and does not count.
    assert saved("x: Tensor, y: Tensor", "x > 0 ? x + y : y", "x: x > 0 ? grad : 0; y: grad") == (
        ["x > 0"], {"x": "where(condition_0, grad, acc_t(0))", "y": None})
    # More conditions than bits are worth: the tensors.
    many = " + ".join(f"(x > {k}) * grad" for k in range(5))
    assert saved("x: Tensor", "x", f"x: {many}") == ([], {"x": None})
    assert saved("x: Tensor, alpha: float = 2.0", "alpha * x", "x: alpha * grad") == ([], {"x": None})
    # An argument that would share a name with the conditions: the tensors.
    assert saved("x: Tensor, condition_0: float = 1.0", "x > 0 ? x : 0", "x: x > 0 ? grad : 0") == (
        [], {"x": None})


@pytest.mark.parametrize(
    ("formula", "names", "locals_", "value"),
    [
        # The tanh GELU's gradient as users write it: one tanh, computed once.
        ("grad * (0.5 * (1 + tanh(0.79 * x)) + 0.5 * x * (1 - tanh(0.79 * x) * tanh(0.79 * x)))",
         {"x", "grad"}, [["tanh_0", "tanh(acc_t(0.79) * x)"]],
         "grad * (acc_t(0.5) * (acc_t(1) + tanh_0) + acc_t(0.5) * x * (acc_t(1) - tanh_0 * tanh_0))"),
        # Nested: the inner call once, then the outer one over it.
        ("exp(exp(x)) * exp(exp(x)) + tanh(exp(x))", {"x"},
         [["exp_0", "exp(x)"], ["exp_1", "exp(exp_0)"]], "exp_1 * exp_1 + tanh(exp_0)"),
        # A local is never named like an argument.
        ("exp(x) + exp(x) + exp_0", {"x", "exp_0"}, [["exp_1", "exp(x)"]], "exp_1 + exp_1 + exp_0"),
        # Calls of other arguments, cheap functions, a call made once: as written.
        ("exp(x) + exp(y) + sqrt(x) * sqrt(x) + expm1(x)", {"x", "y"}, [],
         "exp(x) + exp(y) + sqrt(x) * sqrt(x) + expm1(x)"),
        # In both branches of a condition: computed once, before it.
        ("x > 0 ? log1p(x) : -log1p(x)", {"x"}, [["log1p_0", "log1p(x)"]],
         "where(x > acc_t(0), log1p_0, -log1p_0)"),
    ],
)
def test_costly_calls_made_more_than_once_are_made_once(formula, names, locals_, value):
    assert parse(formula, names).body == {"locals": locals_, "value": value}


def test_shared_calls_keep_a_formula_that_makes_each_call_once():
    assert shared_calls("x * exp(x)", {"x"}) == {"locals": [], "value": "x * exp(x)"}


def test_integer_division_is_refused_where_cpp_and_python_disagree():
    with pytest.raises(SpecError, match="'n / m' divides two integers, which C.. truncates"):
        cpp_formula("forward", "x * (n / m)", {"x": FLOAT, "n": INT, "m": INT})


def test_int_and_bool_scalars_with_their_defaults():
    params = parse_signature("x: Tensor, n: int = 0x10, flip: bool = True, a: float = 1")
    assert [(p["type"], p["default"]) for p in params] == [("Tensor", None), ("int", 16), ("bool", True),
                                                           ("float", 1.0)]
    for signature, says in [("x: Tensor, n: int = 1.5", "not an integer"),
                            ("x: Tensor, n: int = True", "not an integer"),
                            ("x: Tensor, n: int = 18446744073709551616", "not a 64-bit integer"),
                            ("x: Tensor, f: bool = 1", "not True or False"),
                            ("x: Tensor, s: str", "needs a type: Tensor, float, int or bool")]:
        with pytest.raises(SpecError, match=says):
            parse_signature(signature)
