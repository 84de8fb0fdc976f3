"""`opgen doctor`: can this machine build and run custom CUDA ops, and is a project's build current?

Each concern has a module of checks, each check a status (report.py says what they mean);
diagnose runs them all in the order they are shown. torch is never imported here: it is
probed in the Python that builds (probe.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .archs import check_arch_list
from .compiler import check_cxx, check_libstdcxx, check_ninja, host_compilers
from .gpus import check_gpus
from .jobs import check_max_jobs
from .probe import check_python, check_torch, check_torch_cuda, probe_python
from .project import DoctorError, check_project, read_project
from .report import Check, Report
from .toolkit import check_cuda_home, check_cudart, check_nvcc, find_toolkit, nvcc_archs, nvcc_version

__all__ = ["Check", "DoctorError", "Report", "diagnose"]


def diagnose(project: Path | None = None, python: str | None = None) -> Report:
    """Every check, in the order they are shown. Raises DoctorError for a PATH that is no project."""
    python = python or sys.executable
    report = Report()
    answers = read_project(project) if project is not None else {}  # usage errors before slow checks
    probe = probe_python(python)
    gpu_check, gpus = check_gpus(probe)
    toolkit = find_toolkit()
    version = nvcc_version(toolkit.home) if toolkit.home else None
    supported = nvcc_archs(toolkit.home) if toolkit.home and not isinstance(version, str) else None
    nvcc_name = f"nvcc {version[0]}.{version[1]}" if isinstance(version, tuple) else "nvcc"
    compilers = host_compilers(probe)
    report.checks += [
        check_python(probe, python),
        check_torch(probe, python),
        check_torch_cuda(probe),
        check_nvcc(toolkit, version, probe, gpus),
        check_cuda_home(toolkit),
        check_cudart(toolkit),
        check_ninja(probe, python),
        check_cxx(compilers),
        check_libstdcxx(compilers, probe),
        gpu_check,
        check_arch_list(probe, gpus, toolkit, supported, nvcc_name),
        check_max_jobs(),
    ]
    if project is not None:
        report.checks += check_project(project, answers, probe, gpus)
    return report
