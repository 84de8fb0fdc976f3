"""The generated projects' `_toolchain.py`, rendered from opgen's template and loaded.

`opgen doctor` answers "what would a build here use" with the code a generated project
builds with (how it finds the CUDA toolkit, which archs it builds by default), not with
a copy of it that could drift.
"""

from __future__ import annotations

import types
from functools import cache

import jinja2

from .template_source import template_root

TOOLCHAIN_TEMPLATE = "templates/project/{{op_name}}/_toolchain.py.jinja"


@cache
def load() -> types.ModuleType:
    root, _ = template_root()
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(root), keep_trailing_newline=True)
    source = environment.get_template(TOOLCHAIN_TEMPLATE).render(op_name="opgen_doctor", exact=False)
    module = types.ModuleType("opgen_project_toolchain")
    exec(compile(source, str(root / TOOLCHAIN_TEMPLATE), "exec"), module.__dict__)
    # It tells a build what it skips, on stderr; doctor reports the same itself.
    module.say = lambda message: None
    return module
