"""`opgen add`: add an op to a project made by opgen, keeping the user's edits.

The project is rendered twice with the running opgen's template: from its recorded
answers (the base) and from those answers with the new op (the result). The difference
between the two is the new op: its own files, and the lines it adds to the files the
ops share (csrc/library.cpp, the package's __init__.py, README.md). New files are
written; a shared file the user has not edited is replaced; an edited one takes the
change by a three-way merge (`git merge-file`), and where the two overlap it gets
conflict markers, listed for the user to resolve, as `opgen update` does.

Nothing is written until every file has been merged, and a new op's file that already
exists stops everything.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import project_record, read_project
from .render import render
from .spec import SpecError
from .template_source import ANSWERS_FILE, recorded_answers


class AddError(Exception):
    """The op cannot be added; the message says why and what to do."""


@dataclass
class AddResult:
    added: list[str] = field(default_factory=list)  # new files
    changed: list[str] = field(default_factory=list)  # shared files that took the new op
    conflicts: list[str] = field(default_factory=list)  # of those, files with conflict markers


def enclosing_project(directory: Path) -> Path:
    """The project that `directory` is in: it or the nearest parent with an answers file."""
    for candidate in [directory, *directory.parents]:
        if (candidate / ANSWERS_FILE).is_file():
            return candidate
    raise AddError(f"{directory} is not inside a project made by opgen new (no {ANSWERS_FILE} here "
                   "or above); run opgen add in one, or pass --project PATH")


def current_project(project: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The project's recorded answers and its checked record."""
    if not (project / ANSWERS_FILE).is_file():
        raise AddError(f"{project} has no {ANSWERS_FILE}, so opgen did not generate it; run opgen add "
                       "inside a project made by opgen new, or pass --project PATH")
    answers = recorded_answers(project)
    if "ops" not in answers:
        raise AddError(f"{project} was made by an opgen that kept one op per project; run opgen update "
                       "there first (it moves the project to the layout that holds several ops)")
    try:
        return answers, read_project(answers)
    except SpecError as error:
        raise AddError(f"{project / ANSWERS_FILE}: {error}") from None


def add_op(project: Path, current: tuple[dict[str, Any], dict[str, Any]],
           op: dict[str, Any]) -> AddResult:
    """Add the op record `op` (from answers.collect_op) to `project`, whose recorded
    answers and checked record current_project() read."""
    project = project.absolute()
    answers, record = current
    try:
        new_record = project_record(record["package"], [*record["ops"], op], exact=record["exact"],
                                    abi=record["abi"])
    except SpecError as error:
        raise AddError(str(error)) from None
    # The answers file keeps the project's template version: only the op is new.
    recorded = {"_src_path": answers.get("_src_path", ""), "_commit": answers.get("_commit", "")}
    with tempfile.TemporaryDirectory(prefix=".opgen-add-") as tmp:
        base, result = Path(tmp) / "base", Path(tmp) / "result"
        render(record, base, recorded=recorded)
        render(new_record, result, recorded=recorded)
        writes, outcome = plan(project, base, result)
    for path, content in writes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return outcome


def plan(project: Path, base: Path, result: Path) -> tuple[dict[Path, bytes], AddResult]:
    """What to write where, and what it means; AddError before anything is written."""
    writes: dict[Path, bytes] = {}
    outcome = AddResult()
    for new in sorted(p for p in result.rglob("*") if p.is_file()):
        relative = new.relative_to(result)
        old, mine = base / relative, project / relative
        content = new.read_bytes()
        if not old.is_file():
            if mine.exists():
                raise AddError(f"{mine} already exists and the new op would write it; move it away "
                               "or choose another op name; nothing was written")
            writes[mine] = content
            outcome.added.append(str(relative))
        elif old.read_bytes() != content:
            if str(relative) == ANSWERS_FILE or not mine.is_file() or mine.read_bytes() == old.read_bytes():
                writes[mine] = content
            else:
                merged, conflicted = merge(mine, old, new)
                writes[mine] = merged
                if conflicted:
                    outcome.conflicts.append(str(relative))
            if str(relative) != ANSWERS_FILE:
                outcome.changed.append(str(relative))
    return writes, outcome


def merge(mine: Path, base: Path, theirs: Path) -> tuple[bytes, bool]:
    """Three-way merge of the user's file with the template's change; (text, conflicted)."""
    try:
        result = subprocess.run(
            ["git", "merge-file", "-p", "-L", f"{mine.name} (yours)", "-L", "template before",
             "-L", "template with the new op", str(mine), str(base), str(theirs)],
            capture_output=True, check=False)
    except FileNotFoundError:
        raise AddError(f"{mine} was edited, and merging the new op into it needs git, which is not "
                       "on PATH; install git, or undo the edit, and run opgen add again") from None
    if result.returncode < 0 or result.returncode > 127:
        raise AddError(f"git merge-file failed on {mine}: {result.stderr.decode().strip()}")
    return result.stdout, result.returncode > 0
