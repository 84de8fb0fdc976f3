"""The Python that builds, and its torch.

torch is probed in a subprocess of the Python that builds (this one, or --python): opgen
itself never imports torch, a torch that crashes at import cannot take doctor down with it,
and a pipx-installed opgen can still check the environment a project is built in.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from .report import ERROR, MISSING, OK, WARNING, Check
from .tools import first_line

PROBE_TIMEOUT = 300  # importing torch on a cold disk can take a while

# Run as a script in the Python that builds; see it for what it reports.
PROBE = Path(__file__).with_name("probe_torch.py")


def probe_python(python: str) -> dict:
    """What `python` reports about itself and its torch (see probe_torch.py)."""
    info: dict = {}
    try:
        result = subprocess.run([python, str(PROBE)], capture_output=True, text=True,
                                timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        return {"error": f"{python} cannot be run ({error})"}
    for line in result.stdout.splitlines():
        for tag in ("OPGEN-PYTHON ", "OPGEN-TORCH "):
            if line.startswith(tag):
                info.update(json.loads(line[len(tag):]))
    if "python" not in info:
        return {"error": f"{python} cannot be run: {first_line(result.stderr) or 'no output'}"}
    if "torch" not in info and "torch_error" not in info:
        how = f"signal {-result.returncode}" if result.returncode < 0 else f"exit status {result.returncode}"
        last = (result.stderr.strip().splitlines() or [""])[-1]
        info["torch_error"] = f"import torch killed Python ({how}){': ' + last if last else ''}"
        info["torch_crashed"] = True
    return info


def check_python(probe: dict, python: str) -> Check:
    if "python" not in probe:
        return Check("python", ERROR, probe["error"],
                     f"pass --python a working interpreter, e.g. --python {sys.executable}")
    version = tuple(int(part) for part in re.findall(r"\d+", probe["python"])[:2])
    value = f"{probe['python']} at {probe['executable']}"
    if version < (3, 9):
        return Check("python", ERROR, value + ": generated projects need Python 3.9 or newer",
                     "use Python 3.10 or newer, with a torch built for it")
    return Check("python", OK, value)


def check_torch(probe: dict, python: str) -> Check:
    if "torch" in probe:
        return Check("torch", OK, probe["torch"])
    where = "" if python == sys.executable else f" (checked with --python {python})"
    if "python" not in probe:
        return Check("torch", MISSING, f"not checked: the Python could not be run{where}")
    error = probe["torch_error"]
    if error.startswith("ModuleNotFoundError") and "'torch'" in error:
        value = f"not installed for {probe['executable']}{where}; everything else is still checked"
        fix = (f"{python} -m pip install torch (a CUDA build: https://pytorch.org/get-started/locally/); "
               "if your project uses another Python, pass it with --python")
    elif probe.get("torch_crashed"):
        value = f"{error}{where}"
        fix = f"reinstall torch: {python} -m pip install --force-reinstall torch"
    else:
        value = f"import torch fails: {error}{where}"
        fix = f"reinstall torch: {python} -m pip install --force-reinstall torch"
    return Check("torch", ERROR, value, fix)


def check_torch_cuda(probe: dict) -> Check:
    if "torch" not in probe:
        return Check("torch_cuda", MISSING, "not checked: torch is not importable")
    if probe["torch_cuda"] is None:
        return Check("torch_cuda", WARNING,
                     f"none: torch {probe['torch']} is a CPU-only build, so projects build and run on "
                     "the CPU only",
                     "for CUDA kernels install a CUDA build of torch (https://pytorch.org/get-started/locally/)")
    return Check("torch_cuda", OK, probe["torch_cuda"])
