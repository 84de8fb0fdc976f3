"""End to end: render projects with opgen, build them with pip, run their own tests.

Where nvcc exists (as on CI) the CUDA kernels are compiled by nvcc and linked too, so a
template change that breaks the CUDA build fails here even without a GPU. Each project is
installed into one virtual environment that sees the machine's torch.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from opgen.answers import collect_op
from opgen.cli import main
from opgen.spec import SpecError, parse_signature

from .conftest import (
    HAS_NVCC,
    LIGHT_OP,
    assert_ruff_passes,
    failed_tests,
    pip_install,
    render,
    run_project_tests,
)


def check_cuda_was_built(build_log: str, project: Path, name: str) -> None:
    if HAS_NVCC:
        assert f"{name}: building CUDA kernels with" in build_log
        assert "WITH_CUDA = True" in (project / name / "_build_info.py").read_text()


# The importing tests below read the build this test makes: on one worker, the project is
# built once (on another worker they built it again, 76 s of CI's machine).
@pytest.mark.xdist_group("default_project")
def test_the_default_project_builds_and_passes_its_own_tests(python, projects):
    project = render(projects, "my_op")
    log = pip_install(python, project, as_users_build=True)
    check_cuda_was_built(log, project, "my_op")
    result = run_project_tests(python, project)
    assert result.returncode == 0, result.stdout[-5000:]
    assert re.search(r"\d+ passed", result.stdout) and "failed" not in result.stdout
    # What the build wrote (_build_info.py) is as ruff formats it too, outside a git
    # repository, where .gitignore does not hide it from ruff.
    assert (project / "my_op" / "_build_info.py").is_file() and not (project / ".git").exists()
    assert_ruff_passes(project)


def test_the_default_pixel_project_builds_and_passes_its_own_tests(python, projects):
    # Every dtype of the defaults, float64 included: its weights must be float64 there.
    project = render(projects, "px", "--kind", "pixel")
    # One arch: compiling, not running.
    pip_install(python, project, as_users_build=True, TORCH_CUDA_ARCH_LIST="9.0")
    result = run_project_tests(python, project)
    assert result.returncode == 0, result.stdout[-5000:]


def test_a_wrong_forward_kernel_fails_the_generated_tests(python, projects):
    # The kernel adds 1e-3 that the reference does not: small, and still caught in
    # every dtype.
    project = render(projects, "wrong_forward", "--forward", "alpha * x + acc_t(1e-3)",
                     "--reference", "alpha * x", "--gradients", "x: alpha * grad")
    pip_install(python, project, USE_CUDA="0")  # the formulas are the CPU kernels' too: they run here
    # The tests that compare values (not torch.compile's, the slowest, which compare none).
    result = run_project_tests(python, project, "-k", "not compile")
    assert result.returncode == 1
    assert {"test_matches_float64_reference", "test_sizes_around_the_vector_width",
            "test_non_contiguous_inputs"} <= failed_tests(result.stdout)

    # A failure comes back as it was when its test runs alone: each test draws its own
    # inputs, whatever ran before it (the worst element is where the inputs are smallest).
    test = "test_matches_float64_reference[(33, 65)-dtype0-cpu]"
    worst = failure_detail(result.stdout, test)
    assert "Greatest relative difference" in worst
    alone = run_project_tests(python, project, f"tests/test_wrong_forward.py::{test}")
    assert failure_detail(alone.stdout, test) == worst
    # --input-seed draws other inputs, the same again on the next run.
    other = [run_project_tests(python, project, "--input-seed", "7", f"tests/test_wrong_forward.py::{test}")
             for _ in range(2)]
    assert failure_detail(other[0].stdout, test) == failure_detail(other[1].stdout, test) != worst


def failure_detail(output: str, test: str) -> str:
    """The lines of test's failure in pytest's output that locate the worst elements."""
    # From its header to the next one ("_ _ _" lines part the frames of one failure), and
    # only its "E" lines: the last failure's section runs on into the short summary, which
    # repeats the message in full where pytest sees a CI variable set.
    section = output.split(f"_ {test} _", 1)[1].split("\n__", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("E") and "Greatest" in line)


def test_a_wrong_gradient_kernel_fails_the_generated_tests(python, projects):
    project = render(projects, "wrong_gradient", "--gradients", "x: grad")  # d(alpha x)/dx is alpha
    pip_install(python, project, USE_CUDA="0")  # the formulas are the CPU kernels' too: they run here
    result = run_project_tests(python, project, "-k", "not compile")
    assert result.returncode == 1
    assert {"test_gradients_match_float64_reference", "test_gradcheck",
            "test_backward_with_a_non_contiguous_gradient"} <= failed_tests(result.stdout)
    assert "test_matches_float64_reference" not in failed_tests(result.stdout)


def test_a_wrong_saved_mask_fails_the_generated_tests(python, projects):
    # relu's gradient reads x only through x > 0: the forward can save that as a bit an
    # element (on CUDA, under autograd). Here the CPU forward puts each bit in the wrong place
    # of its word; the tests that compare the mask's backward with the backward op must fail.
    project = render(projects, "wrong_mask", "--signature", "x: Tensor", "--forward", "x > 0 ? x : 0",
                     "--gradients", "x: x > 0 ? grad : 0", "--dtypes", "float32")
    glue = project / "csrc" / "wrong_mask.cpp"
    right = "<< (i % 32);"
    assert glue.read_text().count(right) == 1
    glue.write_text(glue.read_text().replace(right, "<< (31 - i % 32);"))
    pip_install(python, project, USE_CUDA="0")  # the CPU kernels are the ones made wrong
    result = run_project_tests(python, project, "-k", "mask")
    assert result.returncode == 1
    assert {"test_backward_from_the_saved_mask_matches_the_backward_op",
            "test_the_saved_mask_with_unaligned_inputs_and_gradients"} <= failed_tests(result.stdout)


def test_a_cpu_only_build_says_why_cuda_was_skipped(python, projects, tmp_path):
    project = tmp_path / "my_op"
    shutil.copytree(render(projects / "cpu_only", "my_op", *LIGHT_OP), project)
    result = subprocess.run(
        [str(python), "setup.py", "build_ext", "--inplace"], cwd=project,
        capture_output=True, text=True, env={**os.environ, "USE_CUDA": "0"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "my_op: building for the CPU only; CUDA skipped: USE_CUDA=0" in result.stderr
    assert "nvcc" not in result.stdout
    assert "WITH_CUDA = False" in (project / "my_op" / "_build_info.py").read_text()
    tests = run_project_tests(python, project, "-k", "float64_reference and cpu")
    assert tests.returncode == 0, tests.stdout[-3000:]


@pytest.mark.xdist_group("default_project")
@pytest.mark.parametrize(
    ("field", "recorded", "says"),
    [
        ("TORCH_VERSION", "'1.0.0'", "my_op was built against torch 1.0.0 but torch {torch} is installed"),
        ("TORCH_CUDA_VERSION", "'9.9'",
         "my_op was built against torch for CUDA 9.9 but this torch is for CUDA {cuda}"),
        (None, None, "my_op has not been built"),
    ],
    ids=["torch", "cuda", "unbuilt"],
)
def test_importing_a_build_made_for_another_torch_says_how_to_rebuild(
    python, projects, tmp_path, field, recorded, says
):
    project = projects / "my_op"
    if not (project / "my_op" / "_build_info.py").exists():  # this test runs alone
        pip_install(python, render(projects, "my_op"), TORCH_CUDA_ARCH_LIST="9.0")
    installed = subprocess.run(
        [str(python), "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    info = project / "my_op" / "_build_info.py"
    original = info.read_text()
    try:
        if field is None:
            info.unlink()
        else:
            info.write_text(re.sub(rf"^{field} = .*$", f"{field} = {recorded}", original, flags=re.M))
        result = subprocess.run([str(python), "-c", "import my_op"], cwd=tmp_path,
                                capture_output=True, text=True)
    finally:
        info.write_text(original)
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("ImportError: " + says.format(torch=installed[0], cuda=installed[1]))
    assert last_line.endswith("; rebuild it in its project directory: pip install --no-build-isolation -e .")


# The package's files that never see an op's arguments: the build's and the import's own
# modules, and the C++ of the library as a whole (the schemas name arguments only in strings).
FILES_WITHOUT_ARGUMENTS = ("__init__.py", "_build_check.py", "_jit.py", "_toolchain.py", "_C.cpp",
                           "library.cpp")


def names_the_generated_code_uses(project: Path) -> list[str]:
    """Every lower-case identifier of a rendered project's C++ and package Python where the
    arguments are names too, outside comments and strings, that opgen accepts as one."""
    found: set[str] = set()
    for path in [*project.glob("csrc/*"), *project.glob(f"{project.name}/*.py")]:
        if path.name in FILES_WITHOUT_ARGUMENTS:
            continue
        text = re.sub(r'"[^"\n]*"', "", re.sub(r"(//|#).*", "", path.read_text()))
        found |= set(re.findall(r"\b[a-z][a-z0-9_]*\b", text))
    accepted = []
    for name in sorted(found):
        try:
            parse_signature(f"{name}: Tensor")
        except SpecError:
            continue
        accepted.append(name)
    return accepted


def test_arguments_may_take_any_name_the_generated_code_uses_that_opgen_accepts(python, projects):
    # The generated code's own names share a scope with the arguments; every one that
    # opgen does not refuse must work as an argument name: build, and pass the tests.
    reference_ops = Path(__file__).resolve().parent.parent / "reference_ops"
    names = sorted(set(names_the_generated_code_uses(reference_ops / "fused_axpby"))
                   | set(names_the_generated_code_uses(reference_ops / "rgb_to_gray")))
    names = [n for n in names if n not in ("adv", "first_op", "second_op")]
    assert len(names) > 80  # the glue's, kernels', autograd's and API's own names
    project = projects / "adv"
    # Ops of at most 60 arguments (a PyTorch op takes 64), about 4 in 5 of them tensors.
    count = -(-len(names) // 60)
    givens = []
    for group in (names[j::count] for j in range(count)):
        tensors, floats = group[: len(group) * 4 // 5], group[len(group) * 4 // 5:]
        a, b = tensors[:2]
        arguments = [*(f"{n}: Tensor" for n in tensors), *(f"{n}: float" for n in floats)]
        given = {"dtypes": ["float64"], "signature": ", ".join(arguments),
                 "forward": " + ".join([f"{a} * {b}", *tensors[2:], *floats]),
                 "gradients": "; ".join([f"{a}: {b} * grad", f"{b}: {a} * grad",
                                         *(f"{n}: grad" for n in tensors[2:])])}
        givens.append(given)
    records = [collect_op("first_op" if i == 0 else f"op_{i}", given) for i, given in enumerate(givens)]
    # The library rendered once with every op (opgen add of each in turn re-renders the growing
    # library each time: nine minutes of this test's eighteen).
    render(projects, "adv", "--op", "first_op", "--dtypes", "float64", "--signature",
           givens[0]["signature"], "--forward", givens[0]["forward"], "--gradients", givens[0]["gradients"])
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["ops"] == records[:1]
    answers["ops"] = records
    (project / ".copier-answers.yml").write_text(yaml.safe_dump(answers, sort_keys=False))
    assert CliRunner().invoke(main, ["regen", str(project)]).exit_code == 0
    assert len(list((project / "tests").glob("test_*.py"))) == count
    pip_install(python, project, TORCH_CUDA_ARCH_LIST="9.0")  # one arch: compiling, not running
    result = run_project_tests(python, project, "-x")
    assert result.returncode == 0, result.stdout[-3000:]


def test_int_and_bool_scalars_literals_and_branches(python, projects):
    # One project, five ops: int and bool scalars with both branches of a bool tested; the
    # same op with a wrong branch, which only the other scalar values catch; and literals,
    # which compute in the kernel's type (0.1 was a double: float32 ops computed in double).
    project = render(projects, "scalars", "--op", "signed_power", "--signature",
                     "x: Tensor, n: int = 3, flip: bool = False, alpha: float = 0.5",
                     "--forward", "flip ? -alpha * pow(x, n) : alpha * pow(x, n)",
                     "--gradients", "x: (flip ? -grad : grad) * alpha * n * pow(x, n - 1)")
    add(project, "wrong_branch", "--signature",
          "x: Tensor, n: int = 3, flip: bool = False, alpha: float = 0.5",
          "--forward", "alpha * pow(x, n)",  # ignores flip
          "--reference", "-alpha * torch.pow(x, n) if flip else alpha * torch.pow(x, n)",
          "--no-backward")
    add(project, "tenth", "--signature", "x: Tensor", "--forward", "x * 0.1", "--no-backward")
    assert "return x * acc_t(0.1);" in (project / "csrc" / "tenth_math.h").read_text()
    # Integers as torch computes them: int32 exactly past 2^24 (computed in float, 2^24 + 1
    # came out 2^24), results wrapped around to the dtype's range (uint8: 0 * 3 - 7 is 249,
    # where a GPU's own conversion clamps to 0; int32: 2^30 * 3 - 7 wraps, where the CPU's
    # gave -2^31). Its tests draw int32 values past 2^24.
    add(project, "wrap", "--signature", "x: Tensor", "--dtypes", "int32,uint8,uint16",
        "--forward", "x * 3 - 7", "--no-backward")
    # Infinities of both signs: eager's and the compiled sums are NaN, which the compile test
    # took for a mismatch ("Expected nan but got nan").
    add(project, "over_zero", "--signature", "x: Tensor", "--dtypes", "float32", "--forward", "x / 0",
        "--no-backward")
    pip_install(python, project, TORCH_CUDA_ARCH_LIST="9.0")  # one arch: compiling, not running
    result = run_project_tests(python, project)
    failed = failed_tests(result.stdout)
    assert failed == {"test_other_scalar_values_match_float64_reference"}, result.stdout[-3000:]
    assert "tests/test_wrong_branch.py::test_other_scalar_values" in result.stdout
    # float32 as eager computes it: in float32, bit for bit. And an eager call goes to the C++
    # operator itself, not through OpOverload.__call__ (a Python layer of about 0.4 µs a call);
    # torch.compile still sees the registered op (the project's own compile tests).
    same = subprocess.run([str(python), "-c", (
        "import torch, torch._ops, scalars; x = torch.randn(1 << 16); calls = []; "
        "through = torch._ops.OpOverload.__call__; "
        "torch._ops.OpOverload.__call__ = lambda op, *a, **k: calls.append(op) or through(op, *a, **k); "
        "assert torch.equal(scalars.tenth(x), x * 0.1); "
        "torch.testing.assert_close(scalars.signed_power(x, 2, True, 0.25), -0.25 * x * x); "
        "assert not calls, calls; "
        "i = torch.tensor([2**24 + 1, -2**26 - 1, 2**30, -2**31], dtype=torch.int32); "
        "assert torch.equal(scalars.wrap(i), i * 3 - 7), scalars.wrap(i); "
        "u = torch.arange(256, dtype=torch.uint8); assert torch.equal(scalars.wrap(u), u * 3 - 7)")],
        cwd=project, capture_output=True, text=True)
    assert same.returncode == 0, same.stderr[-2000:]


def add(project: Path, name: str, *options: str) -> None:
    """`opgen add NAME -p PROJECT OPTIONS...` in this process."""
    try:
        main(["add", name, "-p", str(project), *options])
    except SystemExit as exit_:
        assert exit_.code in (0, None)


def test_ops_on_part_of_the_real_line_or_with_cancelling_terms_pass_their_own_tests_and_wrong_ones_fail(
        python, projects):
    # log, acos, logit and acosh are NaN on most normal inputs: the generated tests failed 29 of 50
    # for a right log(x) (NaN against NaN, gradcheck on NaN). They now draw their inputs from
    # the first range on which the reference and its gradients are finite; a kernel off by
    # 1e-3 there still fails them.
    # A formula whose terms cancel loses digits to float32 that no kernel keeps (tanh GELU's
    # gradient near x = -0.75 failed its own tests): its float32 results may now miss the
    # float64 reference by 16 times what PyTorch's own float32 evaluation of the reference
    # misses it by. One off by 1e-4 still fails.
    project = render(projects, "domains", "--op", "log_op", "--signature", "x: Tensor", "--dtypes",
                     "float32,float64", "--forward", "log(x)", "--gradients", "x: grad / x")
    add(project, "acos_op", "--signature", "x: Tensor, y: Tensor", "--dtypes", "float32,float64",
        "--forward", "acos(x) * y", "--reference", "torch.acos(x) * y",
        "--gradients", "x: -grad * y / sqrt(1 - x * x); y: grad * acos(x)")
    add(project, "logit_op", "--signature", "x: Tensor", "--dtypes", "float32,float64",
        "--forward", "log(x / (1 - x))", "--reference", "torch.logit(x)",
        "--gradients", "x: grad / (x * (1 - x))")
    add(project, "acosh_op", "--signature", "x: Tensor", "--dtypes", "float32,float64",
        "--forward", "acosh(x)", "--reference", "torch.acosh(x)", "--no-backward")
    add(project, "wrong_log", "--signature", "x: Tensor", "--dtypes", "float32,float64",
        "--forward", "log(x) * 1.001", "--reference", "torch.log(x)", "--no-backward")
    cancelling = "(x + y) * (x + y) - x * x - 2 * x * y"  # y * y
    add(project, "cancelling", "--signature", "x: Tensor, y: Tensor", "--dtypes", "float32,float64",
        "--forward", cancelling,
        "--gradients", "x: grad * (2 * (x + y) - 2 * x - 2 * y); y: grad * (2 * (x + y) - 2 * x)")
    add(project, "wrong_cancelling", "--signature", "x: Tensor, y: Tensor", "--dtypes", "float32",
        "--forward", f"({cancelling}) * 1.0001", "--reference", f"{cancelling}", "--no-backward")
    # Inputs of 100 and 10^4: softplus written as log1p(exp(x)) overflows to inf past 88 in
    # float32, where F.softplus (its reference) gives x; written with F.softplus's threshold, it
    # passes. The naive one passes every other test: its normal inputs never reach 88.
    add(project, "softplus_naive", "--signature", "x: Tensor", "--dtypes", "float32",
        "--forward", "log1p(exp(x))", "--reference", "torch.nn.functional.softplus(x)", "--no-backward")
    add(project, "softplus_op", "--signature", "x: Tensor", "--dtypes", "float32,float64",
        "--forward", "x > 20 ? x : log1p(exp(x))", "--reference", "torch.nn.functional.softplus(x)",
        "--gradients", "x: x > 20 ? grad : grad / (1 + exp(-x))")
    pip_install(python, project, USE_CUDA="0")  # the tests' inputs, not the kernels, are what changed
    result = run_project_tests(python, project, "-k", "not compile")
    failed_files = set(re.findall(r"^FAILED tests/(\w+)\.py::", result.stdout, re.M))
    wrong = {"test_wrong_log", "test_wrong_cancelling", "test_softplus_naive"}
    assert failed_files == wrong, result.stdout[-5000:]
    naive = set(re.findall(r"^FAILED tests/test_softplus_naive\.py::(\w+)", result.stdout, re.M))
    assert naive == {"test_large_inputs_match_float64_reference"}, result.stdout[-5000:]
    assert "test_matches_float64_reference" in failed_tests(result.stdout)
    assert "Tensor-likes are not close" in result.stdout
    chosen = subprocess.run([str(python), "-c", "from tests import test_log_op, test_acos_op, test_logit_op\n"
                             "from tests import test_acosh_op\n"
                             "modules = (test_log_op, test_acos_op, test_logit_op, test_acosh_op)\n"
                             "print(*(m.INPUT_RANGE for m in modules), sep=';')"],
                            cwd=project, capture_output=True, text=True)
    assert chosen.stdout.strip() == "positive;within (-1, 1);within (0, 1);above 1", (
        chosen.stdout + chosen.stderr[-2000:])


def test_cpu_loops_are_vectorized_and_threaded_and_the_scalar_ones_agree(python, projects):
    # Transcendental functions, two inputs, every kind of scalar, conditions on floating values
    # (where() in the formulas: masks in the vector loops) and on scalars (?:).
    project = render(projects, "mixed", "--signature",
                     "x: Tensor, y: Tensor, alpha: float = 0.5, n: int = 2, flip: bool = False",
                     "--forward", "x > 0 && !flip ? x * y * n : alpha * tanh(x) * exp(-y)",
                     "--gradients", "x: grad * (x > 0 && !flip ? y * n : alpha * (1 - tanh(x) * tanh(x)) * "
                     "exp(-y)); y: grad * (x > 0 && !flip ? x * n : -alpha * tanh(x) * exp(-y))")
    assert "return where(x > acc_t(0) && !flip," in (project / "csrc" / "mixed_math.h").read_text()
    # rint rounds halves to even, as torch.round (its reference here); C's round, away from
    # zero: checked below on ties. And a value within float32's error of a rounding step
    # (x * 1000.3 in float32 and float64 differ by ~3e-5: about one element in 10^4 rounds
    # to the other side) is right either way: the generated tests accept both sides there.
    add(project, "rounded", "--signature", "x: Tensor", "--forward", "rint(x * 4) / 4", "--no-backward")
    assert "return torch.round(x * 4) / 4" in (project / "mixed" / "rounded_reference.py").read_text()
    add(project, "near_ties", "--signature", "x: Tensor", "--forward", "rint(x * 1000.3) / 1000.3",
        "--no-backward")
    # int8 out, an output dtype no kernel reads: the vector loops store each lane converted.
    add(project, "to_int8", "--signature", "x: Tensor", "--forward", "clamp(rint(x * 50), -127, 127)",
        "--out-dtype", "int8", "--no-backward")
    pip_install(python, project, USE_CUDA="0")  # the CPU loops are what this is about
    [library] = (project / "mixed").glob("_C*.so")
    # The AVX2 loops call SLEEF's 4-double tanh and the AVX512 ones its 8-double tanh (as eager's
    # CPU kernels do; floats' tanh is csrc/cpu_lanes.h's own, inline; this CPU runs the AVX2
    # ones: the AVX512 ones ran on the GPU machine's Xeon, tests/perf/cpu_avx512), and the CPU
    # loops run on torch's OpenMP threads: without -fopenmp, at::parallel_for runs on one thread.
    assert b"Sleef_tanhd4_u10" in library.read_bytes()
    assert b"Sleef_tanhd8_u10" in library.read_bytes()
    needed = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
    assert "libgomp" in needed, needed
    result = run_project_tests(python, project)  # on this CPU (AVX2): the AVX2 loops
    assert result.returncode == 0, result.stdout[-3000:]
    # Ties round to even, in the vector loops (64 values) and the scalar ones.
    ties = ("import torch, mixed; x = torch.tensor([0.125, 0.375, -0.125, -0.625] * 16); "
            "assert torch.equal(mixed.rounded(x), torch.tensor([0.0, 0.5, -0.0, -0.5] * 16))")
    # And to int8: the clamped values, as int8, in both loops.
    ties += ("; x = torch.linspace(-4, 4, 101); assert torch.equal(mixed.to_int8(x), "
             "torch.clamp(torch.round(x * 50), -127, 127).to(torch.int8))")
    for capability in ("avx2", "default"):
        rounded = subprocess.run([str(python), "-c", ties], cwd=project, capture_output=True, text=True,
                                 env={**os.environ, "ATEN_CPU_CAPABILITY": capability})
        assert rounded.returncode == 0, rounded.stderr[-2000:]
    # The scalar loops, as on a CPU without AVX2. (torch.compile's own C++ for the reference
    # does not compile under ATEN_CPU_CAPABILITY=default: inductor's, not the op's.)
    scalar = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not torch_compile"],
        cwd=project, capture_output=True, text=True, env={**os.environ, "ATEN_CPU_CAPABILITY": "default"})
    assert scalar.returncode == 0, scalar.stdout[-3000:]
