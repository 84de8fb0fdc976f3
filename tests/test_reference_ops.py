"""reference_ops/: exactly what opgen renders, built, tested, and callable as documented."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from opgen import __version__
from opgen.cli import main
from opgen.template_source import TEMPLATE_GIT_URL

from .conftest import HAS_NVCC, pip_install, run_project_tests

REFERENCE_OPS = Path(__file__).resolve().parent.parent / "reference_ops"
OPS = sorted(p.name for p in REFERENCE_OPS.iterdir() if (p / ".copier-answers.yml").is_file())

# Each op called exactly as the source material documents it.
DOCUMENTED_CALLS = {
    "times_two": ("x = torch.randn(1000)", "times_two(x)", "2 * x"),
    "vector_add": ("a, b = torch.randn(1000), torch.randn(1000)", "vector_add(a, b)", "a + b"),
    "relu": ("x = torch.randn(1000)", "relu(x)", "torch.clamp(x, min=0)"),
    "fused_axpby": ("a, x, b = 1.5, torch.randn(1000), torch.randn(1000)", "fused_axpby(a, x, b)",
                    "a * x + b"),
    # The same op built on torch's stable ABI (opgen new --abi stable).
    "fused_axpby_stable": ("a, x, b = 1.5, torch.randn(1000), torch.randn(1000)", "fused_axpby(a, x, b)",
                           "a * x + b"),
    "normalize_volume": ("vol = torch.randint(0, 65536, (4, 5, 6)).to(torch.uint16); max_val = 65535.0",
                         "normalize_volume(vol, max_val)", "vol.float() / max_val"),
    "rgb_to_gray": ("img = torch.randint(0, 256, (4, 5, 3)).to(torch.uint8)", "rgb_to_gray(img)",
                    "(0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]).to(torch.uint8)"),
    "matmul": ("A, B = torch.randn(64, 33), torch.randn(33, 17)", "matmul(A, B)", "A @ B"),
    # The rowwise ops match PyTorch's own.
    "rms_norm": ("x, w = torch.randn(8, 300), torch.randn(300)", "rms_norm(x, w, 1e-6)",
                 "torch.nn.functional.rms_norm(x, [300], w, 1e-6)"),
    "layer_norm": ("x, w, b = torch.randn(8, 300), torch.randn(300), torch.randn(300)",
                   "layer_norm(x, w, b, 1e-5)", "torch.nn.functional.layer_norm(x, [300], w, b, 1e-5)"),
    "softmax": ("x = torch.randn(8, 300)", "softmax(x)", "torch.softmax(x, -1)"),
    # A formula with a transcendental function and literals (issue: literals were doubles).
    "gelu": ("x = torch.randn(1000)", "gelu(x)", "torch.nn.functional.gelu(x, approximate='tanh')"),
    # Two inputs and a transcendental function: SwiGLU's product.
    "silu_mul": ("x, y = torch.randn(1000), torch.randn(1000)", "silu_mul(x, y)",
                 "torch.nn.functional.silu(x) * y"),
    # A custom op (the kernels are the user's): sum-mode embedding bags, as PyTorch's.
    "embedding_bag": ("w = torch.randn(10, 3); i = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]); "
                      "o = torch.tensor([0, 4, 4])", "embedding_bag(w, i, o)",
                      "torch.nn.functional.embedding_bag(i, w, o, mode='sum')"),
}
# The project that holds several of them in one package and library. It is built for the
# CPU only: its ops' CUDA kernels build in their own projects here.
SEVERAL = {"several_ops": [DOCUMENTED_CALLS[op] for op in ("relu", "fused_axpby", "matmul")]}
# The rowwise kernels for rows that fill a block (row_kernel_fit in csrc/row_kernels.cuh) are
# compiled for a number of blocks a multiprocessor, and are fast because each thread's part of
# a row fits the registers that leaves: a change that makes one spill costs it up to a fifth
# of its speed on the GPU (tests/perf/rowwise/NOTES.md), which no test here would see. ptxas
# does: the bytes each may spill for sm_90, (op, dtype, vectors a thread, threads), 0 unless
# named. None is named: since the kernel runs one row a block, nvcc 13.0 spills none of them
# (LayerNorm's float32 512 x 8 spilled 12 bytes with the row loop).
ROWWISE_OPS = ("layer_norm", "rms_norm", "softmax")
FIT_KERNEL_SPILLS: dict[tuple[str, str, int, int], int] = {}
MANGLED_DTYPES = {"f": "float32", "d": "float64", "6__half": "float16", "13__nv_bfloat16": "bfloat16"}
# A small run of one op's benchmark per kind, with --profile: the arguments that make it small.
BENCHMARK_ARGS = {"relu": ["--log2", "10"], "rgb_to_gray": ["--log2", "10"],
                  "matmul": ["--max-size", "256"], "rms_norm": ["--shapes", "64x256"],
                  "embedding_bag": ["--sizes", "1024"]}
# Integer results may truncate one below where the float expression rounds differently;
# sums of products accumulate in another order than PyTorch's.
TOLERANCES = {"rgb_to_gray": ", atol=1, rtol=0", "matmul": ", atol=1e-4, rtol=1e-4",
              **dict.fromkeys(["rms_norm", "layer_norm", "softmax", "gelu", "silu_mul"],
                             ", atol=1e-5, rtol=1e-5")}


def test_every_documented_op_is_here():
    assert set(DOCUMENTED_CALLS) | set(SEVERAL) <= set(OPS)


def test_the_documented_regen_check_runs_as_written():
    # README: `opgen regen --check reference_ops/*/`: every directory there is a project.
    directories = sorted(str(p) + "/" for p in REFERENCE_OPS.iterdir() if p.is_dir())
    result = CliRunner().invoke(main, ["regen", "--check", *directories])
    assert result.exit_code == 0, result.output


def test_reference_ops_are_exactly_what_opgen_renders():
    result = CliRunner().invoke(main, ["regen", "--check", *(str(REFERENCE_OPS / op) for op in OPS)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("op", OPS)
def test_answers_record_no_machine_path(op):
    answers = yaml.safe_load((REFERENCE_OPS / op / ".copier-answers.yml").read_text())
    assert answers["_src_path"] == TEMPLATE_GIT_URL
    assert answers["_commit"] == f"v{__version__}"
    assert answers["package"] == op


def test_regen_check_finds_a_hand_edit_and_changes_nothing(tmp_path):
    project = tmp_path / "relu"
    shutil.copytree(REFERENCE_OPS / "relu", project)
    kernel = project / "csrc" / "relu_kernel.cu"
    kernel.write_text(kernel.read_text() + "// a hand edit\n")
    (project / "README.md").unlink()
    edited = kernel.read_text()

    check = CliRunner().invoke(main, ["regen", "--check", str(project)])
    assert check.exit_code == 1
    assert f"{kernel}: differs from the template" in check.output
    assert f"{project / 'README.md'}: missing" in check.output
    assert "1 of 1 project(s) differ" in check.output
    assert kernel.read_text() == edited and not (project / "README.md").exists()

    assert CliRunner().invoke(main, ["regen", str(project)]).exit_code == 0
    assert kernel.read_text() == (REFERENCE_OPS / "relu" / "csrc" / "relu_kernel.cu").read_text()
    assert CliRunner().invoke(main, ["regen", "--check", str(project)]).exit_code == 0


def test_regen_refuses_a_directory_without_answers(tmp_path):
    result = CliRunner().invoke(main, ["regen", str(tmp_path)])
    assert result.exit_code == 2 and "has no .copier-answers.yml" in result.output


@pytest.mark.parametrize("op", OPS)
def test_reference_op_builds_passes_its_tests_and_runs_as_documented(op, python, tmp_path):
    project = tmp_path / op
    shutil.copytree(REFERENCE_OPS / op, project)
    # One arch: this compiles the kernels, it does not run them (no GPU here), and each arch
    # costs a rowwise op about a minute; the default archs are built by test_generated_project.
    build_env = {"USE_CUDA": "0"} if op in SEVERAL else {"TORCH_CUDA_ARCH_LIST": "9.0"}
    if op in ROWWISE_OPS:
        build_env["NVCC_APPEND_FLAGS"] = "-Xptxas=-v"  # each kernel's registers and spills
    # As users build them: every kind's glue, each file with its own includes only.
    log = pip_install(python, project, as_users_build=True, **build_env)
    if HAS_NVCC and op not in SEVERAL:
        assert f"{op}: building CUDA kernels with" in log
    if HAS_NVCC and op in ROWWISE_OPS:
        spills = fit_kernel_spills(log)
        assert spills, "ptxas printed no row_kernel_fit: " + log[-3000:]
        too_many = {layout: b for layout, b in spills.items() if b > FIT_KERNEL_SPILLS.get((op, *layout), 0)}
        assert not too_many, f"{op}: row_kernel_fit spills (bytes, by dtype, vectors, threads): {too_many}"
    result = run_project_tests(python, project)
    assert result.returncode == 0, result.stdout[-5000:]
    calls = SEVERAL.get(op, [DOCUMENTED_CALLS[op]] if op in DOCUMENTED_CALLS else [])
    for setup, call, expected in calls:
        name = call.split("(")[0]
        tolerance = TOLERANCES.get(name, "")
        code = (f"import torch\nfrom {op} import {name}\n{setup}\n"
                f"torch.testing.assert_close({call}, {expected}{tolerance})\nprint('ok')\n")
        # From inside the project, and from beside it, where a user's script next to the
        # project directory imported that directory, of the package's name, as a namespace
        # package ("TypeError: 'module' object is not callable").
        for where in (project, project.parent):
            run = subprocess.run([str(python), "-c", code], cwd=where, capture_output=True, text=True)
            assert run.stdout.strip() == "ok", f"in {where}: {run.stderr}"
    if op in BENCHMARK_ARGS:  # on the CPU: what runs here; on CUDA, gpu_suite.py runs them
        check_benchmark_profile(python, project, op, BENCHMARK_ARGS[op])
    # Every Python snippet of the project's README runs as printed.
    snippets = re.findall(r"```python\n(.*?)```", (project / "README.md").read_text(), re.S)
    assert snippets
    for snippet in snippets:
        run = subprocess.run([str(python), "-c", snippet], cwd=project, capture_output=True, text=True)
        assert run.returncode == 0, snippet + run.stderr[-2000:]


def fit_kernel_spills(log: str) -> dict[tuple[str, int, int], int]:
    """The spill stores ptxas -v reported for each row_kernel_fit<Spec, T, VPT, BLOCK> of a
    build log, by (dtype, VPT, BLOCK)."""
    spills = {}
    for name, stored in re.findall(r"Function properties for (\S*row_kernel_fit\S*)\n"
                                   r"\s*\d+ bytes stack frame, (\d+) bytes spill stores", log):
        dtype, vpt, block = re.search(r"SpecE(\w+?)Li(\d+)ELi(\d+)E", name).groups()
        layout = (MANGLED_DTYPES[dtype], int(vpt), int(block))
        spills[layout] = max(spills.get(layout, 0), int(stored))
    return spills


def check_benchmark_profile(python: Path, project: Path, op: str, size_args: list[str]) -> None:
    """The benchmark runs, and with --profile prints the profiled kernels and writes a trace
    in which each candidate's calls are a named range."""
    trace = project / "trace.json"
    run = subprocess.run([str(python), f"benchmarks/bench_{op}.py", "--device", "cpu", *size_args,
                          "--profile", str(trace)], cwd=project, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"{op}::{op}" in run.stdout  # the op's own call, in the table
    ranges = {event["name"] for event in json.loads(trace.read_text())["traceEvents"]
              if event.get("cat") == "user_annotation"}
    assert {name.split()[0] for name in ranges} >= {"op", "compile"}, ranges


# What each kind's files must not talk about: the other kinds' concepts.
# channels_last is a memory format every kind may speak of, not a pixel op's channels.
FOREIGN_WORDS = {"elementwise": r"pixel|matmul|channel(?!s_last)|rowwise|reduction",
                 "pixel": r"matmul|elementwise|rowwise|reduction",
                 "matmul": r"pixel|channel(?!s_last)|elementwise|_math\.h|rowwise|reduction",
                 "rowwise": r"pixel|matmul|channel(?!s_last)|elementwise",
                 "custom": r"pixel|matmul|channel(?!s_last)|elementwise|rowwise"}


@pytest.mark.parametrize("op", DOCUMENTED_CALLS)  # projects of one op, so of one kind
def test_a_kinds_files_speak_of_that_kind_only(op):
    [record] = yaml.safe_load((REFERENCE_OPS / op / ".copier-answers.yml").read_text())["ops"]
    pattern = re.compile(FOREIGN_WORDS[record["kind"]], re.I)
    for path in sorted((REFERENCE_OPS / op).rglob("*")):
        if path.is_file() and path.suffix in (".py", ".cpp", ".cu", ".h", ".md"):
            found = pattern.search(path.read_text())
            assert not found, f"{path} mentions {found[0]!r}"
