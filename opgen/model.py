"""A project: its package, settings and ops, as opgen renders and records it.

The answers file of a project records this as data (`package`, `exact`, `abi`, and
`ops`, a list of op records made by answers.collect_op). Reading it back goes through
the same parser that `opgen new` uses, so a hand-edited or older answers file is
refused, naming what is wrong, before anything renders.
"""

from __future__ import annotations

from typing import Any

from .answers import OP_OPTIONS, collect_op, options_of
from .kinds import STABLE_KINDS
from .naming import name_problem
from .spec import SpecError

# Files each op gets, by op name; one op's files must not be another's (add refuses those).
OP_FILES = ("csrc/{op}.cpp", "csrc/{op}_cpu_loops.h", "csrc/{op}_cpu_avx2.cpp",
            "csrc/{op}_cpu_avx512.cpp", "csrc/{op}_kernel.cu", "csrc/{op}_kernel.h", "csrc/{op}_math.h",
            "csrc/{op}_autograd.cpp", "{package}/{op}.py", "{package}/{op}_reference.py",
            "tests/test_{op}.py", "benchmarks/bench_{op}.py")
# Names the package's shared files take, which no op may have.
SHARED_NAMES = frozenset({"library"})
# The C++ interfaces a project's library can be built on: torch's own (the library loads
# only under the torch it was built with) or the stable ABI (torch >= 2.10: one build loads
# under every later torch). The first is the default.
ABIS = ("torch", "stable")


def project_record(package: str, ops: list[dict[str, Any]], *, exact: bool = False,
                   abi: str = "torch") -> dict[str, Any]:
    """The answers copier renders a project from and records; checked as a whole."""
    problem = name_problem(package)
    if problem:
        raise SpecError(problem)
    if abi not in ABIS:
        raise SpecError(f"abi {abi!r} is not one of {', '.join(ABIS)}; use torch (the default) or stable")
    if abi == "stable":
        for op in ops:
            if op["kind"] not in STABLE_KINDS:
                ready = ", ".join(STABLE_KINDS[:-1]) + " and " + STABLE_KINDS[-1]
                raise SpecError(f"op {op['name']!r} is a {op['kind']} op, whose glue is not written on the "
                                f"stable ABI yet (only {ready} ops are); use --abi torch, the default")
    names = [op["name"] for op in ops]
    if len(set(names)) != len(names):
        duplicate = next(n for n in names if names.count(n) > 1)
        raise SpecError(f"the project already has an op named {duplicate!r}; choose another name")
    for name in names:
        if name in SHARED_NAMES:
            raise SpecError(f"op name {name!r} is taken by the project's own csrc/{name}.cpp; choose another")
        clash = next((other for other in names if other != name and
                      _files(package, other) & _files(package, name)), None)
        if clash:
            shared = sorted(_files(package, clash) & _files(package, name))[0]
            what = f"the build's object {shared}" if shared.endswith(".o") else shared
            raise SpecError(f"ops {name!r} and {clash!r} would write the same file, {what}; rename one")
    # An op with a backward registers NAME_backward beside NAME in torch.ops.PACKAGE.
    for op in ops:
        if op["backward"] and f"{op['name']}_backward" in names:
            raise SpecError(f"op {op['name']!r} registers {op['name']}_backward for its gradients, "
                            f"so no op may be named {op['name']}_backward; choose another name")
    return {"package": package, "exact": exact, "abi": abi, "ops": ops}


def _files(package: str, op: str) -> set[str]:
    files = {path.format(package=package, op=op) for path in OP_FILES}
    # A source compiles to an object named by its stem: op a's csrc/a_kernel.cu and op a_kernel's
    # csrc/a_kernel.cpp would both be the build's csrc/a_kernel.o.
    return files | {path.rsplit(".", 1)[0] + ".o" for path in files if path.endswith((".cpp", ".cu"))}


def read_project(answers: dict[str, Any]) -> dict[str, Any]:
    """The project record of a recorded answers file, checked again by the current opgen.

    Projects made before opgen recorded ops (one op; `op_name`, `signature`, ... at the top
    level) are read as a one-op project of that name.
    """
    if "ops" not in answers and "op_name" in answers:
        given = {key: answers[key] for key in OP_OPTIONS if key in answers}
        name = answers["op_name"]
        if not isinstance(name, str):
            raise SpecError(f"op_name {name!r} is not a name; restore the answers file from git")
        op = collect_op(name, given, exact=bool(answers.get("exact")))
        return project_record(name, [op], exact=bool(answers.get("exact")))  # made before --abi
    package, ops = answers.get("package"), answers.get("ops")
    if not isinstance(package, str) or not isinstance(ops, list) or not ops:
        raise SpecError("it records no package and ops; restore it from git")
    exact = bool(answers.get("exact"))
    # Projects made before opgen recorded the ABI are built on torch's.
    abi = answers.get("abi", "torch")
    checked = []
    for index, op in enumerate(ops):
        try:
            checked.append(collect_op(op["name"], options_of(op), exact=exact))
        except (KeyError, TypeError, AttributeError) as error:
            raise SpecError(f"op {index + 1} is malformed ({type(error).__name__}: {error}); "
                            "restore the answers file from git") from None
        except SpecError as error:
            raise SpecError(f"op {op['name']!r}: {error}") from None
    return project_record(package, checked, exact=exact, abi=abi)
