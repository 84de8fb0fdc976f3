"""TORCH_CUDA_ARCH_LIST: what it asks for, whether nvcc can build it, whether it covers the GPUs."""

from __future__ import annotations

import os
import re

from .. import project_toolchain
from .report import ERROR, MISSING, OK, Check, combine
from .toolkit import Toolkit

# What torch accepts in TORCH_CUDA_ARCH_LIST: major.minor, "a" for arch-specific features,
# "+PTX" to also embed PTX.
_ARCH = re.compile(r"(\d+)\.(\d+)(a?)(\+PTX)?")


def dotted(arch: str) -> str:
    """nvcc's '90' or '121' as torch writes it: '9.0', '12.1'."""
    return f"{arch[:-1]}.{arch[-1]}"


def parse_arch(entry: str) -> tuple[int, int, bool, bool] | None:
    """'9.0a+PTX' -> (9, 0, arch-specific, with PTX); None if torch would refuse it."""
    match = _ARCH.fullmatch(entry)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), bool(match.group(3)), bool(match.group(4))


def arch_entries(text: str, names: list[list[str]]) -> list[str]:
    """TORCH_CUDA_ARCH_LIST split as torch splits it: spaces are ';', its named groups expanded.

    `names` are torch's [name, archs], in its order (the probe reads them from torch):
    a name is replaced wherever it occurs, so "Ampere+Tegra" must go before "Ampere".
    """
    text = text.replace(" ", ";")
    for name, archs in names:
        text = text.replace(name, archs)
    return text.split(";")


def names_unknown(probe: dict) -> str:
    """Why the probe could not tell torch's named arch groups."""
    if "torch" not in probe:
        return "torch is not importable"
    return "this torch's were not found in torch.utils.cpp_extension"


def covers(archs: list[tuple[int, int, bool, bool]], capability: str) -> bool:
    """Whether code built for `archs` runs on a GPU of `capability` ('8.6')."""
    try:
        major, minor = (int(part) for part in capability.split("."))
    except ValueError:
        return True  # unknown capability (an old nvidia-smi): cannot tell, do not cry wolf
    for arch_major, arch_minor, specific, ptx in archs:
        if (arch_major, arch_minor) == (major, minor):
            return True
        if specific:
            continue  # 9.0a code uses features only 9.0 has
        if arch_major == major and arch_minor <= minor:
            return True  # machine code runs on later GPUs of the same major version
        if ptx and (arch_major, arch_minor) <= (major, minor):
            return True  # the driver compiles PTX for newer GPUs
    return False


def check_arch_list(probe: dict, gpus: list[dict], toolkit: Toolkit, supported: set[str] | None,
                    nvcc: str) -> Check:
    raw = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    if not raw or raw == "native":
        if gpus:
            caps = sorted({gpu["capability"] for gpu in gpus})
            unbuildable = [c for c in caps if supported and c.replace(".", "") not in supported]
            if unbuildable:
                return Check("arch_list", ERROR,
                             f"unset: torch builds for the visible GPUs ({', '.join(caps)}), but "
                             f"{nvcc} cannot build {', '.join(unbuildable)}",
                             "install a CUDA toolkit new enough for these GPUs")
            return Check("arch_list", OK, f"unset: torch builds for the visible GPUs ({', '.join(caps)})")
        if toolkit.home is None or supported is None:
            return Check("arch_list", OK, "unset, and no GPU visible")
        default_archs = project_toolchain.load().DEFAULT_CUDA_ARCHS
        defaults = [a for a in default_archs if a.replace(".", "") in supported]
        if not defaults:
            return Check("arch_list", ERROR,
                         f"unset, no GPU visible, and {nvcc} builds none of opgen's defaults "
                         f"{';'.join(default_archs)}: the generated setup.py stops",
                         f"export TORCH_CUDA_ARCH_LIST='{dotted(max(supported, key=int))}+PTX'")
        shown = ";".join(defaults[:-1] + [defaults[-1] + "+PTX"])
        return Check("arch_list", OK, f"unset, no GPU visible: opgen projects build {shown}")
    names = probe.get("arch_names")
    parsed = [(entry, parse_arch(entry)) for entry in arch_entries(raw, names or [])]
    good = [(entry, arch) for entry, arch in parsed if arch is not None]
    issues = []
    bad = [entry for entry, arch in parsed if arch is None]
    # Without torch's names, an entry that is no arch may be one of them: neither an error
    # nor, since it may cover them, a reason to say the visible GPUs are not covered.
    unknown = bad if names is None else []
    if unknown:
        group = "a named arch group" if len(unknown) == 1 else "named arch groups"
        issues.append((MISSING, f"{', '.join(repr(entry) for entry in unknown)} not checked: may be {group} "
                       f"(such as Ampere), which doctor learns from torch, and {names_unknown(probe)}", ""))
    elif bad:
        shown = ", ".join(repr(entry) for entry in bad)
        issues.append((ERROR, f"{shown} {'is not an arch' if len(bad) == 1 else 'are not archs'} "
                       "(torch fails: Unknown CUDA arch; an empty entry is a stray ';' or space)", ""))
    if supported is not None:
        unbuildable = [entry for entry, (major, minor, _, _) in good if f"{major}{minor}" not in supported]
        if unbuildable:
            issues.append((ERROR, f"{nvcc} cannot build {', '.join(unbuildable)} (it builds "
                           f"{dotted(min(supported, key=int))} to {dotted(max(supported, key=int))})", ""))
            good = [(e, a) for e, a in good if e not in unbuildable]
    if probe.get("arch_error") and not any(status == ERROR for status, _, _ in issues):
        issues.append((ERROR, f"torch refuses it: {probe['arch_error']}", ""))
    archs = [arch for _, arch in good]
    uncovered = [f"{i}: {gpu['name']} ({gpu['capability']})" for i, gpu in enumerate(gpus)
                 if not covers(archs, gpu["capability"])]
    if uncovered and not unknown:
        issues.append((ERROR, f"it covers no arch of GPU {', '.join(uncovered)}: its kernels fail with "
                       "'no kernel image is available for execution on the device'", ""))
    if any(status == ERROR for status, _, _ in issues):
        # The entries that work (or may), plus the visible GPUs they miss.
        keep = [entry for entry, _ in good] + unknown
        keep += [gpu["capability"] for gpu in gpus if not unknown and not covers(archs, gpu["capability"])]
        suggestion = ";".join(dict.fromkeys(keep)) or "7.5;8.0;9.0+PTX"
        fix = (f"export TORCH_CUDA_ARCH_LIST='{suggestion}' (entries like 8.0 or 9.0+PTX, "
               "';'-separated), or unset it")
        issues = [(status, value, fix) for status, value, _ in issues]
    covered = ", covers every visible GPU" if gpus else ""
    return combine("arch_list", f"{raw!r}{covered}", issues, context=f"{raw!r}")
