"""`opgen update`: move a generated project to the installed opgen's template version.

copier does the three-way merge (old template render, new template render, the user's
project). This adds what copier leaves to the user: one-line refusals with the fix for
projects it cannot update, and a non-zero exit with the conflicted files listed, where
copier itself exits 0 and leaves inline markers behind.
"""

from __future__ import annotations

import subprocess
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from . import template_source
from .model import read_project
from .spec import SpecError
from .template_source import ANSWERS_FILE, recorded_answers


class UpdateError(Exception):
    """The project cannot be updated; the message says why and what to do."""


@dataclass
class UpdateResult:
    old_version: str
    new_version: str
    conflicts: list[str] = field(default_factory=list)
    changed: bool = True  # whether any file of the project changed


def _git(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True)


def check_updatable(project: Path) -> None:
    if not project.is_dir():
        raise UpdateError(f"{project} is not a directory; give the path of a project made by opgen new")
    if not (project / ANSWERS_FILE).is_file():
        raise UpdateError(f"{project} has no {ANSWERS_FILE}, so opgen did not generate it; "
                          "give the path of a project made by opgen new")
    if _git(project, "rev-parse", "--show-toplevel").returncode != 0:
        raise UpdateError(f"{project} is not a git repository, so an update could not be reviewed or "
                          "undone; commit it first: git init && git add -A && git commit -m 'opgen project'")
    if _git(project, "status", "--porcelain").stdout.strip():  # as copier checks: the whole repository
        raise UpdateError(f"{project} has uncommitted changes; commit or stash them (git stash) and "
                          "run opgen update again")


def update_project(project: Path) -> UpdateResult:
    """Update `project` in place to the template version of the running opgen."""
    import copier  # imported here: it is the slowest import of the CLI

    from .formatting import FormattingWorker

    project = project.absolute()
    check_updatable(project)
    source = template_source.locate()
    answers = recorded_answers(project)
    old_version = answers.get("_commit", "unknown")
    try:
        # Read by this opgen: answers of an older one (a project of one op, with op_name,
        # signature... at the top level) become the ops list the new template renders.
        data = read_project(answers)
    except SpecError as error:
        raise UpdateError(f"{project / ANSWERS_FILE}: {error}") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # copier's notes on dirty or unversioned sources
        try:
            # From the source the project recorded (where the old version is) to this
            # opgen's version, which the same repository holds: its checkout, or the
            # repository the wheel was released from.
            with FormattingWorker(
                dst_path=project,
                vcs_ref=source.version,
                data=data,
                defaults=True,  # keep every recorded answer; ask nothing
                overwrite=True,
                quiet=True,
                unsafe=False,  # the template has no tasks, migrations or extensions
                conflict="inline",
            ) as worker:
                worker.run_update()
        except (ValueError, copier.errors.CopierError) as error:
            raise UpdateError(str(error).strip().splitlines()[0]) from None
    new_version = recorded_answers(project).get("_commit", "unknown")
    changed = bool(_git(project, "status", "--porcelain").stdout.strip())
    return UpdateResult(old_version, new_version, conflicted_files(project), changed)


def conflicted_files(project: Path) -> list[str]:
    """Files copier left with conflicts: unmerged in git's index, or beside a .rej file."""
    unmerged = _git(project, "ls-files", "--unmerged", "--", ".").stdout.splitlines()
    paths = {line.split("\t", 1)[1] for line in unmerged if "\t" in line}
    paths |= {str(p.relative_to(project))[: -len(".rej")] for p in project.rglob("*.rej")}
    return sorted(paths)
