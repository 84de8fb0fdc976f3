"""Jinja templates compiled once, not once a render.

copier makes a new Jinja environment for every render, and each environment compiles every
template it loads (and every templated file name) anew: compiling was about half of the time
of `opgen new`, and `opgen add`, which renders the project twice (the old answers and the
new), compiled everything twice. The compiled code depends only on the template's text and
the environment's syntax settings, so it is kept, keyed by both: for the process in memory,
and between processes in Jinja's own cache directory (`FileSystemBytecodeCache`: a directory
of the user's own in the temporary directory, which Jinja creates with the user's permissions
only, its files replaced atomically and checked against Jinja's and Python's versions).
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from jinja2 import FileSystemBytecodeCache

_COMPILED: dict[tuple, Any] = {}


def _syntax(environment) -> tuple:
    """What, besides the text, decides the code Jinja compiles a template to."""
    return (
        type(environment).__qualname__,
        environment.block_start_string, environment.block_end_string,
        environment.variable_start_string, environment.variable_end_string,
        environment.comment_start_string, environment.comment_end_string,
        environment.line_statement_prefix, environment.line_comment_prefix,
        environment.trim_blocks, environment.lstrip_blocks, environment.newline_sequence,
        environment.keep_trailing_newline, environment.optimized, environment.is_async,
        environment.finalize is not None, repr(environment.autoescape),
        tuple(sorted(environment.extensions)),
    )


@functools.cache
def _on_disk() -> FileSystemBytecodeCache | None:
    """Jinja's cache directory, or None where it cannot be made (then nothing is kept on disk)."""
    try:
        return FileSystemBytecodeCache()
    except (OSError, RuntimeError):  # RuntimeError: Jinja finds no safe directory
        return None


def _compile_through_disk(environment, key: tuple, source: str, compile_anew) -> Any:
    """The code of `key` from the cache directory, else compiled and written there."""
    disk = _on_disk()
    if disk is None:
        return compile_anew()
    # The bucket's file is named after the key (the syntax, the name and the text); Jinja
    # checks the text's checksum and its own and Python's versions when it reads one.
    name = hashlib.sha256(repr(key).encode()).hexdigest()
    try:
        bucket = disk.get_bucket(environment, name, None, source)
    except Exception:  # noqa: BLE001 - an unreadable or broken file is a miss
        return compile_anew()
    if bucket.code is None:
        bucket.code = compile_anew()
        try:
            disk.set_bucket(bucket)
        except OSError:  # a full disk or a directory made read-only: kept in memory only
            pass
    return bucket.code


def reuse_compiled_templates(environment) -> None:
    """Make `environment` reuse the code compiled by earlier environments and processes.

    The code keeps the file name of its first compile (templates are rendered from a
    temporary snapshot of the template, so each render's file names differ): only the
    frames of a template error's traceback show it.
    """
    compile_original = environment.compile
    syntax = _syntax(environment)

    def compile(source, name=None, filename=None, raw=False, defer_init=False):
        def compile_anew():
            return compile_original(source, name, filename, raw, defer_init)

        if raw:  # Python source, not code: cheap, and not what the loaders ask for
            return compile_anew()
        # The extensions' preprocess hooks run for every compile asked for, kept or not, as
        # Jinja runs them (a fresh compile preprocesses the text itself; this result is not
        # used): copier's yield tag resets its state there, and without it a second templated
        # file name that uses the tag failed with "Attempted to parse the yield tag twice".
        environment.preprocess(source, name, filename)
        key = (syntax, source, name, defer_init)
        code = _COMPILED.get(key)
        if code is None:
            code = _COMPILED[key] = _compile_through_disk(environment, key, source, compile_anew)
        return code

    environment.compile = compile
