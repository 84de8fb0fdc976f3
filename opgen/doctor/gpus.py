"""The GPUs a build's kernels must run on: as torch sees them, else as nvidia-smi lists them."""

from __future__ import annotations

import os
import shutil

from .report import MISSING, OK, WARNING, Check
from .tools import run_tool


def nvidia_smi_gpus() -> list[dict] | None:
    """GPUs as nvidia-smi lists them; None without nvidia-smi or when it fails."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    result = run_tool([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"])
    if result is None or result.returncode != 0:
        return None
    gpus = []
    for line in result.stdout.splitlines():
        name, _, capability = line.rpartition(",")
        if name.strip():
            gpus.append({"name": name.strip(), "capability": capability.strip()})
    return gpus


def check_gpus(probe: dict) -> tuple[Check, list[dict]]:
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    note = f" (CUDA_VISIBLE_DEVICES={hidden!r})" if hidden is not None else ""
    if "gpu_error" in probe:
        return Check("gpus", WARNING, f"torch.cuda fails: {probe['gpu_error']}{note}",
                     "check the NVIDIA driver with nvidia-smi"), []
    gpus = probe.get("gpus") if "torch" in probe else None
    smi = nvidia_smi_gpus()
    listed = ", ".join(f"{i}: {g['name']} ({g['capability']})" for i, g in enumerate(gpus or smi or []))
    if gpus:
        return Check("gpus", OK, listed + note), gpus
    if "torch" in probe and smi:
        return Check("gpus", WARNING,
                     f"torch sees no GPU, but nvidia-smi lists {listed}{note}",
                     f"install a driver that supports CUDA {probe.get('torch_cuda')} (nvidia-smi's "
                     "header shows the CUDA version the driver supports), and check "
                     "CUDA_VISIBLE_DEVICES"), []
    if smi:
        return Check("gpus", OK, f"{listed} (from nvidia-smi: torch is not importable){note}"), smi
    how = "torch sees none" if "torch" in probe else "torch is not importable, and nvidia-smi " + (
        "lists none" if smi is not None else "is not installed")
    return Check("gpus", MISSING,
                 f"no GPU visible ({how}){note}: builds use TORCH_CUDA_ARCH_LIST or the default archs, "
                 "tests run on the CPU", "CUDA tests need a machine with an NVIDIA GPU and its driver"), []
