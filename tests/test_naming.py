"""Which op names opgen accepts, and what it says about the others."""

import re
import shutil
import subprocess
import sys
import unicodedata

import pytest

from opgen.naming import name_problem

# This machine's nvcc (a wrapper script in /usr/local/bin on CI), else the toolkit's.
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


@pytest.mark.parametrize("name", ["my_op", "relu", "fused_axpby", "op2", "a", "rgb_to_gray"])
def test_accepts_lower_snake_case_identifiers(name):
    assert name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "empty"),
        ("MyOp", "lower snake case; use a-z, 0-9 and _, starting with a letter, e.g. my_op"),
        ("my-op", "e.g. my_op"),
        ("1op", "lower snake case"),
        ("_op", "lower snake case"),
        ("my op", "lower snake case"),
        ("my__op", "double underscore"),
        ("class", "Python keyword"),
        ("match", "Python keyword"),
        ("delete", "C++ keyword"),
        ("namespace", "C++ keyword"),
        ("torch", "shadow the package"),
        ("numpy", "shadow the package"),
        ("triton", "shadow the package"),
        ("aten", "shadow the package or namespace"),
        ("os", "standard library"),
        ("json", "standard library"),
        ("typing", "standard library"),
        ("setuptools", "shadow the package"),
        ("setup", "the module of every generated project's setup.py"),
        ("pytest", "shadow the package"),
        ("torchvision", "shadow the package"),
        ("sys", "standard library"),
        ("m\u0430tmul", "non-ASCII"),  # Cyrillic a
        ("\uff4d\uff59_op", "non-ASCII"),  # fullwidth "my"
        ("\ufb01lter", "non-ASCII"),  # the "fi" ligature: Python's NFKC makes it "filter"
        ("op\u00b2", "non-ASCII"),  # superscript two: NFKC makes it "op2", another package
        ("\u212aernel", "non-ASCII"),  # Kelvin sign, NFKC "K"
        ("a\\b", "is a path"),
        ("$(id)", "lower snake case"),
        ("`id`", "lower snake case"),
        ("my_op;id", "lower snake case"),
        ("my_op|id", "lower snake case"),
        ("my_op&", "lower snake case"),
        ("my_op\n", "lower snake case"),
        ("{{op}}", "lower snake case"),
        ("{%op%}", "lower snake case"),
        ("caf\u00e9", "non-ASCII"),
        ("../evil", "is a path"),
        ("a/b", "is a path"),
        ("..", "is a path"),
        ("x" * 65, "longer than 64"),
    ],
)
def test_refuses_with_a_reason(name, says):
    problem = name_problem(name)
    assert problem is not None and says in problem
    assert "\n" not in problem


def test_refuses_every_standard_library_module_name():
    names = [name for name in sys.stdlib_module_names if re.fullmatch(r"[a-z][a-z0-9_]*", name)]
    assert len(names) > 100
    assert [name for name in names if name_problem(name) is None] == []


def test_names_that_nfkc_changes_are_refused():
    # Python normalises identifiers with NFKC, so such a name imports as another one.
    for name in ["\uff4d\uff59_op", "\ufb01lter", "op\u00b2", "\u212aernel", "\u2168"]:
        assert unicodedata.normalize("NFKC", name) != name
        assert "non-ASCII" in name_problem(name)


@pytest.mark.parametrize("name", ["norm", "rsqrt", "sin", "index"])
def test_refuses_the_names_of_c_and_cuda_functions_that_a_namespace_cannot_take(name, tmp_path):
    # The op's C++ namespace beside the functions the generated .cu files see: nvcc refuses
    # it ('"norm" has already been declared in the current scope'), so opgen must first.
    assert f"op name {name!r} is a function of the C library or CUDA" in name_problem(name)
    source = tmp_path / "clash.cu"
    for candidate, compiles in ((name, False), (f"{name}_op", True)):
        source.write_text("#include <cuda_runtime.h>\n#include <cmath>\n#include <cstring>\n"
                          f"namespace {candidate} {{\nint k = 1;\n}}\n")
        result = subprocess.run([NVCC, "-c", str(source), "-o", str(tmp_path / "clash.o")],
                                capture_output=True, text=True)
        assert (result.returncode == 0) == compiles, (candidate, result.stderr[-2000:])
