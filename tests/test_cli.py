"""The opgen CLI: what `opgen new` writes, and every way it refuses."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import opgen
from opgen import __version__, formatting, template_source
from opgen.naming import MAX_LENGTH

from .conftest import assert_ruff_passes, long_name, tree

DEFAULT_PROJECT_FILES = {
    ".clang-format",
    ".copier-answers.yml",
    ".github/workflows/wheels.yml",
    ".gitignore",
    "MANIFEST.in",
    "README.md",
    "pyproject.toml",
    "setup.py",
    "benchmarks/bench_my_op.py",
    "csrc/_C.cpp",
    "csrc/library.cpp",
    "csrc/cpu_lanes.h",
    "csrc/my_op.cpp",
    "csrc/my_op_cpu_avx2.cpp",
    "csrc/my_op_cpu_avx512.cpp",
    "csrc/my_op_cpu_loops.h",
    "csrc/my_op_autograd.cpp",
    "csrc/my_op_kernel.cu",
    "csrc/my_op_kernel.h",
    "csrc/my_op_math.h",
    "my_op/__init__.py",
    "my_op/_build_check.py",
    "my_op/_jit.py",
    "my_op/_toolchain.py",
    "my_op/my_op.py",
    "my_op/my_op_reference.py",
    "tests/__init__.py",
    "tests/conftest.py",
    "tests/test_my_op.py",
}


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_version(opgen):
    result = opgen("--version")
    assert result.exit_code == 0 and result.output.strip() == f"opgen, version {__version__}"


@pytest.mark.parametrize("args", [["--help"], ["new", "--help"]])
def test_help_shows_an_example(opgen, args):
    result = opgen(*args)
    assert result.exit_code == 0
    assert "Example" in result.output and "opgen new my_op" in result.output


def test_new_renders_the_whole_project(opgen, tmp_path):
    result = opgen("new", "my_op")
    assert result.exit_code == 0, result.output
    project = tmp_path / "my_op"
    assert files_under(project) == DEFAULT_PROJECT_FILES
    assert list(tmp_path.iterdir()) == [project]  # no staging directory left behind


def test_answers_record_a_real_git_source_and_version_never_a_staging_path(opgen, tmp_path):
    opgen("new", "my_op")
    text = (tmp_path / "my_op" / ".copier-answers.yml").read_text()
    answers = yaml.safe_load(text)
    source = template_source.locate()
    assert answers["_src_path"] == source.url and answers["_commit"] == source.version
    assert str(tmp_path) not in text and ".opgen-" not in text
    if source.root.joinpath(".git").exists():  # running from a checkout, as in CI
        assert Path(answers["_src_path"]).is_absolute()
        resolved = subprocess.run(["git", "rev-parse", "--verify", answers["_commit"] + "^{commit}"],
                                  cwd=answers["_src_path"], capture_output=True)
        assert resolved.returncode == 0, f"{answers['_commit']} is not a commit of {answers['_src_path']}"
    # The answers are data: the ops' parsed values, not strings for the template to split.
    assert answers["package"] == "my_op" and answers["exact"] is False
    [op] = answers["ops"]
    assert op["name"] == "my_op" and op["kind"] == "elementwise"
    assert op["params"] == [{"name": "x", "type": "Tensor", "default": None},
                            {"name": "alpha", "type": "float", "default": 2.0}]
    assert op["gradients"] == [{"input": "x", "formula": "alpha * grad", "cpp": "alpha * grad",
                                "body": {"locals": [], "value": "alpha * grad"}, "reads": []}]
    assert op["dtypes"] == ["float32", "float64", "float16", "bfloat16"]


def test_the_template_url_can_be_overridden_for_forks(opgen, tmp_path, monkeypatch):
    monkeypatch.setenv("OPGEN_TEMPLATE_URL", "https://example.org/fork/opgen.git")
    opgen("new", "my_op")
    answers = yaml.safe_load((tmp_path / "my_op" / ".copier-answers.yml").read_text())
    assert answers["_src_path"] == "https://example.org/fork/opgen.git"


def test_kernel_files_hold_no_torch_headers(opgen, tmp_path):
    opgen("new", "my_op")
    for name in ("my_op_kernel.cu", "my_op_kernel.h", "my_op_math.h"):
        text = (tmp_path / "my_op" / "csrc" / name).read_text()
        includes = [line for line in text.splitlines() if line.startswith("#include")]
        assert not any("torch" in line or "ATen" in line or "c10" in line for line in includes), name


def test_output_dir_and_options_reach_the_project(opgen, tmp_path):
    result = opgen(
        "new", "fused_axpby", "-o", "ops/nested", "--dtypes", "float32,bfloat16",
        "--signature", "a: float, x: Tensor, b: Tensor", "--forward", "a * x + b",
        "--gradients", "x: a * grad; b: grad",
    )
    assert result.exit_code == 0, result.output
    project = tmp_path / "ops" / "nested" / "fused_axpby"
    library = (project / "csrc" / "library.cpp").read_text()
    assert 'm.def("fused_axpby(float a, Tensor x, Tensor b) -> Tensor");' in library
    cpp = (project / "csrc" / "fused_axpby.cpp").read_text()
    assert "at::kBFloat16" in cpp and "at::kHalf" not in cpp
    ops = (project / "fused_axpby" / "fused_axpby.py").read_text()
    assert "def fused_axpby(a: float, x: Tensor, b: Tensor) -> Tensor:" in ops
    math = (project / "csrc" / "fused_axpby_math.h").read_text()
    assert "return a * x + b;" in math and "grad_wrt_x" in math
    # b's gradient is grad itself: autograd hands it on, with no formula or kernel.
    assert "grad_wrt_b" not in math
    autograd = (project / "csrc" / "fused_axpby_autograd.cpp").read_text()
    assert 'sum_to_shape(grads[0], ctx->saved_data["shape of b"])' in autograd


def test_no_backward_drops_autograd(opgen, tmp_path):
    assert opgen("new", "my_op", "--no-backward").exit_code == 0
    project = tmp_path / "my_op"
    assert not (project / "csrc" / "my_op_autograd.cpp").exists()
    assert "backward" not in (project / "csrc" / "my_op_kernel.cu").read_text()
    assert "backward" not in (project / "csrc" / "library.cpp").read_text()
    [op] = yaml.safe_load((project / ".copier-answers.yml").read_text())["ops"]
    assert op["backward"] is False and op["gradients"] == []


def short_named_projects(opgen) -> list[str]:
    opgen("new", "my_op")
    opgen("new", "axpby", "--signature", "a: float, x: Tensor, b: Tensor", "--forward", "a * x + b",
          "--gradients", "x: a * grad; b: grad", "--dtypes", "float16")
    # A package of several ops and kinds: the shared files list them all.
    opgen("new", "lib", "--op", "scale", "--defaults")
    # Op names that are also names of the generated tests and benchmarks: each module
    # imports the op under its own name, `op`.
    for args in (["gray", "--kind", "pixel"], ["mm", "--kind", "matmul"], ["add", "--signature",
                 "x: Tensor, y: Tensor", "--forward", "x + y", "--gradients", "x: grad; y: grad"],
                 ["first"], ["reference"], ["random_tensor"], ["main", "--kind", "matmul"],
                 ["four", "--signature", "x: Tensor, y: Tensor, z: Tensor, w: Tensor", "--forward",
                  "x * y + z - w", "--gradients", "x: y * grad; y: x * grad; z: grad; w: -grad"],
                 ["ln", "--kind", "rowwise", "--preset", "layernorm"],
                 ["soft", "--kind", "rowwise", "--preset", "softmax"],
                 ["fused", "--kind", "rowwise", "--preset", "add_rmsnorm"]):
        assert opgen("add", *args, "--defaults", "-p", "lib").exit_code == 0
    # The stable ABI's Python autograd, for every kind that has it.
    opgen("new", "stab", "--abi", "stable", "--signature", "x: Tensor, b: Tensor, s: float = 0.5",
          "--forward", "x * s + b", "--gradients", "x: grad * s; b: grad")
    for args in (["mm", "--kind", "matmul"], ["gray", "--kind", "pixel"],
                 ["ln", "--kind", "rowwise", "--preset", "layernorm"],
                 ["soft", "--kind", "rowwise", "--preset", "softmax"]):
        assert opgen("add", *args, "--defaults", "-p", "stab").exit_code == 0
    return ["my_op", "axpby", "lib", "stab"]


# Ops of every kind and the answers that change what their Python says: every rowwise preset
# but log_softmax (softmax's), a custom op, gradients that are grad itself (no backward op)
# and gradients read from a mask saved by the forward.
LONG_NAMED_OPS = {
    "pixel": ["--kind", "pixel"],
    "matmul": ["--kind", "matmul"],
    "layer_norm": ["--kind", "rowwise", "--preset", "layernorm"],
    "softmax": ["--kind", "rowwise", "--preset", "softmax"],
    "rms_norm": ["--kind", "rowwise", "--preset", "rmsnorm"],
    "gather": ["--kind", "custom", "--signature", "x: Tensor, index: Tensor[int64]",
               "--returns", "out: (index.size(0), x.size(1))", "--gradients", "x"],
    "add": ["--signature", "x: Tensor, y: Tensor", "--forward", "x + y",
            "--gradients", "x: grad; y: grad"],
    "relu": ["--signature", "x: Tensor", "--forward", "x > 0 ? x : 0",
             "--reference", "torch.clamp(x, min=0)", "--gradients", "x: x > 0 ? grad : 0"],
}


# A rowwise op with a per-row output (scale).
ABSMAX_QUANT = ["--kind", "rowwise", "--signature", "x: Tensor", "--reductions", "a = max(abs(x))",
                "--forward", "q: rint(x * 127 / max(a, 1e-12)); scale: max(a, 1e-12) / 127",
                "--reference", "(torch.round(x * 127 / x.abs().amax(-1, keepdim=True).clamp(min=1e-12)), "
                               "x.abs().amax(-1).clamp(min=1e-12) / 127)", "--no-backward"]


def long_named_projects(length: int, abi: str):
    def make(opgen) -> list[str]:
        package = long_name("fused_ops", length)
        assert opgen("new", package, "--defaults", "--abi", abi,
                     "--op", long_name("scale", length)).exit_code == 0
        # Rowwise ops of several outputs and of per-row outputs, which the stable ABI does not
        # take yet.
        several_outputs = {"add_rms_norm": ["--kind", "rowwise", "--preset", "add_rmsnorm"],
                           "absmax_quant": ABSMAX_QUANT} if abi == "torch" else {}
        for stem, args in {**LONG_NAMED_OPS, **several_outputs}.items():
            added = opgen("add", long_name(stem, length), *args, "--defaults", "-p", package)
            assert added.exit_code == 0, added.output
        return [package]

    return make


@pytest.mark.parametrize("make_projects", [
    short_named_projects,
    # Package and op names of 40 characters, and as long as opgen takes (opgen/naming.py), on
    # both ABIs: the lines that name them still fit the project's line length, which the
    # templates' prose is wrapped to and ruff formats the code to.
    long_named_projects(40, "torch"), long_named_projects(40, "stable"),
    long_named_projects(MAX_LENGTH, "torch"), long_named_projects(MAX_LENGTH, "stable"),
], ids=["short", "40-torch", "40-stable", "64-torch", "64-stable"])
def test_generated_python_passes_ruff(opgen, tmp_path, make_projects):
    # A user's `ruff check .` finds nothing and `ruff format .` changes nothing, with the
    # project's own settings (pyproject.toml).
    for project in make_projects(opgen):
        assert_ruff_passes(tmp_path / project)


def test_the_prose_is_wrapped_to_the_line_length_ruff_formats_to():
    # templates/kinds/common/prose.jinja wraps docstrings and comments to LINE_LENGTH; ruff
    # formats the code to the line-length of the project's pyproject.toml.
    prose = (WORKTREE / "templates" / "kinds" / "common" / "prose.jinja").read_text()
    pyproject = (WORKTREE / "templates" / "project" / "pyproject.toml.jinja").read_text()
    [wrapped] = re.findall(r"set LINE_LENGTH = (\d+)", prose)
    [formatted] = re.findall(r"^line-length = (\d+)$", pyproject, flags=re.M)
    assert wrapped == formatted


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["new", "MyOp"], "not lower snake case"),
        (["new", "class"], "Python keyword"),
        (["new", "torch"], "shadow"),
        (["new", "os"], "standard library"),
        (["new", "m\u0430tmul"], "non-ASCII"),
        (["new", "\uff4d\uff59_op"], "non-ASCII"),  # fullwidth letters
        (["new", "numpy"], "shadow"),
        (["new", "setuptools"], "shadow"),
        (["new", "pytest"], "shadow"),
        (["new", "sys"], "standard library"),
        (["new", "../escape"], "is a path"),
        (["new", "a\\b"], "is a path"),
        (["new", ".."], "is a path"),
        (["new", "$(id)"], "not lower snake case"),
        (["new", "my_op;id"], "not lower snake case"),
        (["new", "my_op\n"], "not lower snake case"),
        (["new", "my_op", "--signature", "x: Tensor | None"], "contains '|'"),
        (["new", "my_op", "--signature", "x: Tensor & y"], "contains '&'"),
        (["new", "my_op", "--signature", "x: Tensor\nalpha: float"], "contains '\\n'"),
        (["new", "my_op", "--signature", "x: Tensor, {{ y }}: float"], "contains '{}'"),
        (["new", "my_op", "--forward", "{% if 1 %}x{% endif %}"], "contains"),
        (["new", "my_op", "--forward", "alpha * x\n"], "contains '\\n'"),
        (["new", "my_op", "--forward", "x | rm"], "uses 'rm'"),
        (["new", "my_op", "--reference", "x`id`"], "contains '`'"),
        (["new", "my_op", "--reference", "x & id"], "uses 'id'"),
        (["new", "my_op", "--gradients", "x: $(id)"], "contains '$'"),
        (["new", "my_op", "--gradients", "x: alpha * grad\n"], "contains '\\n'"),
        (["new", "my_op", "--gradients", "$(id): grad"], "contains '$'"),
        (["new", "my_op", "--kind", "pixel", "--signature", "img: Tensor", "--forward", "r + g",
          "--reference", "img[..., 0]", "--no-backward", "--channels", "r, g\n"], "contains '\\n'"),
        (["new", "my_op", "--dtypes", "float32;id"], "choose distinct names"),
        (["new", "my_op", "--out-dtype", "$(id)"], "Invalid value for '--out-dtype'"),
        (["new", "my_op", "--kind", "conv2d"], "Invalid value for '--kind'"),
        (["new", "my_op", "--dtypes", "float8"], "--dtypes 'float8': choose distinct names"),
        (["new", "my_op", "--signature", "x: Tensor, s: str"], "needs a type"),
        (["new", "my_op", "--forward", "{{ 7 * 7 }}"], "contains"),
        (["new", "my_op", "--forward", "x; system(0)"], "contains"),
        (["new", "my_op", "--reference", "__import__('os')"], "uses '__import__', which is neither"),
        (["new", "my_op", "--reference", "torch.os.system(torch.__name__) + x"], "reaches torch.os.system"),
        (["new", "my_op", "--reference", "torch.save(x, f='out') or x"], "calls torch.save"),
        (["new", "my_op", "--reference", "x.numpy().tofile('out') or x"], "holds the string 'out'"),
        (["new", "my_op", "--forward", "alpha * y"], "uses 'y'"),
        (["new", "my_op", "--gradients", "y: grad"], "not a tensor argument"),
        (["new", "my_op", "--forward", "round(x)", "--gradients", "x: 0"],
         "--forward 'round(x)' calls round, which torch computes differently (torch.round rounds halves "
         "to even, as rint does), so it has no PyTorch twin for the tests to check it against; pass "
         "--reference"),
        (["new", "my_op", "--no-backward", "--gradients", "x: grad"], "contradict"),
        (["new", "my_op", "--signature", "x: Tensor, alpha: float = True"], "is True, not a number"),
        (["new", "my_op", "--signature", "x: Tensor, alpha: float = 1e400"],
         "the default of 'alpha' is 1e400, which is not a finite double"),
        (["new", "my_op", "--forward", "x % 2", "--gradients", "x: grad"], "'%' needs integers"),
        (["new", "my_op", "--forward", "x << 1", "--gradients", "x: grad"], "'<<' needs integers"),
        (["new", "my_op", "--forward", "x & 1", "--gradients", "x: grad"], "'&' is bitwise"),
        (["new", "my_op", "--forward", "x, alpha", "--gradients", "x: grad"], "comma operator"),
        (["new", "my_op", "--forward", "pow(x)", "--gradients", "x: grad"], "pow() takes 2 arguments"),
        (["new", "my_op", "--forward", "alpha*x*x"], "--forward 'alpha*x*x' was given without --gradients"),
        (["new", "my_op", "--signature", "x: Tensor, y: Tensor", "--forward", "x * y", "--gradients",
          "x: y * grad"], "has no formula for 'y'"),
        # A gradient that does not read grad builds, then fails every gradient test: sin's is
        # grad * cos(x), not cos(x).
        (["new", "my_op", "--signature", "x: Tensor", "--forward", "sin(x)", "--gradients", "x: cos(x)"],
         "gradients: 'x': 'cos(x)' does not read grad: a gradient is the output's gradient times the "
         "derivative, e.g. 'x: grad * (cos(x))'"),
        (["new", "my_op", "--kind", "matmul", "--signature", "x: Tensor"],
         "signature 'x: Tensor': a matmul op takes exactly two tensors"),
        (["new", "my_op", "--gradients", "x: alpha * grad; system(0)"], "'system(0)' needs the form"),
        (["new", "my_op", "-o", "/etc/hostname"], "/etc/hostname is a file"),
        (["new", "my_op", "-o", "/etc/hostname/sub"], "/etc/hostname is a file"),
        (["new", "my_op", "--kind", "matmul", "--gradients", "a: grad"], "does not apply to --kind matmul"),
        (["new", "my_op", "--channels", "a, b"], "--channels 'a, b' does not apply to --kind elementwise"),
        (["new", "my_op", "--signature", "x: Tensor", "--forward", "cbrt(x)",
          "--gradients", "x: grad / (3 * cbrt(x) * cbrt(x))"],
         "calls cbrt, which torch has no function for, so it has no PyTorch twin"),
        (["new", "my_op", "--dtypes", "uint8", "--signature", "x: Tensor", "--forward", "x"],
         "--dtypes uint8: backward kernels need floating inputs"),
        (["new"], "Missing argument 'NAME'"),
        (["new", "my_op", "--bogus"], "No such option"),
    ],
)
def test_refusals_are_one_line_exit_2_and_write_nothing(opgen, tmp_path, args, says):
    (tmp_path / "keep.txt").write_text("the user's file")
    before = tree(tmp_path)
    result = opgen(*args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("opgen: error: ") and says in lines[0], result.output
    assert tree(tmp_path) == before


def test_an_existing_non_empty_target_is_refused(opgen, tmp_path):
    (tmp_path / "my_op").mkdir()
    (tmp_path / "my_op" / "notes.txt").write_text("mine")
    before = tree(tmp_path)
    result = opgen("new", "my_op")
    assert result.exit_code == 2 and "exists and is not empty" in result.output
    assert "--existing-ok" in result.output
    assert tree(tmp_path) == before


def test_an_existing_file_as_target_is_refused(opgen, tmp_path):
    (tmp_path / "my_op").write_text("a file")
    result = opgen("new", "my_op")
    assert result.exit_code == 2 and "not a directory" in result.output
    assert (tmp_path / "my_op").read_text() == "a file"


def test_an_empty_existing_directory_is_used(opgen, tmp_path):
    (tmp_path / "my_op").mkdir()
    assert opgen("new", "my_op").exit_code == 0
    assert files_under(tmp_path / "my_op") == DEFAULT_PROJECT_FILES


def test_existing_ok_adds_files_and_keeps_the_users(opgen, tmp_path):
    (tmp_path / "my_op").mkdir()
    (tmp_path / "my_op" / "notes.txt").write_text("mine")
    assert opgen("new", "my_op", "--existing-ok").exit_code == 0
    assert files_under(tmp_path / "my_op") == DEFAULT_PROJECT_FILES | {"notes.txt"}
    assert (tmp_path / "my_op" / "notes.txt").read_text() == "mine"


def test_existing_ok_never_overwrites_a_file(opgen, tmp_path):
    (tmp_path / "my_op" / "csrc").mkdir(parents=True)
    (tmp_path / "my_op" / "csrc" / "my_op_kernel.cu").write_text("my kernel")
    before = tree(tmp_path)
    result = opgen("new", "my_op", "--existing-ok")
    assert result.exit_code == 2
    assert "my_op_kernel.cu already exists" in result.output and "nothing was written" in result.output
    assert tree(tmp_path) == before


def test_an_interrupted_render_leaves_nothing(opgen, tmp_path, monkeypatch):
    from opgen.formatting import FormattingWorker

    real_run_copy = FormattingWorker.run_copy

    def interrupted(worker):
        real_run_copy(worker)  # files are written, then the user hits Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(FormattingWorker, "run_copy", interrupted)
    result = opgen("new", "my_op", "-o", "out/dir")
    assert result.exit_code == 130 and "nothing was written" in result.output
    assert list(tmp_path.iterdir()) == []  # not even the output directory it created


def test_new_does_not_import_torch(tmp_path):
    code = (
        "import sys\n"
        "from opgen.cli import main\n"
        "try:\n"
        f"    main(['new', 'my_op', '-o', {str(tmp_path)!r}])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "assert 'torch' not in sys.modules, 'opgen new imported torch'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "my_op" / "setup.py").is_file()


def test_logical_operators_stay_allowed_in_expressions(opgen, tmp_path):
    # '&&', '||', '&' and '|' are C++ and PyTorch operators there, and every name must be an
    # argument or a math function, so no shell command can follow them (see "x | rm" above).
    result = opgen("new", "band", "--signature", "x: Tensor", "--forward", "x > 0 && x < 1 ? x : 0",
                   "--reference", "torch.where((x > 0) & (x < 1), x, 0)", "--no-backward")
    assert result.exit_code == 0, result.output
    math = (tmp_path / "band" / "csrc" / "band_math.h").read_text()
    assert "return where(x > acc_t(0) && x < acc_t(1), x, acc_t(0));" in math


WORKTREE = Path(opgen.__file__).resolve().parent.parent
NO_DAC = ["--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture
def unprivileged(tmp_path):
    """Run `opgen ARGS` in tmp_path in a process that directory permissions apply to.

    root writes into a mode-555 directory (CAP_DAC_OVERRIDE), so as root the command runs
    under setpriv without that capability; uid 0 still owns the test's directories, and
    their permission bits then refuse it as they refuse their owner.
    """
    prefix = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root, which writes into read-only directories, and without "
                        "setpriv (util-linux) to drop that capability")
        prefix = [setpriv, *NO_DAC]
    locked = tmp_path / "locked-probe"
    locked.mkdir(mode=0o555)
    probe = subprocess.run([*prefix, sys.executable, "-c", f"open({str(locked / 'x')!r}, 'w')"],
                           capture_output=True)
    locked.rmdir()
    if probe.returncode == 0:
        pytest.skip("this process writes into read-only directories whatever it drops")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, sys.executable, "-m", "opgen", *args], cwd=tmp_path, text=True,
                              capture_output=True, stdin=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(WORKTREE)})

    return run


@pytest.fixture
def read_only(tmp_path):
    """chmod 555 the given directories; made writable again afterwards, for the cleanup."""
    locked = []

    def lock(*directories: Path) -> None:
        for directory in directories:
            directory.chmod(0o555)
            locked.append(directory)

    yield lock
    for directory in locked:
        directory.chmod(0o755)


def assert_one_line_error(result, says: str) -> None:
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stdout + result.stderr
    assert lines[0].startswith("opgen: error: ") and says in lines[0], lines[0]


@pytest.mark.parametrize(
    ("output_dir", "says"),
    [
        ("ro", "cannot write to {tmp}/ro; choose a writable --output-dir"),
        ("ro/sub/dir", "cannot create {tmp}/ro/sub: Permission denied; choose another --output-dir"),
    ],
)
def test_a_read_only_output_directory_is_refused(unprivileged, read_only, tmp_path, output_dir, says):
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "keep.txt").write_text("the user's file")
    read_only(tmp_path / "ro")
    before = tree(tmp_path)
    assert_one_line_error(unprivileged("new", "my_op", "--defaults", "-o", output_dir),
                          says.format(tmp=tmp_path))
    assert tree(tmp_path) == before


def test_a_read_only_empty_target_is_refused(unprivileged, read_only, tmp_path):
    (tmp_path / "my_op").mkdir()
    read_only(tmp_path / "my_op")
    before = tree(tmp_path)
    assert_one_line_error(unprivileged("new", "my_op", "--defaults"),
                          f"cannot write to {tmp_path}/my_op; make it writable")
    assert tree(tmp_path) == before


def test_existing_ok_into_a_read_only_subdirectory_writes_nothing(unprivileged, read_only, tmp_path):
    (tmp_path / "my_op" / "csrc").mkdir(parents=True)
    (tmp_path / "my_op" / "notes.txt").write_text("mine")
    read_only(tmp_path / "my_op" / "csrc")
    before = tree(tmp_path)
    assert_one_line_error(unprivileged("new", "my_op", "--defaults", "--existing-ok"),
                          f"cannot write to {tmp_path}/my_op/csrc; nothing was written")
    assert tree(tmp_path) == before


def failing_after(count: int, error: BaseException):
    """shutil.move that moves `count` files, then raises `error`: a disk filling up, Ctrl-C."""
    real_move = shutil.move
    moved = []

    def move(source, destination):
        if len(moved) == count:
            raise error
        moved.append(destination)
        return real_move(source, destination)

    return move


def test_a_failure_while_moving_into_an_existing_target_undoes_the_move(opgen, tmp_path, monkeypatch):
    (tmp_path / "my_op" / "csrc").mkdir(parents=True)
    (tmp_path / "my_op" / "notes.txt").write_text("mine")
    before = tree(tmp_path)
    monkeypatch.setattr(shutil, "move", failing_after(5, OSError(errno.ENOSPC, "No space left on device")))
    result = opgen("new", "my_op", "--existing-ok")
    assert result.exit_code == 2
    assert result.output.strip() == (f"opgen: error: cannot write to {tmp_path}/my_op: No space left on "
                                     "device; nothing was written: choose another --output-dir")
    assert tree(tmp_path) == before


def test_an_interrupt_while_moving_into_an_existing_target_undoes_the_move(opgen, tmp_path, monkeypatch):
    (tmp_path / "my_op").mkdir()
    (tmp_path / "my_op" / "notes.txt").write_text("mine")
    before = tree(tmp_path)
    monkeypatch.setattr(shutil, "move", failing_after(5, KeyboardInterrupt()))
    result = opgen("new", "my_op", "--existing-ok")
    assert result.exit_code == 130 and "nothing was written" in result.output
    assert tree(tmp_path) == before


def test_defaults_render_the_value_opgen_parsed(opgen, tmp_path):
    # copier's Jinja once re-read '0x10' as 0.0; the value opgen parsed is what renders.
    result = opgen("new", "hex_default", "--defaults", "--signature", "x: Tensor, alpha: float = 0x10")
    assert result.exit_code == 0, result.output
    project = tmp_path / "hex_default"
    assert "alpha: float = 16.0" in (project / "hex_default" / "hex_default.py").read_text()
    # The schema gives no default (test_compile_cache.py says why): the API passes it.
    library = (project / "csrc" / "library.cpp").read_text()
    assert 'm.def("hex_default(Tensor x, float alpha) -> Tensor");' in library
    [op] = yaml.safe_load((project / ".copier-answers.yml").read_text())["ops"]
    assert op["params"][1] == {"name": "alpha", "type": "float", "default": 16.0}


@pytest.mark.parametrize("kind", ["elementwise", "pixel", "matmul"])
def test_every_kind_renders_with_defaults(opgen, tmp_path, kind):
    result = opgen("new", f"my_{kind}", "--kind", kind, "--defaults")
    assert result.exit_code == 0, result.output


def test_a_declared_non_differentiable_input_renders_and_says_so(opgen, tmp_path):
    result = opgen("new", "masked", "--defaults", "--signature", "x: Tensor, mask: Tensor",
                   "--forward", "x * mask", "--gradients", "x: mask * grad; mask: non_differentiable")
    assert result.exit_code == 0, result.output
    ops = (tmp_path / "masked" / "masked" / "masked.py").read_text()
    assert "not with respect to\n    mask, which get no gradient (None)" in ops
    tests = (tmp_path / "masked" / "tests" / "test_masked.py").read_text()
    assert 'NON_DIFFERENTIABLE = ["mask"]' in tests
    assert "def test_non_differentiable_inputs_get_no_gradient" in tests


def test_next_steps_work_as_printed(opgen, tmp_path, monkeypatch):
    from opgen import cli

    monkeypatch.setattr(cli, "missing_build_packages", lambda: [])
    result = opgen("new", "my_op", "--defaults")
    assert result.output.splitlines()[1:] == [f"  cd {Path('my_op')}",
                                              "  pip install --no-build-isolation -e . && pytest -q"]
    # Without torch here, the first step installs what the build needs.
    monkeypatch.setattr(cli, "missing_build_packages", lambda: ["torch", "'setuptools>=70.1'"])
    result = opgen("new", "other_op", "--defaults")
    assert result.output.splitlines()[2].startswith("  pip install torch 'setuptools>=70.1'    # not in")
    # --inline: the one file, run from its directory.
    monkeypatch.setattr(cli, "missing_build_packages", lambda: [])
    result = opgen("new", "nb_op", "--defaults", "--inline")
    assert result.output.splitlines()[-2:] == [f"  cd {Path('nb_op')}", "  python nb_op.py"]
    assert (tmp_path / "nb_op" / "nb_op.py").is_file()


def test_questions_are_asked_on_a_terminal(opgen, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from opgen import cli

    monkeypatch.setattr(cli, "stdin_is_a_terminal", lambda: True)
    runner = CliRunner()
    answers = "\n".join(["n", "elementwise", "x: Tensor, y: Tensor", "float32", "same", "y", "x * y", "",
                         "x: y * grad; y: x * grad"]) + "\n"
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli.main, ["new", "asked_op"], input=answers, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [op] = yaml.safe_load((tmp_path / "asked_op" / ".copier-answers.yml").read_text())["ops"]
    assert op["forward"] == "x * y" and op["dtypes"] == ["float32"]
    assert [(g["input"], g["formula"], g["reads"]) for g in op["gradients"]] == [
        ("x", "y * grad", ["y"]), ("y", "x * grad", ["x"])]
    assert op["reference"] == "x * y"  # the default shown: the forward formula


def test_generated_cpp_is_what_its_clang_format_makes_of_it(opgen, tmp_path):
    # A user's `clang-format -i csrc/*` changes nothing, however long the argument lists.
    import clang_format

    opgen("new", "lib", "--op", "wide", "--defaults", "--signature",
          "x: Tensor, y: Tensor, z: Tensor, w: Tensor, a: float, b: float = -3e-5",
          "--forward", "a * x + b * y * z - w",
          "--gradients", "x: a * grad; y: b * z * grad; z: b * y * grad; w: -grad")
    # Every kind: the template's files that copier copies as they are (the row kernels'
    # library) are the formatter's output too.
    for args in (["gray", "--kind", "pixel"], ["mm", "--kind", "matmul"], ["row_norm", "--kind", "rowwise"]):
        assert opgen("add", *args, "--defaults", "-p", "lib").exit_code == 0
    sources = sorted(str(p) for p in (tmp_path / "lib" / "csrc").iterdir())
    assert "row_kernels.cuh" in {Path(s).name for s in sources}
    assert len(sources) == 28  # the elementwise and rowwise ops' vector loops (AVX2, AVX512) and headers too
    result = subprocess.run([clang_format.get_executable("clang-format"), "--dry-run", "--Werror",
                             *sources], cwd=tmp_path / "lib", capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_broken_clang_format_is_one_line_and_writes_nothing(opgen, tmp_path, monkeypatch):
    import clang_format

    # Formatted texts are kept for the process (opgen/formatting.py): none, so that it runs.
    monkeypatch.setattr(formatting, "_FORMATTED", {})
    monkeypatch.setattr(clang_format, "get_executable", lambda name: str(tmp_path / "no-clang-format"))
    result = opgen("new", "my_op", "--defaults")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "clang-format" in result.output and "does not run" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_broken_ruff_is_one_line_and_writes_nothing(opgen, tmp_path, monkeypatch):
    import ruff

    # Formatted texts are kept for the process (opgen/formatting.py): none, so that it runs.
    monkeypatch.setattr(formatting, "_FORMATTED", {})
    monkeypatch.setattr(ruff, "find_ruff_bin", lambda: str(tmp_path / "no-ruff"))
    result = opgen("new", "my_op", "--defaults")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "ruff does not run" in result.output and "pip install" in result.output
    assert list(tmp_path.iterdir()) == []


def test_formulas_divide_and_exp_floats_as_torch_compile_does_unless_exact(opgen, tmp_path):
    # `/` in a formula is divide(): on the GPU the hardware's approximate float division (IEEE's
    # branches on every element), and exp of a float the hardware's approximate 2^x (CUDA's
    # expf, a range reduction more, left a bfloat16 formula 7% behind torch.compile); --exact
    # ops, which match the CPU bit for bit, keep IEEE's division and call no exp at all.
    signature = ("--signature", "x: Tensor, y: Tensor")
    assert opgen("new", "fast_div", "--defaults", *signature, "--forward", "exp(x) / y",
                 "--gradients", "x: grad * exp(x) / y; y: -grad * exp(x) / (y * y)").exit_code == 0
    assert opgen("new", "exact_div", "--defaults", "--exact", *signature, "--forward", "x / y",
                 "--gradients", "x: grad / y; y: -grad * x / (y * y)").exit_code == 0
    fast = (tmp_path / "fast_div" / "csrc" / "fast_div_math.h").read_text()
    exact = (tmp_path / "exact_div" / "csrc" / "exact_div_math.h").read_text()
    assert "return divide(exp(x), y);" in fast and "return divide(-grad * exp(x), y * y);" in fast
    assert "return divide(x, y);" in exact and "return divide(-grad * x, y * y);" in exact
    assert 'asm("ex2.approx.ftz.f32' in fast and "ex2.approx" not in exact
    assert 'asm("div.full.f32' in fast and "div.full" not in exact


def test_an_exact_op_calls_no_function_the_cpu_and_cuda_round_differently(opgen, tmp_path):
    # Its generated test compares the devices bit for bit: on an H200 it failed for exp, log1p,
    # tanh, rsqrt and pow(x, 0.5), in float32 and float64 (tests/perf/exact_functions_h200.txt).
    result = opgen("new", "exact_exp", "--defaults", "--exact", "--no-backward", "--signature", "x: Tensor",
                   "--forward", "tanh(x) + pow(x, 17) + exp(x)")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert ("--forward 'tanh(x) + pow(x, 17) + exp(x)' calls tanh(), pow(), exp(), which the CPU's C library "
            "and CUDA round differently in the last bit, so --exact cannot hold; drop --exact, or use only "
            "+ - * /, sqrt, fma, pow(x, n) for an integer n up to 16") in result.output
    assert not (tmp_path / "exact_exp").exists()
    # What both round alike (or not at all), and an integer power by multiplications.
    assert opgen("new", "exact_ok", "--defaults", "--exact", "--no-backward", "--signature", "x: Tensor",
                 "--forward", "sqrt(fabs(x)) + pow(x, 16) - pow(x, -2) + fma(x, x, floor(x))").exit_code == 0
    # Without --exact, the same formula is fine.
    assert opgen("new", "fast_exp", "--defaults", "--no-backward", "--signature", "x: Tensor",
                 "--forward", "tanh(x) + pow(x, 17) + exp(x)").exit_code == 0
