"""Which op names opgen accepts, and what it says about the others."""

import pytest

from opgen.naming import name_problem


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
        ("m\u0430tmul", "non-ASCII"),  # Cyrillic a
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
