"""The tests' compiler (tests/torch_headers_cxx.py) gives its precompiled torch headers to the
generated glue only: a file it missed builds slowly, one it wrongly took builds differently."""

from __future__ import annotations

from pathlib import Path

from . import torch_headers_cxx

REFERENCE_OPS = Path(__file__).resolve().parent.parent / "reference_ops"


def test_the_glue_of_every_reference_op_gets_the_headers_and_nothing_else_does():
    taken, left = set(), set()
    for source in sorted(REFERENCE_OPS.glob("*/csrc/*.cpp")):
        (taken if torch_headers_cxx.starts_with_torch(str(source)) else left).add(source)
    stable = set(REFERENCE_OPS.glob("*_stable/csrc/*.cpp"))
    cpu_loops = {p for p in REFERENCE_OPS.glob("*/csrc/*_cpu_avx*.cpp")}
    modules = set(REFERENCE_OPS.glob("*/csrc/_C.cpp"))
    assert left == stable | cpu_loops | modules
    # Each torch-ABI project's schemas, and each op's glue and (where it has one) autograd.
    torch_abi = [p for p in REFERENCE_OPS.iterdir() if p.is_dir() and not p.name.endswith("_stable")]
    assert {p for p in taken if p.name == "library.cpp"} == {p / "csrc" / "library.cpp" for p in torch_abi}
    assert REFERENCE_OPS / "layer_norm" / "csrc" / "layer_norm_autograd.cpp" in taken


def test_the_key_is_every_flag_but_the_files_of_one_compile():
    compile_ = ["-MMD", "-MF", "build/x.o.d", "-O3", "-DWITH_CUDA", "-c", "csrc/x.cpp", "-o", "build/x.o",
                "-std=c++20"]
    assert torch_headers_cxx.header_flags(compile_) == ["-O3", "-DWITH_CUDA", "-std=c++20"]


def test_an_empty_include_directory_does_not_make_another_header(tmp_path):
    # Each xdist worker's venv adds its own empty include directory to the flags.
    worker_0, worker_1, headers = tmp_path / "gw0", tmp_path / "gw1", tmp_path / "headers"
    for directory in (worker_0, worker_1, headers):
        (directory / "python3.11").mkdir(parents=True)  # as a venv's include directory
    def key(include: Path) -> str:
        return torch_headers_cxx.key(["-O3", f"-I{include}", "-std=c++20"])

    assert key(worker_0) == key(worker_1)
    # One that holds headers does: they may be another torch's.
    (headers / "python3.11" / "torch.h").write_text("")
    assert key(headers) != key(worker_0)
