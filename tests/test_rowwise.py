"""The rowwise kind: its answers, its refusals, and generated tests that catch wrong kernels.

The presets (rms_norm, layer_norm, softmax) are built and tested as reference_ops; here,
ops of one's own formulas.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import torch

from opgen.answers import collect_op, options_of
from opgen.cli import main
from opgen.kinds import rowwise
from opgen.spec import SpecError

from .conftest import compiler_warnings, failed_tests, pip_install, run_project_tests

L2 = {"kind": "rowwise", "signature": "x: Tensor", "reductions": "ss = sum(x * x)",
      "forward": "x / sqrt(ss)", "reference": "x / x.norm(dim=-1, keepdim=True)",
      "grad_reductions": "gy = sum(grad * y)", "gradients": "x: (grad - y * gy) / sqrt(ss)"}


@pytest.mark.parametrize("preset", sorted(rowwise.PRESETS))
def test_every_preset_needs_no_formula_and_reads_back_the_same(preset):
    record = collect_op("op", {"kind": "rowwise", "preset": preset})
    assert record["reductions"] and record["gradients"]
    # What the answers file records gives the same op back (opgen regen, add, update).
    assert collect_op("op", options_of(record)) == record


def test_reduction_stages_follow_what_each_reads():
    # The CUDA kernels reduce a stage's reductions in one round: a reduction comes after
    # those it reads, and one reading y (the output) after all of the forward's.
    record = collect_op("op", {"kind": "rowwise", "preset": "layernorm"})
    assert [(r["name"], r["stage"]) for r in record["reductions"]] == [("mu", 0), ("var", 1)]
    assert [(r["name"], r["stage"]) for r in record["grad_reductions"]] == [("g1", 0), ("g2", 1)]
    # A reduction of the backward that reads y comes after the forward's, where the backward
    # computes them again; softmax's backward reads y saved by the forward, and starts at 0.
    record = collect_op("op", {"kind": "rowwise", **L2})
    assert [(r["name"], r["stage"]) for r in record["grad_reductions"]] == [("gy", 1)]
    record = collect_op("op", {"kind": "rowwise", "preset": "softmax"})
    assert [(r["name"], r["stage"]) for r in record["grad_reductions"]] == [("gy", 0)]


def test_a_backward_that_reads_the_rows_reads_the_forwards_saved_reductions():
    # LayerNorm's backward reads x, mu and var: the forward saves mu and var (one float a
    # row each) and the backward's own reductions then start at stage 0, in one round
    # (saved_stage); "stage" stays where they follow the forward's, for the stable ABI,
    # whose backward computes mu and var again.
    record = collect_op("op", {"kind": "rowwise", "preset": "layernorm"})
    assert [(r["name"], r["stage"], r["saved_stage"]) for r in record["grad_reductions"]] == [
        ("g1", 0, 0), ("g2", 1, 0)]
    record = collect_op("op", {"kind": "rowwise", **L2})
    assert [(r["name"], r["stage"], r["saved_stage"]) for r in record["grad_reductions"]] == [("gy", 1, 0)]
    # From the output, nothing of the forward's is read: nothing saved.
    record = collect_op("op", {"kind": "rowwise", "preset": "softmax"})
    assert "saved_stage" not in record["grad_reductions"][0]


def test_the_saved_reductions_render_for_the_torch_abi_only(tmp_path):
    for name, abi in (("my_norm", "torch"), ("stable_norm", "stable")):
        with pytest.raises(SystemExit) as exit_:
            main(["new", name, "-o", str(tmp_path), "--defaults", "--kind", "rowwise", "--preset",
                  "layernorm", "--abi", abi])
        assert exit_.value.code == 0
    csrc = tmp_path / "my_norm" / "csrc"
    assert '"my_norm_forward_saving_reductions(' in (csrc / "library.cpp").read_text()
    assert "kernels::forward_saving_reductions(" in (csrc / "my_norm_autograd.cpp").read_text()
    assert "kStatIn = 2" in (csrc / "my_norm_kernel.cu").read_text()
    # The stable ABI's autograd is Python's, around the op as called: its backward reduces again.
    stable = tmp_path / "stable_norm" / "csrc"
    assert "forward_saving_reductions" not in (stable / "library.cpp").read_text()
    assert "kStatIn = 0" in (stable / "stable_norm_kernel.cu").read_text()


@pytest.mark.parametrize(("answers", "from_output"), [
    ({"preset": "softmax"}, True),
    ({"preset": "log_softmax"}, True),
    ({"preset": "rmsnorm"}, False),
    ({"preset": "layernorm"}, False),
    # Reads a forward reduction (ss): the backward computes the forward again.
    (L2, False),
    # Reads y and a scalar: from the output.
    ({"signature": "x: Tensor, t: float = 2.0", "reductions": "m = max(x); z = sum(exp((x - m) / t))",
      "forward": "exp((x - m) / t) / z", "reference": "torch.softmax(x / t, -1)",
      "grad_reductions": "gy = sum(grad * y)", "gradients": "x: y * (grad - gy) / t"}, True),
    # Reads y and a column (softmax(x) + b): y - b from a stored bfloat16 y loses the softmax
    # (its tests failed so), so the backward computes y again, in float.
    ({"signature": "x: Tensor, b: Tensor", "columns": "b", "reductions": "m = max(x); z = sum(exp(x - m))",
      "forward": "exp(x - m) / z + b", "reference": "torch.softmax(x, -1) + b",
      "grad_reductions": "gs = sum(grad * (y - b))",
      "gradients": "x: (y - b) * (grad - gs); b: grad"}, False),
])
def test_a_backward_that_reads_only_the_output_saves_the_output(answers, from_output):
    record = collect_op("op", {"kind": "rowwise", **answers})
    assert record["backward_from_output"] is from_output


def test_the_cpu_vector_loops_keep_a_reductions_terms_that_an_output_computes_again():
    # Softmax's output computes exp(x - m) again, z's term: the CPU's vector loops keep the
    # terms from z's pass (an exp is most of the CPU's time) and the output reads them back.
    record = collect_op("op", {"kind": "rowwise", "preset": "softmax"})
    assert record["kept_term"] == {"reduction": "z", "parameter": "z_term", "bodies": {
        "forward": {"locals": [], "value": "z_term * (divide(acc_t(1), z))"}}}
    # A temperature, the term read twice (computed once), and a parameter name that an
    # argument already has.
    record = collect_op("op", {"kind": "rowwise", "signature": "x: Tensor, z_term: float = 2.0",
                               "reductions": "m = max(x); z = sum(exp((x - m) / z_term))",
                               "forward": "exp((x - m) / z_term) / z + exp((x - m) / z_term)",
                               "reference": "torch.softmax(x / z_term, -1)", "backward": False})
    assert record["kept_term"]["parameter"] == "z_term_1"
    assert record["kept_term"]["bodies"]["forward"]["value"] == "divide(z_term_1, z) + z_term_1"
    # Of several outputs, those that compute the term; none where no output computes one
    # (log-softmax's exp is the sum's alone), nor where the term is no costly call.
    record = collect_op("op", {"kind": "rowwise", "signature": "x: Tensor", "reductions": "m = max(x); "
                               "z = sum(exp(x - m))", "forward": "p: exp(x - m) / z; s: x - m",
                               "reference": "(torch.softmax(x, -1), x - x.amax(-1, keepdim=True))",
                               "backward": False})
    assert list(record["kept_term"]["bodies"]) == ["forward_p"]
    assert "kept_term" not in collect_op("op", {"kind": "rowwise", "preset": "log_softmax"})
    assert "kept_term" not in collect_op("op", {"kind": "rowwise", **L2, "forward": "x * x / ss"})


@pytest.mark.parametrize(("change", "says"), [
    ({"reductions": "ss = total(x * x)"}, "needs the form 'name = op(expression)' with op one of sum"),
    ({"reductions": "ss = sum(x) + sum(x)"}, "needs the form 'name = op(expression)'"),
    ({"reductions": "SS = sum(x * x)"}, "reduction 'SS' must be lower snake case"),
    ({"reductions": "x = sum(x * x)"}, "'x' is already an argument"),
    # A reduction's name is a C++ parameter of the formulas that read it: 'acc_t int' failed in
    # the compilers, and 'exp' hid the function.
    ({"reductions": "int = sum(x * x)", "forward": "x / sqrt(int)"},
     "reduction 'int' is a Python or C++ keyword or a name the formulas use"),
    ({"reductions": "exp = sum(x * x)", "forward": "x / sqrt(exp)"}, "reduction 'exp' is a Python or C++"),
    ({"reductions": "acc_t = sum(x * x)", "forward": "x / sqrt(acc_t)"}, "reduction 'acc_t' is a Python"),
    ({"grad_reductions": "new = sum(grad * y)", "gradients": "x: (grad - y * new) / sqrt(ss)"},
     "--grad-reductions: reduction 'new' is a Python or C++ keyword"),
    ({"reductions": "ss = sum(x * q)"}, "uses 'q'"),
    ({"reductions": "a = sum(b); b = sum(x)"}, "uses 'b'"),  # a later reduction is not known yet
    ({"reductions": ""}, "--reductions is empty"),
    ({"forward": "x / sqrt(tt)"}, "uses 'tt'"),
    ({"signature": "x: Tensor, n: float"}, "argument 'n' would hide n"),
    ({"signature": "y: Tensor", "reference": "y"}, "argument 'y' would hide y"),
    # The backward op's argument of the forward's saved reductions.
    ({"signature": "reductions: Tensor", "reductions": "ss = sum(reductions * reductions)",
      "forward": "reductions / sqrt(ss)", "reference": "reductions / reductions.norm(dim=-1, keepdim=True)",
      "gradients": "reductions: (grad - y * gy) / sqrt(ss)"},
     "'reductions' is the name of the forward's saved reductions in the backward op"),
    ({"columns": "x"}, "names every tensor"),
    ({"columns": "w"}, "'w' is not a tensor argument"),
    ({"gradients": "x: grad * z"}, "uses 'z'"),
    ({"gradients": "w: grad"}, "'w' is not a tensor argument"),
    # A gradient reads grad itself or a backward reduction that reads it.
    ({"gradients": "x: -y * gy / sqrt(ss)", "grad_reductions": "gy = sum(y * y)"},
     "'x': '-y * gy / sqrt(ss)' does not read grad"),
    ({"dtypes": ["int32"]}, "floating dtypes"),
    # --out-dtype gives the rows' outputs a dtype of their own, without gradients.
    ({"out_dtype": "int8"}, "--out-dtype int8: backward kernels need floating inputs and an output of the "
                            "same dtype; pass --no-backward"),
    ({"preset": "groupnorm"}, "is not one of rmsnorm, layernorm, softmax, add_rmsnorm, log_softmax"),
    # Several outputs: each named, once, by a name nothing else has.
    ({"forward": "x / sqrt(ss); x * 2"}, "several outputs need a name each"),
    ({"forward": "y: x / sqrt(ss); x * 2"}, "'x * 2' needs the form 'name: expression'"),
    ({"forward": "y: x / sqrt(ss)"}, "one output takes no name"),
    ({"forward": "y: x / sqrt(ss); y: x * 2"}, "the output name 'y'"),
    ({"forward": "ss: x / sqrt(ss); h: x"}, "the output name 'ss'"),
    ({"forward": "grad: x / sqrt(ss); h: x"}, "the output name 'grad'"),
    ({"forward": "y: x / sqrt(ss); int: x"}, "the output name 'int' is a Python or C++ keyword"),
    ({"forward": "y: x / sqrt(ss); exp: x"}, "the output name 'exp' is a Python or C++ keyword or a name"),
    ({"forward": "lambda: x / sqrt(ss); h: x"}, "the output name 'lambda' is a Python"),
    ({"signature": "x: Tensor, grad_h: Tensor", "forward": "y: x / sqrt(ss); h: x",
      "reference": "x, x"}, "the output name 'h' (or grad_h"),
    ({"forward": "y: x / sqrt(ss); h: x * q"}, "--forward output 'h' 'x * q': it uses 'q'"),
    # With several outputs the backward reads grad_<output>: grad alone is no name.
    ({"forward": "y: x / sqrt(ss); h: x", "reference": "(x / x.norm(dim=-1, keepdim=True), x)"},
     "uses 'grad'"),
    # An output that reads no tensor is one value a row: beside an output of the rows' shape,
    # and without a gradient for the backward to read.
    ({"forward": "sqrt(ss)"}, "--forward 'sqrt(ss)' reads no tensor, so it is one value a row"),
    ({"forward": "norm: sqrt(ss); twice: 2 * sqrt(ss)"}, "every output reads no tensor"),
    ({"forward": "y: x / sqrt(ss); norm: sqrt(ss)", "grad_reductions": "gy = sum(grad_y * y)",
      "gradients": "x: (grad_y - y * gy) / sqrt(ss) + grad_norm * y"},
     "--gradients 'x: (grad_y - y * gy) / sqrt(ss) + grad_norm * y' reads 'grad_norm', but a per-row output is not"),
    ({"forward": "y: x / sqrt(ss); norm: sqrt(ss)", "grad_reductions": "gy = sum(grad_y * y * norm)",
      "gradients": "x: (grad_y - y * gy) / sqrt(ss)"}, "--grad-reductions 'gy = sum(grad_y * y * norm)' reads 'norm'"),
])
def test_answers_that_cannot_be_right_are_refused_naming_them(change, says):
    with pytest.raises(SpecError) as error:
        collect_op("op", {**L2, **change})
    assert says in str(error.value)
    assert "\n" not in str(error.value)


def test_several_outputs_are_named_and_their_backward_reads_each_gradient():
    record = collect_op("op", {"kind": "rowwise", "preset": "add_rmsnorm"})
    assert [(o["name"], o["expression"]) for o in record["outputs"]] == [
        ("y", "(x + residual) * rsqrt(ms + eps) * weight"), ("h", "x + residual")]
    # The backward reads the rows and the saved reductions (never only the output), and its
    # reduction of h comes after the forward's: h is an output.
    assert record["backward_from_output"] is False
    assert [(r["name"], r["stage"], r["saved_stage"]) for r in record["grad_reductions"]] == [("gh", 1, 0)]
    # Its formulas read h and no row tensor: the backward reads the saved h in place of x and
    # residual; and residual's gradient is x's, computed once.
    assert record["backward_outputs"] == ["h"]
    assert [g.get("same_as") for g in record["gradients"]] == [None, "x", None]
    # Formulas that read x read the rows; another formula for residual is its own.
    gradients = rowwise.PRESETS["add_rmsnorm"]["gradients"].replace("h * (gh", "(x + residual) * (gh", 1)
    record = collect_op("op", {"kind": "rowwise", **rowwise.PRESETS["add_rmsnorm"], "gradients": gradients})
    assert "backward_outputs" not in record
    assert [g.get("same_as") for g in record["gradients"]] == [None, None, None]
    # A ':' of C++'s '?:' names no output.
    record = collect_op("op", {**L2, "forward": "x > 0 ? x / sqrt(ss) : x"})
    assert "outputs" not in record and record["forward_cpp"]


def test_an_output_that_reads_no_tensor_is_one_value_a_row_without_a_gradient():
    answers = {**L2, "forward": "y: x / sqrt(ss); norm: sqrt(ss); rms: sqrt(ss / n)",
               "reference": "(x / x.norm(dim=-1, keepdim=True), x.norm(dim=-1), x.norm(dim=-1) / x.shape[-1] ** 0.5)",
               "grad_reductions": "gy = sum(grad_y * y)", "gradients": "x: (grad_y - y * gy) / sqrt(ss)"}
    record = collect_op("op", answers)
    assert [(o["name"], o.get("per_row", False)) for o in record["outputs"]] == [
        ("y", False), ("norm", True), ("rms", True)]
    # The backward reads y (not x) and the saved reductions; one gradient comes in, y's.
    assert record["backward_outputs"] == ["y"]
    assert collect_op("op", options_of(record)) == record
    # A reduction's op in the backward is no output of that name.
    collect_op("op", {**answers, "forward": "y: x / sqrt(ss); sum: sqrt(ss)",
                      "reference": "(x / x.norm(dim=-1, keepdim=True), x.norm(dim=-1))"})


def test_own_formulas_need_a_reference_and_gradients():
    given = {k: v for k, v in L2.items() if k not in ("reference", "gradients")}
    with pytest.raises(SpecError, match="--reference is needed with your own formulas"):
        collect_op("op", given)
    with pytest.raises(SpecError, match="--gradients is needed with your own formulas"):
        collect_op("op", {**given, "reference": L2["reference"]})
    assert collect_op("op", {**given, "reference": L2["reference"], "backward": False})["gradients"] == []


def test_a_presets_formulas_never_meet_formulas_of_ones_own():
    # Each default belongs to the answers before it: a reduction of one's own with the
    # default signature does not get rms_norm's forward, nor a forward of one's own its
    # gradients; a preset's formulas are for its own signature.
    default = {"kind": "rowwise"}
    with pytest.raises(SpecError, match="--forward is needed with --reductions"):
        collect_op("op", {**default, "reductions": "ms = sum(x * x)"})
    with pytest.raises(SpecError, match="--gradients is needed with your own formulas"):
        collect_op("op", {**default, "preset": "rmsnorm", "forward": "x * rsqrt(ms + eps)",
                          "reference": "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)"})
    with pytest.raises(SpecError, match="differs from --preset softmax's \\('x: Tensor'\\)"):
        collect_op("op", {**default, "preset": "softmax", "signature": "x: Tensor, t: float"})
    # Another spelling of the reference keeps them.
    record = collect_op("op", {**default, "preset": "softmax", "reference": "torch.softmax(x, dim=-1)"})
    assert record["gradients"] == collect_op("op", {**default, "preset": "softmax"})["gradients"]


def test_options_of_other_kinds_are_refused_naming_the_kind(tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["new", "op", "-o", str(tmp_path), "--defaults", "--kind", "rowwise", "--channels", "r"])
    assert exit_.value.code == 2
    with pytest.raises(SystemExit):
        main(["new", "op", "-o", str(tmp_path), "--defaults", "--preset", "softmax"])
    assert not list(tmp_path.iterdir())


def test_inline_is_refused_for_rowwise_ops(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["new", "op", "-o", str(tmp_path), "--defaults", "--kind", "rowwise", "--inline"])
    assert exit_.value.code == 2
    assert "--inline is not available for rowwise ops yet" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def add_rmsnorm_answers(**changes: str) -> list[str]:
    """opgen add's options for the add_rmsnorm preset's formulas, some of them changed."""
    answers = {**rowwise.PRESETS["add_rmsnorm"], **changes}
    return [option for key, value in answers.items() for option in (f"--{key.replace('_', '-')}", value)]


def assert_caught_by_values(result) -> None:
    """The generated tests failed, and on values only: no test of theirs broke on its own
    (a TypeError in the tests' helpers would fail the same tests as a wrong kernel)."""
    assert result.returncode == 1
    assert "Tensor-likes are not close" in result.stdout
    assert not re.search(r"^E\s+(?!AssertionError)\w+Error", result.stdout, re.M), result.stdout[-3000:]


def test_wrong_rowwise_kernels_fail_the_generated_tests(python, projects):
    # Ops in one project, one build: a forward whose reduction is off by 1e-4, a backward
    # whose weight gradient is off by 1e-3, a backward from the saved output off by 1e-3,
    # and right formulas whose forward saves a reduction off by 1e-3 for the backward
    # (csrc/wrong_saved.cpp edited); an int8 quantizer whose q is 5% too large; an L2
    # normalization whose per-row output (the norm) is off by 1e-4; a fused add + RMSNorm whose second output is off by
    # 1e-4 (its backward reads x and residual, and passes), and one whose gradient forgets
    # the second output's. Each is caught by its own tests; the preset itself passes (its
    # backward reads the saved sum h and computes one gradient for x and residual). The
    # wrong ops build for float32 and float64 only (their errors show there; the half types
    # are the preset's and the reference ops'), which keeps the build short.
    project = projects / "rows"
    floats = ["--dtypes", "float32,float64"]
    # The preset's backward written over x + residual instead of h: it reads the rows.
    from_rows = {key: re.sub(r"\bh\b", "(x + residual)", rowwise.PRESETS["add_rmsnorm"][key])
                 for key in ("grad_reductions", "gradients")}
    for command in (
        ["new", "rows", "-o", str(projects), "--op", "wrong_forward", "--defaults", "--kind", "rowwise",
         "--signature", "x: Tensor", "--reductions", "ss = sum(x * x)",
         "--forward", "x / sqrt(ss * acc_t(1.0001))", "--reference", "x / x.norm(dim=-1, keepdim=True)",
         "--grad-reductions", "gy = sum(grad * y)", "--gradients", "x: (grad - y * gy) / sqrt(ss)", *floats],
        ["add", "wrong_gradient", "-p", str(project), "--defaults", "--kind", "rowwise",
         "--signature", "x: Tensor, weight: Tensor, eps: float = 1e-06", "--columns", "weight",
         "--reductions", "ms = mean(x * x)", "--forward", "x / sqrt(ms + eps) * weight",
         "--reference", "torch.nn.functional.rms_norm(x, [x.shape[-1]], weight, eps)",
         "--grad-reductions", "gx = mean(grad * weight * x)",
         "--gradients", "x: (grad * weight - x * gx / (ms + eps)) / sqrt(ms + eps); "
                        "weight: grad * x / sqrt(ms + eps) * acc_t(1.001)", *floats],
        # A softmax whose backward, which reads the saved output, is off by 1e-3.
        ["add", "wrong_from_output", "-p", str(project), "--defaults", "--kind", "rowwise",
         "--signature", "x: Tensor", "--reductions", "m = max(x); z = sum(exp(x - m))",
         "--forward", "exp(x - m) / z", "--reference", "torch.softmax(x, -1)",
         "--grad-reductions", "gy = sum(grad * y)", "--gradients", "x: y * (grad - gy) * acc_t(1.001)",
         *floats],
        ["add", "wrong_saved", "-p", str(project), "--defaults", "--kind", "rowwise", "--preset", "rmsnorm", *floats],
        # Right: per-row absmax quantization to int8, the scale returned one value a row. A
        # value within float32's error of a rounding step rounds to either side (one element
        # in about 10^6 here), and the tests accept both. Then the same with q 5% too large.
        # The reference converts q to int8 itself, as one would write it (the tests compared
        # it with the output in float64 and failed: "Double did not match Char").
        *(["add", name, "-p", str(project), "--defaults", "--kind", "rowwise",
           "--signature", "x: Tensor", "--reductions", "a = max(abs(x))",
           "--forward", f"q: clamp(rint(x * 127 / max(a, 1e-12){wrong}), -127, 127); scale: max(a, 1e-12) / 127",
           "--reference", "(torch.round(x * 127 / x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12))"
                          ".to(torch.int8), x.abs().amax(dim=-1).clamp(min=1e-12) / 127)",
           "--out-dtype", "int8", "--no-backward", *floats]
          for name, wrong in (("absmax_quant", ""), ("wrong_quant", " * acc_t(1.05)"))),
        # An L2 normalization that returns each row's norm, off by 1e-4; its backward (from
        # the saved y and reductions) is right.
        ["add", "wrong_per_row", "-p", str(project), "--defaults", "--kind", "rowwise",
         "--signature", "x: Tensor", "--reductions", "ss = sum(x * x)",
         "--forward", "y: x / sqrt(ss); norm: sqrt(ss) * acc_t(1.0001)",
         "--reference", "(x / x.norm(dim=-1, keepdim=True), x.norm(dim=-1))",
         "--grad-reductions", "gy = sum(grad_y * y)", "--gradients", "x: (grad_y - y * gy) / sqrt(ss)", *floats],
        # Right: each row scaled to [0, 1] by its range. A row of one element is 0 / 0, NaN in
        # the reference too: a match (the tests broke on it: "atol must be ... but got nan").
        ["add", "min_max", "-p", str(project), "--defaults", "--kind", "rowwise", "--signature", "x: Tensor",
         "--reductions", "lo = min(x); hi = max(x)", "--forward", "(x - lo) / (hi - lo)",
         "--reference", "(x - x.amin(-1, keepdim=True)) / "
                        "(x.amax(-1, keepdim=True) - x.amin(-1, keepdim=True))",
         "--no-backward", *floats],
        ["add", "add_norm", "-p", str(project), "--defaults", "--kind", "rowwise", "--preset", "add_rmsnorm"],
        ["add", "wrong_second_output", "-p", str(project), "--defaults", "--kind", "rowwise", *floats,
         *add_rmsnorm_answers(forward="y: (x + residual) * rsqrt(ms + eps) * weight; "
                                      "h: (x + residual) * acc_t(1.0001)", **from_rows)],
        ["add", "wrong_second_grad", "-p", str(project), "--defaults", "--kind", "rowwise", *floats,
         *add_rmsnorm_answers(gradients="x: (grad_y * weight - h * (gh / (ms + eps))) * rsqrt(ms + eps); "
                                        "residual: (grad_y * weight - h * (gh / (ms + eps))) * rsqrt(ms + eps) "
                                        "+ grad_h; weight: grad_y * h * rsqrt(ms + eps)")],
        # Right: a softmax and the shifted logits; the vector loops keep the exps of z's pass
        # for the first (kept_term) and not for the second, which reads none.
        ["add", "softmax_shift", "-p", str(project), "--defaults", "--kind", "rowwise",
         "--signature", "x: Tensor", "--reductions", "m = max(x); z = sum(exp(x - m))",
         "--forward", "p: exp(x - m) / z; s: x - m",
         "--reference", "(torch.softmax(x, -1), x - x.amax(-1, keepdim=True))", "--no-backward",
         "--dtypes", "float32"],
        # A softmax without the row's max: right on normal rows, NaN (inf / inf) on logits of 100.
        ["add", "naive_softmax", "-p", str(project), "--defaults", "--kind", "rowwise",
         "--signature", "x: Tensor", "--reductions", "z = sum(exp(x))", "--forward", "exp(x) / z",
         "--reference", "torch.softmax(x, -1)", "--no-backward", "--dtypes", "float32"],
    ):
        try:
            main(command)
        except SystemExit as exit_:
            assert exit_.code in (0, None), command
    # Both CPU loops save the reductions: the scalar ones of the glue, and the vector ones that
    # run here (AVX2).
    for loops in ("wrong_saved.cpp", "wrong_saved_cpu_loops.h"):
        path = project / "csrc" / loops
        right = "saved[0 * rows + r] = red.ms;"
        assert path.read_text().count(right) == 1, loops
        path.write_text(path.read_text().replace(right, "saved[0 * rows + r] = red.ms * acc_t(1.001);"))
    # The formulas are the CPU kernels' too, which run here (the CUDA ones compile in the
    # reference ops' tests).
    log = pip_install(python, project, USE_CUDA="0")
    # Without a warning: no local left unused by an op without scalars, row gradients or columns.
    assert not compiler_warnings(log)
    # The tests that compare values (not torch.compile's, the slowest, which compare none).
    forward = run_project_tests(python, project, "-k", "not compile", "tests/test_wrong_forward.py")
    assert_caught_by_values(forward)
    assert {"test_matches_float64_reference", "test_row_lengths_around_the_kernels_sizes",
            "test_non_contiguous_inputs", "test_long_rows"} <= failed_tests(forward.stdout)
    gradient = run_project_tests(python, project, "-k", "not compile", "tests/test_wrong_gradient.py")
    assert_caught_by_values(gradient)
    # (gradcheck's own tolerance, rtol 1e-3, lets an error of 1e-3 through; these do not)
    assert {"test_gradients_match_float64_reference", "test_gradients_of_long_rows",
            "test_backward_with_a_non_contiguous_gradient"} <= failed_tests(gradient.stdout)
    assert "test_matches_float64_reference" not in failed_tests(gradient.stdout)
    from_output = run_project_tests(python, project, "-k", "not compile", "tests/test_wrong_from_output.py")
    assert_caught_by_values(from_output)
    assert {"test_gradients_match_float64_reference", "test_gradients_of_long_rows",
            "test_backward_with_a_non_contiguous_gradient"} <= failed_tests(from_output.stdout)
    assert "test_matches_float64_reference" not in failed_tests(from_output.stdout)
    naive = run_project_tests(python, project, "-k", "not compile", "tests/test_naive_softmax.py")
    assert failed_tests(naive.stdout) == {"test_large_rows_match_float64_reference"}, naive.stdout[-3000:]
    quant = run_project_tests(python, project, "-k", "not compile", "tests/test_absmax_quant.py")
    assert quant.returncode == 0, quant.stdout[-3000:]
    assert subprocess.run([str(python), "-c", "import torch\nfrom rows import absmax_quant\n"
                           "q, scale = absmax_quant(torch.randn(3, 5))\nassert q.dtype == torch.int8, q.dtype\n"
                           "assert scale.dtype == torch.float32 and scale.shape == (3,)"], cwd=project).returncode == 0
    wrong_quant = run_project_tests(python, project, "-k", "not compile", "tests/test_wrong_quant.py")
    assert_caught_by_values(wrong_quant)
    assert {"test_matches_float64_reference", "test_long_rows", "test_non_contiguous_inputs"} <= failed_tests(
        wrong_quant.stdout)
    per_row = run_project_tests(python, project, "-k", "not compile", "tests/test_wrong_per_row.py")
    assert_caught_by_values(per_row)
    assert {"test_matches_float64_reference", "test_long_rows", "test_non_contiguous_inputs"} <= failed_tests(
        per_row.stdout)
    assert not {"test_gradients_match_float64_reference", "test_gradients_of_long_rows", "test_gradcheck",
                "test_opcheck", "test_opcheck_backward_op"} & failed_tests(per_row.stdout)
    # Its one differentiable output is y: the backward gets no zeros made for the norm's
    # gradient (on CUDA two fills a call; autograd made them before set_materialize_grads).
    profiled = subprocess.run([str(python), "-c", (
        "import torch\nfrom rows import wrong_per_row\n"
        "x = torch.randn(4, 33, requires_grad=True)\ny, norm = wrong_per_row(x)\ngrad = torch.randn_like(y)\n"
        "with torch.profiler.profile() as prof:\n    y.backward(grad)\n"
        "print(sorted({e.name for e in prof.events()}))\nassert x.grad is not None and norm.grad_fn is None\n")],
        cwd=project, capture_output=True, text=True)
    assert profiled.returncode == 0, profiled.stderr[-3000:]
    assert "wrong_per_row_backward" in profiled.stdout and "aten::zeros" not in profiled.stdout, profiled.stdout
    saved = run_project_tests(python, project, "-k", "not compile", "tests/test_wrong_saved.py")
    assert_caught_by_values(saved)
    assert {"test_gradients_match_float64_reference", "test_gradients_of_long_rows",
            "test_backward_with_a_non_contiguous_gradient"} <= failed_tests(saved.stdout)
    assert "test_matches_float64_reference" not in failed_tests(saved.stdout)
    shift = run_project_tests(python, project, "-k", "not compile", "tests/test_softmax_shift.py")
    assert shift.returncode == 0, shift.stdout[-3000:]
    loops = (project / "csrc" / "softmax_shift_cpu_loops.h").read_text()
    assert "forward_p_given_term<L>(z_term" in loops and "forward_s<L>(" in loops
    min_max = run_project_tests(python, project, "-k", "not compile", "tests/test_min_max.py")
    assert min_max.returncode == 0, min_max.stdout[-3000:]
    fused = run_project_tests(python, project, "-k", "not compile", "tests/test_add_norm.py")
    assert fused.returncode == 0, fused.stdout[-3000:]
    second_output = run_project_tests(python, project, "-k", "not compile", "tests/test_wrong_second_output.py")
    assert_caught_by_values(second_output)
    assert {"test_matches_float64_reference", "test_long_rows", "test_non_contiguous_inputs"} <= failed_tests(
        second_output.stdout)
    # Its backward, which reads x and residual, is right.
    assert not {"test_gradients_match_float64_reference", "test_gradients_of_long_rows",
                "test_backward_with_a_non_contiguous_gradient"} & failed_tests(second_output.stdout)
    second_grad = run_project_tests(python, project, "-k", "not compile", "tests/test_wrong_second_grad.py")
    assert_caught_by_values(second_grad)
    assert {"test_gradients_match_float64_reference", "test_gradients_of_long_rows",
            "test_backward_with_a_non_contiguous_gradient"} <= failed_tests(second_grad.stdout)
    assert "test_matches_float64_reference" not in failed_tests(second_grad.stdout)
    # The forwards and backwards run on the CPU's vectors (the AVX2 loops, as
    # ATEN_CPU_CAPABILITY=avx2 picks them: SLEEF's exp of 4 doubles, as eager's softmax calls it;
    # floats' exp is csrc/cpu_lanes.h's own, inline), and they
    # give what the scalar loops give (ATEN_CPU_CAPABILITY=default turns the vectors down):
    # sums, maxima, terms kept for an output, several outputs, per-row ones, int8 ones, tails
    # of rows; gradients of rows and of columns, from the rows and saved reductions, from the
    # output, from saved outputs.
    [library] = (project / "rows").glob("_C*.so")
    assert b"Sleef_expd4_u10" in library.read_bytes()
    for op in ("wrong_saved", "wrong_from_output", "add_norm"):
        assert f"{op}13backward_rows".encode() in library.read_bytes(), op
    assert b"add_norm16backward_columns" in library.read_bytes()
    # The same inputs for both (torch.randn's values differ between the two capabilities).
    torch.manual_seed(0)
    torch.save([torch.randn(37, 1027), torch.randn(37, 1027), torch.randn(1027), torch.randn(37, 1027)],
               project / "inputs.pt")
    outputs = {}
    for capability in ("avx2", "default"):
        script = ("import sys, torch, rows\n"
                  "x, r, w, g = torch.load('inputs.pt')\n"
                  "outs = [rows.wrong_from_output(x), *rows.softmax_shift(x), *rows.absmax_quant(x),"
                  " *rows.wrong_per_row(x),"
                  " rows.min_max(x), *rows.add_norm(x, r, w), rows.wrong_saved(x, w),"
                  " rows.wrong_forward(x)]\n"
                  "x, r, w = (t.requires_grad_() for t in (x, r, w))\n"
                  "grads = []\n"
                  "for y, inputs in ((rows.wrong_from_output(x), [x]), (rows.wrong_per_row(x)[0], [x]),"
                  " (rows.add_norm(x, r, w)[0], [x, r, w]), (rows.wrong_saved(x, w), [x, w]),"
                  " (rows.wrong_gradient(x, w), [x, w]), (rows.wrong_forward(x), [x])):\n"
                  "    grads += torch.autograd.grad(y, inputs, g)\n"
                  "torch.save([outs, grads], sys.argv[1])\n")
        saved_at = project / f"outputs_{capability}.pt"
        ran = subprocess.run([str(python), "-c", script, str(saved_at)], cwd=project, capture_output=True,
                             text=True, env={**os.environ, "ATEN_CPU_CAPABILITY": capability})
        assert ran.returncode == 0, ran.stderr[-3000:]
        outputs[capability] = torch.load(saved_at)
    (outs_vector, grads_vector), (outs_scalar, grads_scalar) = outputs["avx2"], outputs["default"]
    for vector, scalar in zip(outs_vector, outs_scalar, strict=True):
        assert vector.dtype == scalar.dtype and vector.shape == scalar.shape
        if vector.dtype == torch.int8:  # a value on a rounding step may round either way
            assert (vector.int() - scalar.int()).abs().max() <= 1 and (vector != scalar).float().mean() < 1e-4
        else:
            torch.testing.assert_close(vector, scalar, rtol=1e-6, atol=1e-6, equal_nan=True)
    # A column's gradient sums 37 rows' terms, each computed to a float's rounding.
    for vector, scalar in zip(grads_vector, grads_scalar, strict=True):
        torch.testing.assert_close(vector, scalar, rtol=1e-5, atol=1e-5)
