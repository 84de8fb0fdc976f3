"""What a check finds, and the report that gathers the checks.

Every check has a status:

- ok: nothing to do.
- warning: builds and runs, but slower or with a caveat; the fix says how to remove it.
- error: a build or an import fails, or kernels cannot run on the visible GPUs (exit 1).
- missing: absent but not needed here (no GPU on a build machine, no toolkit where the build
  is CPU-only, a project not built yet), or not checked because what it needs is absent.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

OK, WARNING, ERROR, MISSING = "ok", "warning", "error", "missing"
SEVERITY = {ERROR: 0, WARNING: 1, MISSING: 2, OK: 3}


@dataclass
class Check:
    name: str
    status: str
    value: str
    fix: str = ""


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(check.status == status for check in self.checks)

    @property
    def exit_code(self) -> int:
        return 1 if self.count(ERROR) else 0

    def summary(self) -> str:
        errors, warnings = self.count(ERROR), self.count(WARNING)
        counts = f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
        if errors:
            return f"{counts}: fix the errors before building (exit status 1)"
        return f"{counts}: nothing blocks a build"

    def as_json(self) -> str:
        return json.dumps({"ok": not self.count(ERROR), "errors": self.count(ERROR),
                           "warnings": self.count(WARNING),
                           "checks": [asdict(check) for check in self.checks]}, indent=2)

    def as_text(self) -> str:
        width = max(len(check.name) for check in self.checks)
        lines = [f"{'check':<{width}}  {'status':<7}  value"]
        for check in self.checks:
            lines.append(f"{check.name:<{width}}  {check.status:<7}  {check.value}")
            if check.fix:
                lines.append(f"{'':<{width}}  {'':<7}  fix: {check.fix}")
        return "\n".join([*lines, "", self.summary()])


def combine(name: str, ok_value: str, issues: list[tuple[str, str, str]], context: str = "") -> Check:
    """One check from (status, value, fix) issues, the worst first; ok_value if there are none.

    `context` (what was found) leads the value when there are issues.
    """
    if not issues:
        return Check(name, OK, ok_value)
    issues = sorted(issues, key=lambda issue: SEVERITY[issue[0]])
    fixes: list[str] = []
    for fix in (issue[2] for issue in issues if issue[2]):
        # One fix often holds another ("unset X, or export X=..." and "export X=..."): say it once.
        if not any(fix in kept for kept in fixes):
            fixes = [kept for kept in fixes if kept not in fix] + [fix]
    return Check(name, issues[0][0], "; ".join([context] * bool(context) + [issue[1] for issue in issues]),
                 "; ".join(fixes))
