"""Generated C++ and CUDA, formatted by clang-format with the .clang-format a project ships.

A user's first `clang-format -i csrc/*` must change nothing: otherwise every later
template update would conflict with the reformatted lines. Templates cannot lay out
argument lists of any length as clang-format would, so copier's output is formatted as it
renders. FormattingWorker is copier's Worker with that one change; opgen renders and
updates through it, so that the old and the new version of a project compared during an
update are formatted alike. (A plain `copier update` compares unformatted renders.)
"""

from __future__ import annotations

import subprocess
from functools import cached_property
from pathlib import Path

import copier

# Top-level template files whose output is C++ or CUDA: everything copier renders into csrc/.
CPP_TEMPLATES = "templates/project/csrc/"
STYLE_FILE = "templates/project/.clang-format"
# What template versions that format have: opgen 0.1.0's template (one op per project)
# rendered its C++ as it was, and an update from it must compare with that render.
FORMATTING_TEMPLATES_HAVE = "templates/kinds"


def clang_format(text: str, style_file: Path) -> str:
    """`text` as clang-format formats it with the given style file."""
    import clang_format as package  # the clang-format wheel: the same binary everywhere

    executable = package.get_executable("clang-format")
    try:
        result = subprocess.run(
            [executable, f"--style=file:{style_file}", "--assume-filename=source.cu"],
            input=text, capture_output=True, text=True, check=False)
    except OSError as error:  # ValueError: opgen's renderers report it in one line
        raise ValueError(f"clang-format ({executable}) does not run: {error.strerror}; "
                         "reinstall opgen's dependencies: pip install --force-reinstall "
                         "'clang-format>=23.1,<24'") from None
    if result.returncode != 0:
        raise ValueError(f"clang-format failed on generated code: {result.stderr.strip()}")
    return result.stdout


class _FormattedTemplate:
    """A Jinja template whose rendered text comes out formatted."""

    def __init__(self, template, style_file: Path):
        self._template, self._style_file = template, style_file

    def render(self, *args, **kwargs) -> str:
        return clang_format(self._template.render(*args, **kwargs), self._style_file)


class FormattingWorker(copier.Worker):
    """copier's Worker, formatting each C++/CUDA file it renders."""

    @cached_property
    def jinja_env(self):
        environment = copier.Worker.jinja_env.func(self)
        root = Path(self.template.local_abspath)
        if not (root / FORMATTING_TEMPLATES_HAVE).is_dir():
            return environment
        style_file = root / STYLE_FILE
        get_template = environment.get_template

        def get_formatted_template(name, *args, **kwargs):
            template = get_template(name, *args, **kwargs)
            # Only whole files: the partials they include are formatted as part of them.
            if isinstance(name, str) and name.startswith(CPP_TEMPLATES):
                return _FormattedTemplate(template, style_file)
            return template

        environment.get_template = get_formatted_template
        return environment
