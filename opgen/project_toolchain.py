"""The generated projects' `_toolchain.py`, imported from opgen's template.

`opgen doctor` answers "what would a build here use" with the code a generated project
builds with (how it finds the CUDA toolkit, which archs it builds by default), not with
a copy of it that could drift. The file is plain Python, copied into projects as it is.
"""

from __future__ import annotations

import importlib.util
import types
from functools import cache

from .template_source import template_root

TOOLCHAIN = "templates/project/{{package}}/_toolchain.py"


@cache
def load() -> types.ModuleType:
    root, _ = template_root()
    spec = importlib.util.spec_from_file_location("opgen_project_toolchain", root / TOOLCHAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # It tells a build what it skips, on stderr; doctor reports the same itself.
    module.say = lambda message: None
    return module
