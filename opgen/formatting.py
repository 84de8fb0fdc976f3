"""Generated code, formatted as the project's own formatters would format it.

A user's first `clang-format -i csrc/*` or `ruff format` must change nothing: otherwise
every later template update would conflict with the reformatted lines. Templates cannot
lay out argument lists or expressions of any length as the formatters would, so copier's
output is formatted as it renders: the C++ and CUDA by clang-format with the .clang-format
a project ships, the Python (and the Python code blocks of its README) by ruff with the
settings of the pyproject.toml it ships.
FormattingWorker is copier's Worker with that one change; opgen renders and updates through
it, so that the old and the new version of a project compared during an update are
formatted alike. (A plain `copier update` compares unformatted renders.)
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from functools import cached_property
from pathlib import Path, PurePath

import copier

from .compiled_templates import reuse_compiled_templates

# Top-level template files whose output is C++ or CUDA: everything copier renders into csrc/.
CPP_TEMPLATES = "templates/project/csrc/"
STYLE_FILE = "templates/project/.clang-format"
# What template versions that format have: opgen 0.1.0's template (one op per project)
# rendered its C++ as it was, and an update from it must compare with that render.
FORMATTING_TEMPLATES_HAVE = "templates/kinds"
# The pyproject.toml a project ships: its [tool.ruff] settings format the project's Python.
PYPROJECT_TEMPLATE = "templates/project/pyproject.toml.jinja"
# What template versions that format their Python have: the Python of earlier ones was
# rendered as it was, and an update from one must compare with that render, or every line
# ruff would change conflicts. The macros that wrap prose at the project's line length came
# with the formatting (ruff formats code, never prose), so a template has them exactly where
# its Python is formatted.
PYTHON_FORMATTING_TEMPLATES_HAVE = "templates/kinds/common/prose.jinja"
# The files ruff formats (`ruff format .` in a project): Python modules, and in Markdown the
# Python code blocks (from ruff 0.16 on).
RUFF_FORMATS = (".py", ".md")
# The ruff of opgen's dependencies (pyproject.toml) formats, and its errors say to reinstall it.
RUFF_REQUIREMENT = "ruff>=0.17,<0.18"


# What the formatters made of each text, for this process: `opgen add` renders the project
# twice (the old answers and the new), in which most files come out the same, and a process
# that renders many projects (the tests) formats the same shared files again and again. Keyed
# by everything the result depends on; a formatter's error is raised, never kept.
_FORMATTED: dict[tuple[str, ...], str] = {}
_FORMATTED_KEPT = 2000  # texts: tens of megabytes at most


def _formatted_once(key: tuple[str, ...], format_text: Callable[[], str]) -> str:
    if key not in _FORMATTED:
        if len(_FORMATTED) >= _FORMATTED_KEPT:
            _FORMATTED.clear()
        _FORMATTED[key] = format_text()
    return _FORMATTED[key]


def clang_format(text: str, style_file: Path) -> str:
    """`text` as clang-format formats it with the given style file."""
    # The style file's text, not its path: each render reads the template from a snapshot
    # of its own.
    key = ("clang-format", style_file.read_text(), text)
    return _formatted_once(key, lambda: _run_clang_format(text, style_file))


def _run_clang_format(text: str, style_file: Path) -> str:
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


def ruff_format(text: str, pyproject: str, filename: str) -> str:
    """`text`, the file `filename` of a project whose pyproject.toml is `pyproject`, as ruff
    leaves it: a module's imports sorted (`ruff check --select I --fix`), then `ruff format`
    (which formats a module, and the Python code blocks of a Markdown file)."""
    key = ("ruff", pyproject, filename, text)
    return _formatted_once(key, lambda: _run_ruff_format(text, pyproject, filename))


def _run_ruff_format(text: str, pyproject: str, filename: str) -> str:
    with tempfile.TemporaryDirectory(prefix="opgen-ruff-") as tmp:
        config = Path(tmp) / "pyproject.toml"
        config.write_text(pyproject)
        # --stdin-filename: the file's path in the project, for its type and per-file settings.
        common = ["--config", str(config), "--stdin-filename", filename, "-"]
        if filename.endswith(".py"):
            text = _run_ruff(["check", "--select", "I", "--fix-only", "--quiet", *common], text)
        return _run_ruff(["format", *common], text)


def _run_ruff(arguments: list[str], text: str) -> str:
    import ruff  # the ruff wheel: the same binary everywhere

    try:
        executable = ruff.find_ruff_bin()
        result = subprocess.run([executable, *arguments], input=text, capture_output=True,
                                text=True, check=False)
    except OSError as error:  # ValueError: opgen's renderers report it in one line
        raise ValueError(f"ruff does not run: {error.strerror or error}; reinstall opgen's "
                         f"dependencies: pip install --force-reinstall '{RUFF_REQUIREMENT}'") from None
    if result.returncode != 0:
        # A parse error names the module and the line: a template rendered invalid Python.
        message = " ".join(result.stderr.split())
        raise ValueError(f"ruff failed on generated code: {message}")
    return result.stdout


class _FormattedTemplate:
    """A Jinja template whose rendered text comes out formatted by `formatter(text, context)`."""

    def __init__(self, template, formatter):
        self._template, self._formatter = template, formatter

    def render(self, *args, **kwargs) -> str:
        context = dict(*args, **kwargs)
        return self._formatter(self._template.render(context), context)


class FormattingWorker(copier.Worker):
    """copier's Worker, formatting each C++/CUDA, Python and Markdown file it renders."""

    def _render_file(self, src_relpath: Path, dst_relpath: Path, extra_context=None) -> None:
        # Which formatter a file takes shows in the name it renders to, which only copier
        # knows here (`{{ op.name ~ "_reference.py" if ... }}` names no file for some ops).
        self._rendering = (src_relpath.as_posix(), PurePath(dst_relpath))
        try:
            return super()._render_file(src_relpath, dst_relpath, extra_context)
        finally:
            self._rendering = None

    @cached_property
    def jinja_env(self):
        environment = copier.Worker.jinja_env.func(self)
        reuse_compiled_templates(environment)
        root = Path(self.template.local_abspath)
        formats_cpp = (root / FORMATTING_TEMPLATES_HAVE).is_dir()
        formats_python = (root / PYTHON_FORMATTING_TEMPLATES_HAVE).is_file()
        style_file = root / STYLE_FILE
        get_template = environment.get_template

        def format_cpp(text: str, context: dict) -> str:
            return clang_format(text, style_file)

        def format_with_ruff(text: str, context: dict) -> str:
            # The settings of the pyproject.toml this same render writes into the project:
            # its line length, target version and first-party package.
            pyproject = get_template(PYPROJECT_TEMPLATE).render(context)
            return ruff_format(text, pyproject, self._rendering[1].as_posix())

        def get_formatted_template(name, *args, **kwargs):
            template = get_template(name, *args, **kwargs)
            # Only whole files: the partials they include are formatted as part of them.
            rendering = getattr(self, "_rendering", None)
            if not rendering or name != rendering[0]:
                return template
            if formats_cpp and name.startswith(CPP_TEMPLATES):
                return _FormattedTemplate(template, format_cpp)
            if formats_python and rendering[1].suffix in RUFF_FORMATS:
                return _FormattedTemplate(template, format_with_ruff)
            return template

        environment.get_template = get_formatted_template
        return environment
