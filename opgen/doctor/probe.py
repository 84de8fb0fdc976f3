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

from .report import ERROR, MISSING, OK, WARNING, Check
from .tools import first_line

PROBE_TIMEOUT = 300  # importing torch on a cold disk can take a while

# Run in the Python that builds. Two lines, so that a crash while importing torch (a
# segfault in a CUDA library) still leaves what was learnt before it.
PROBE = r"""
import json, sys, sysconfig
info = {"python": sys.version.split()[0], "executable": sys.executable,
        "cxx": sysconfig.get_config_var("CXX") or "", "scripts": sysconfig.get_path("scripts")}
print("OPGEN-PYTHON " + json.dumps(info), flush=True)
info = {}
try:
    import torch
except BaseException as error:
    info["torch_error"] = (type(error).__name__ + ": " + str(error)).splitlines()[0]
else:
    info["torch"] = torch.__version__
    info["torch_cuda"] = torch.version.cuda
    try:
        info["gpus"] = [{"name": torch.cuda.get_device_name(i),
                         "capability": "%d.%d" % torch.cuda.get_device_capability(i)}
                        for i in range(torch.cuda.device_count())]
    except Exception as error:
        info["gpu_error"] = (type(error).__name__ + ": " + str(error)).splitlines()[0]
    try:  # the libstdc++ torch loaded, which opgen projects name on their link line
        with open("/proc/self/maps") as maps:
            info["libstdcxx"] = next(line.split(None, 5)[5].strip() for line in maps
                                     if line.rsplit("/", 1)[-1].startswith("libstdc++.so"))
    except Exception:
        pass
    import os
    if os.environ.get("TORCH_CUDA_ARCH_LIST") and torch.version.cuda:
        try:  # torch's own verdict on the list; private, so any other failure is ignored
            from torch.utils.cpp_extension import _get_cuda_arch_flags
            _get_cuda_arch_flags()
        except ValueError as error:
            info["arch_error"] = str(error).splitlines()[0]
        except Exception:
            pass
print("OPGEN-TORCH " + json.dumps(info), flush=True)
"""


def probe_python(python: str) -> dict:
    """What `python` reports about itself and its torch (see PROBE)."""
    info: dict = {}
    try:
        result = subprocess.run([python, "-c", PROBE], capture_output=True, text=True,
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
