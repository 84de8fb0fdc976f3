"""Parallel compile jobs (MAX_JOBS) against the memory a build can use."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .report import WARNING, Check, combine

GIB = 1024**3
# Peak memory of one nvcc or cc1plus process compiling a torch extension source is about
# 1.5-2 GB (torch's headers are large); planned with the upper end, because running out
# means the OOM killer ends the build with no clear message.
JOB_MEMORY = 2 * GIB


def available_memory() -> int | None:
    """Bytes a build can use now: MemAvailable, capped by a cgroup memory limit (containers)."""
    values = []
    try:
        match = re.search(r"^MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.MULTILINE)
        if match:
            values.append(int(match.group(1)) * 1024)
    except OSError:
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit = Path(limit_file).read_text().strip()
            usage = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # v1 writes a huge number for "no limit"
            values.append(max(0, int(limit) - usage))
    if not values and hasattr(os, "sysconf"):
        try:
            values.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError):
            pass
    return min(values) if values else None


def cpu_count() -> int:
    """CPUs this process may run on (what ninja counts), not every CPU of the machine."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def ninja_default_jobs(cpus: int) -> int:
    """ninja's own -j default (GuessParallelism), used when MAX_JOBS is unset."""
    return 2 if cpus <= 1 else 3 if cpus == 2 else cpus + 2


def check_max_jobs() -> Check:
    raw = os.environ.get("MAX_JOBS")
    cpus = cpu_count()
    issues = []
    if raw is not None and raw.isdigit() and int(raw) > 0:
        jobs, how = int(raw), f"MAX_JOBS={raw}"
    elif raw == "0" or (raw is not None and raw.isdigit()):
        jobs, how = 1 << 30, "MAX_JOBS=0"  # torch passes -j 0, which ninja takes as no limit
    else:
        jobs, how = ninja_default_jobs(cpus), f"ninja's default for {cpus} CPU{'s' * (cpus != 1)}"
        if raw is not None:
            issues.append((WARNING, f"MAX_JOBS={raw!r} is not a number, so torch ignores it", ""))
    memory = available_memory()
    shown = "no limit" if jobs == 1 << 30 else str(jobs)
    if memory is None:
        return combine("max_jobs", f"{shown} parallel compile jobs ({how}); available memory unknown", issues)
    fits = memory // JOB_MEMORY
    if jobs > fits:
        needs = "any number of" if jobs == 1 << 30 else f"{jobs} ×"
        issues.append((WARNING, f"{shown} parallel compile jobs ({how}) need {needs} ~2 GB, and "
                       f"{memory / GIB:.1f} GB is available: the OOM killer may stop the build", ""))
    if issues:
        # As many jobs as both the memory and the CPUs allow: more than the CPUs gains nothing.
        fix = f"export MAX_JOBS={max(1, min(fits, cpus))}" + (" and free some memory" if fits < 1 else "")
        issues[-1] = (issues[-1][0], issues[-1][1], fix)
    return combine("max_jobs", f"{shown} parallel compile jobs ({how}); {memory / GIB:.1f} GB available, "
                   f"room for {fits} at ~2 GB each", issues)
