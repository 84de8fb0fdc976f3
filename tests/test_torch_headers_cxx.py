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
    stable = {p for p in REFERENCE_OPS.glob("*/csrc/*.cpp") if p.parts[-3].endswith("_stable")}
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
