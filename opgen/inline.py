"""`opgen new NAME --inline`: one op's project assembled into one Python file.

The project is rendered as usual; this module then takes its files apart and writes
NAME.py: the toolchain code, each C++/CUDA file as a string constant (its description
comment and `#pragma once` dropped, its includes of the project's own headers replaced by
joining the constants in `build()`), the Python API and the reference, with the imports
of all of them once at the top. Nothing in it speaks of a file that the user does not have.
The file is formatted as the project's Python is (formatting.ruff_format, with the project's
pyproject.toml), so that ruff changes nothing in it either.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from .formatting import ruff_format
from .spec import SpecError

# A project's files by op name, and the constant each becomes in the inline file. Not
# csrc/_C.cpp: load_inline loads the library itself, without a Python module.
CPP_CONSTANTS = (
    ("csrc/{op}_math.h", "FORMULAS"),
    ("csrc/{op}_kernel.h", "LAUNCHERS"),
    ("csrc/{op}_kernel.cu", "KERNELS"),
    ("csrc/{op}.cpp", "GLUE"),
    ("csrc/{op}_autograd.cpp", "AUTOGRAD"),
    ("csrc/library.cpp", "SCHEMAS"),
)
INLINE_TEMPLATE = "templates/kinds/common/inline.py.jinja"
# Files of a project that the inline file builds without (its C++ is one file, and the vector
# loops need files of their own), and how its comments speak of them instead.
ABSENT_FILES = (("csrc/{op}_cpu_loops.h", "a project's vector loops"),
                ("csrc/{op}_cpu_avx2.cpp", "a project's AVX2 file"),
                ("csrc/{op}_cpu_avx512.cpp", "its AVX512 file"),
                ("csrc/cpu_lanes.h", "in a project's vector loops"))


def cpp_source(text: str) -> str:
    """A C++ file as a string constant's text: no file comment, no local includes."""
    lines = text.splitlines()
    while lines and (lines[0].startswith("//") or not lines[0].strip()):
        lines.pop(0)  # the comment that describes the file in its project
    kept = [line for line in lines
            if line.strip() != "#pragma once" and not re.match(r'#include "[^"/]+"$', line.strip())]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept).strip("\n")) + "\n"


def python_parts(text: str) -> tuple[list[str], str]:
    """A module's top-level imports (but __future__'s and relative ones) and the rest of it."""
    tree = ast.parse(text)
    lines = text.splitlines()
    drop: set[int] = set()
    imports = []
    for index, node in enumerate(tree.body):
        is_docstring = (index == 0 and isinstance(node, ast.Expr)
                        and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str))
        if isinstance(node, (ast.Import, ast.ImportFrom)) or is_docstring:
            drop.update(range(node.lineno - 1, node.end_lineno))
            relative = isinstance(node, ast.ImportFrom) and (node.level or node.module == "__future__")
            if not is_docstring and not relative:
                imports.append(ast.get_source_segment(text, node))
    body = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    return imports, re.sub(r"\n{3,}", "\n\n\n", body.strip("\n")) + "\n"


def unique_imports(imports: list[str]) -> str:
    """The imports once each; ruff orders and groups them when the file is formatted."""
    return "\n".join(sorted(set(imports))) + "\n"


def assemble(project: Path, record: dict[str, Any], template_root: Path) -> str:
    """The text of NAME.py for the rendered one-op project `project`."""
    package = record["package"]
    [op] = record["ops"]
    name = op["name"]
    sources = {constant: cpp_source((project / path.format(op=name)).read_text())
               for path, constant in CPP_CONSTANTS if (project / path.format(op=name)).is_file()}
    toolchain_imports, toolchain = python_parts((project / package / "_toolchain.py").read_text())
    placeholder = ("# The package this file is in: the op project's name, for messages.\n"
                   "NAME = Path(__file__).resolve().parent.name")
    assert placeholder in toolchain, "the toolchain names its package another way"
    toolchain = toolchain.replace(placeholder, f'NAME = "{package}"  # in messages')
    api_imports, api = python_parts((project / package / f"{name}.py").read_text())
    reference_imports, reference = python_parts((project / package / f"{name}_reference.py").read_text())
    # Comments name the project's C++ files; here those are the constants.
    for path, constant in (*CPP_CONSTANTS, *ABSENT_FILES):
        api = api.replace(path.format(op=name), constant)
        sources = {key: text.replace(path.format(op=name), constant) for key, text in sources.items()}
    text = _render(template_root, package=package, op=op, exact=record["exact"], sources=sources,
                   toolchain=toolchain, api=api, reference=reference,
                   imports=unique_imports(["import os", "import torch", "from torch import Tensor",
                                           *toolchain_imports, *api_imports, *reference_imports]))
    text = ruff_format(text, (project / "pyproject.toml").read_text(), f"{package}.py")
    # The op's function is one of the file's top-level names: no other may have its name.
    clash = [name for name in top_level_names(text) if name == op["name"]]
    if len(clash) > 1:
        raise SpecError(f"op name {op['name']!r} is also a name the --inline file defines for "
                        "itself (its build or self-test code); choose another name, or make a "
                        "project without --inline")
    return text


def _render(template_root: Path, **context: Any) -> str:
    import jinja2  # copier's own dependency; imported only when an inline file is made

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(template_root),
                                     keep_trailing_newline=True, autoescape=False)
    return environment.get_template(INLINE_TEMPLATE).render(**context)


def top_level_names(text: str) -> list[str]:
    """Every name a module binds at its top level, once per binding."""
    names = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [target.id for target in targets if isinstance(target, ast.Name)]
    return names
