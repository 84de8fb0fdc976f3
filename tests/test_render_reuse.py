"""What a render reuses from the renders before it: the compiled templates (in the process and
between processes, opgen/compiled_templates.py) and the formatted files (in the process,
opgen/formatting.py)."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from opgen import compiled_templates, formatting
from opgen.cli import main
from tests.conftest import render, tree

# Ops of every kind in one project: their files, and file names, come from every template.
OPS = [
    ["--kind", "pixel"],
    ["--kind", "matmul"],
    ["--kind", "rowwise", "--preset", "add_rmsnorm"],
    ["--kind", "custom", "--signature", "x: Tensor", "--returns", "out: like x"],
]


def render_library(where, name):
    project = render(where, name, "--op", "scale")
    for i, options in enumerate(OPS):
        try:
            main(["add", f"op_{i}", *options, "--defaults", "-p", str(project)])
        except SystemExit as exit_:
            assert exit_.code in (0, None)
    return project


def test_a_second_render_compiles_no_template_and_renders_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(compiled_templates, "_COMPILED", {})
    monkeypatch.setattr(compiled_templates, "_on_disk", lambda: None)  # the process's memory only
    first = render_library(tmp_path / "first", "lib")
    # (a template's name, or None for a file's name)
    assert parsed_while(monkeypatch, lambda: render_library(tmp_path / "second", "lib")) == []
    second = tmp_path / "second" / "lib"
    assert tree(first) == tree(second)


def test_a_second_render_runs_no_formatter_and_renders_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(formatting, "_FORMATTED", {})
    first = render_library(tmp_path / "first", "lib")
    runs = []  # of clang-format and ruff (opgen runs git too, to locate the template)
    run = formatting.subprocess.run

    def counted_run(command, *args, **kwargs):
        if Path(command[0]).name in ("clang-format", "ruff"):
            runs.append(command)
        return run(command, *args, **kwargs)

    monkeypatch.setattr(formatting.subprocess, "run", counted_run)
    second = render_library(tmp_path / "second", "lib")
    assert runs == []
    assert tree(first) == tree(second)


@pytest.mark.parametrize("block", ["{%", "<%"])
def test_environments_of_another_syntax_do_not_share_code(block):
    # The same text is a statement in one syntax and plain text in the other.
    source = "<% if true %>yes<% endif %>{% if true %}no{% endif %}"
    environments = [jinja2.Environment(), jinja2.Environment(block_start_string="<%", block_end_string="%>")]
    for environment in environments:
        compiled_templates.reuse_compiled_templates(environment)
    if block == "<%":
        environments.reverse()
    rendered = {env.block_start_string: env.from_string(source).render() for env in environments}
    assert rendered == {"{%": "<% if true %>yes<% endif %>no", "<%": "yes{% if true %}no{% endif %}"}


def parsed_while(monkeypatch, action) -> list:
    """The names of the templates Jinja parsed (compiling starts there) while action ran."""
    parses = []
    parse = jinja2.Environment._parse

    def counted_parse(environment, source, name, filename):
        parses.append(name)
        return parse(environment, source, name, filename)

    with monkeypatch.context() as patch:
        patch.setattr(jinja2.Environment, "_parse", counted_parse)
        action()
    return parses


def test_a_new_process_compiles_no_template_that_an_earlier_one_did(tmp_path, monkeypatch):
    (tmp_path / "cache").mkdir()
    cache_in = jinja2.FileSystemBytecodeCache  # in place of Jinja's directory in the temp dir
    cache = cache_in(str(tmp_path / "cache"))
    monkeypatch.setattr(compiled_templates, "_on_disk", lambda: cache)
    monkeypatch.setattr(compiled_templates, "_COMPILED", {})
    first = render(tmp_path / "first", "my_op")
    assert list((tmp_path / "cache").iterdir())
    monkeypatch.setattr(compiled_templates, "_COMPILED", {})  # as in a new process
    assert parsed_while(monkeypatch, lambda: render(tmp_path / "second", "my_op")) == []
    assert tree(first) == tree(tmp_path / "second" / "my_op")
    # Broken files in the cache are compiled again, and a cache that cannot be written to
    # keeps nothing on disk.
    for cached in (tmp_path / "cache").iterdir():
        cached.write_bytes(cached.read_bytes()[:40] + b"broken")
    monkeypatch.setattr(compiled_templates, "_COMPILED", {})
    assert parsed_while(monkeypatch, lambda: render(tmp_path / "third", "my_op"))
    assert tree(first) == tree(tmp_path / "third" / "my_op")
    gone = cache_in(str(tmp_path / "gone"))
    monkeypatch.setattr(compiled_templates, "_on_disk", lambda: gone)
    monkeypatch.setattr(compiled_templates, "_COMPILED", {})
    assert tree(first) == tree(render(tmp_path / "fourth", "my_op"))
