"""Render a project with copier, all or nothing.

copier renders into a staging directory next to the target; the staging directory is
moved into place only once the render has finished and its answers have been checked. An
error or an interrupt leaves the target as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import template_source


class RenderError(Exception):
    """The project cannot be written; the message says why and what to do."""


def check_target(target: Path, existing_ok: bool) -> None:
    """Refuse a target that holds anything of the user's, unless they asked for it."""
    existing = target.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise RenderError(f"{existing} is a file, so the project cannot be created in {target.parent}; "
                          "give a directory as --output-dir")
    if target.exists() and not target.is_dir():
        raise RenderError(f"{target} exists and is not a directory; choose another name or --output-dir")
    if target.is_dir() and any(target.iterdir()) and not existing_ok:
        raise RenderError(
            f"{target} exists and is not empty; choose another name or --output-dir, or pass "
            "--existing-ok to add the project's files to it (no file is ever overwritten)"
        )
    # An existing target receives the files one by one: found unwritable halfway, it would
    # be left half-filled, so it is checked before anything is rendered.
    if target.is_dir() and not os.access(target, os.W_OK):
        raise RenderError(f"cannot write to {target}; make it writable, or choose another name or "
                          "--output-dir")


def render(data: dict[str, Any], into: Path, *, recorded: dict[str, str] | None = None) -> dict[str, Any]:
    """Render opgen's template with `data` into the new directory `into`; copier asks nothing.

    `data` has been checked by the caller (answers.collect, or regen for recorded answers).
    Returns the answers copier recorded. `recorded` overrides the git source and version
    written to the answers file (default: those of the running opgen's template).
    """
    import copier  # imported here: it is the slowest import of the CLI

    from .formatting import FormattingWorker

    source = template_source.locate()
    with tempfile.TemporaryDirectory(prefix=".opgen-template-") as tmp:
        snapshot = source.snapshot(Path(tmp) / "template")
        with warnings.catch_warnings():
            # copier warns about the snapshot being unversioned; that is by design.
            warnings.simplefilter("ignore")
            try:
                with FormattingWorker(
                    src_path=str(snapshot),
                    dst_path=into,
                    data={**data, "opgen_recorded_source": recorded or source.recorded},
                    defaults=True,
                    quiet=True,
                    unsafe=False,
                ) as worker:
                    worker.run_copy()
            except (ValueError, copier.errors.CopierError) as error:
                # copier's own validators and type checks on the answers
                raise RenderError(str(error).strip().splitlines()[0]) from None
    return {key: value for key, value in worker.answers.combined.items()
            if key in worker.template.questions_data}


def render_project(target: Path, data: dict[str, Any], *, existing_ok: bool = False,
                   finish: Callable[[Path], None] | None = None) -> dict[str, Any]:
    """Render a new project into `target` from `data`, all or nothing; return the answers.

    `finish(directory)` may rewrite the rendered files before they are moved into place.
    """
    target = target.absolute()
    check_target(target, existing_ok)
    parent = target.parent
    made_parents = _make_parents(parent)
    try:
        if not os.access(parent, os.W_OK):
            raise RenderError(f"cannot write to {parent}; choose a writable --output-dir")
        # Staged beside the target, so that moving it into place is one rename.
        with tempfile.TemporaryDirectory(prefix=f".opgen-{target.name}-", dir=parent) as tmp:
            staging = Path(tmp) / "project"
            answers = render(data, staging)
            if finish:
                finish(staging)
            _move_into_place(staging, target)
        return answers
    except BaseException:
        for directory in reversed(made_parents):
            shutil.rmtree(directory, ignore_errors=True)
        raise


def _make_parents(directory: Path) -> list[Path]:
    """Create `directory` and missing parents; return those created, outermost first."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    missing.reverse()
    for d in missing:
        try:
            d.mkdir()
        except OSError as error:
            raise RenderError(f"cannot create {d}: {error.strerror}; choose another --output-dir") from None
    return missing


def _move_into_place(staging: Path, target: Path) -> None:
    if not target.exists():
        staging.rename(target)  # atomic: same filesystem, since staging is beside target
        return
    clashes = [p.relative_to(staging) for p in staging.rglob("*")
               if not p.is_dir() and (target / p.relative_to(staging)).exists()]
    if clashes:
        raise RenderError(
            f"{target / clashes[0]} already exists ({len(clashes)} file(s) would be overwritten); "
            "nothing was written: move them away or choose another --output-dir"
        )
    unwritable = [d for d in [target, *(target / p.relative_to(staging) for p in staging.rglob("*"))]
                  if d.is_dir() and not os.access(d, os.W_OK)]
    if unwritable:
        raise RenderError(f"cannot write to {unwritable[0]}; nothing was written: make it writable "
                          "or choose another --output-dir")
    # What access() cannot foresee (a full disk, a read-only mount) and Ctrl-C halfway are
    # undone: every file and directory moved in so far is removed again.
    added: list[Path] = []
    try:
        for path in sorted(staging.rglob("*")):
            destination = target / path.relative_to(staging)
            if path.is_dir():
                if not destination.exists():
                    destination.mkdir()
                    added.append(destination)
            else:
                shutil.move(str(path), destination)
                added.append(destination)
    except BaseException as error:
        for path in reversed(added):
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink()
        if not isinstance(error, OSError):
            raise
        raise RenderError(f"cannot write to {target}: {error.strerror}; nothing was written: "
                          "choose another --output-dir") from None
