"""Jinja templates compiled once a process, not once a render.

copier makes a new Jinja environment for every render, and each environment compiles every
template it loads (and every templated file name) anew: `opgen add` renders the project
twice, the old answers and the new, and compiling about 90 templates in each was 40% of its
time. The compiled code depends only on the template's text and on the environment's syntax
settings, so it is kept here for the process, keyed by both.
"""

from __future__ import annotations

from typing import Any

_COMPILED: dict[tuple, Any] = {}


def _syntax(environment) -> tuple:
    """What, besides the text, decides the code Jinja compiles a template to."""
    return (
        type(environment),
        environment.block_start_string, environment.block_end_string,
        environment.variable_start_string, environment.variable_end_string,
        environment.comment_start_string, environment.comment_end_string,
        environment.line_statement_prefix, environment.line_comment_prefix,
        environment.trim_blocks, environment.lstrip_blocks, environment.newline_sequence,
        environment.keep_trailing_newline, environment.optimized, environment.is_async,
        environment.finalize is not None, repr(environment.autoescape),
        tuple(sorted(environment.extensions)),
    )


def reuse_compiled_templates(environment) -> None:
    """Make `environment` reuse the code compiled by earlier environments of this process.

    The code keeps the file name of its first compile (templates are rendered from a
    temporary snapshot of the template, so each render's file names differ): only the
    frames of a template error's traceback show it.
    """
    compile_anew = environment.compile
    syntax = _syntax(environment)

    def compile(source, name=None, filename=None, raw=False, defer_init=False):
        if raw:  # Python source, not code: cheap, and not what the loaders ask for
            return compile_anew(source, name, filename, raw, defer_init)
        key = (syntax, source, name, defer_init)
        code = _COMPILED.get(key)
        if code is None:
            code = _COMPILED[key] = compile_anew(source, name, filename, raw, defer_init)
        else:
            # The extensions' preprocess hooks still run, as compiling runs them: copier's
            # yield tag resets its state there, and a second templated file name that uses
            # it failed with "Attempted to parse the yield tag twice".
            environment.preprocess(source, name, filename)
        return code

    environment.compile = compile
