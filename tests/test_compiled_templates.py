"""Templates compiled once a process (opgen/compiled_templates.py)."""

from __future__ import annotations

import jinja2
import pytest

from opgen import compiled_templates
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
    first = render_library(tmp_path / "first", "lib")
    parses = []  # the templates parsed (compiling starts there), by name; None: a file's name
    parse = jinja2.Environment._parse

    def counted_parse(environment, source, name, filename):
        parses.append(name)
        return parse(environment, source, name, filename)

    monkeypatch.setattr(jinja2.Environment, "_parse", counted_parse)
    second = render_library(tmp_path / "second", "lib")
    assert parses == []
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
