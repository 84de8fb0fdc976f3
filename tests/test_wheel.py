"""A generated project as a publishable wheel: `python -m build`, then `auditwheel repair`.

The wheel must be one for every Python 3.9+ (the limited API: cp39-abi3), and auditwheel
must give it a manylinux tag without vendoring torch's or CUDA's libraries: the extension
has to load the copies torch loaded, or it would run beside a second libtorch, CUDA
runtime or OpenMP runtime. One build per ABI, then the repaired wheel is installed and its
op run on the CPU from a directory outside the project.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import HAS_NVCC, render

# What auditwheel must not copy into the wheel (it would vendor each, under a hashed name):
# torch's libraries (libc10*.so, libtorch*.so), which a wheel cannot find anyway (they are
# found at run time because `import torch` loaded them); CUDA's runtime, which torch's own
# CUDA wheels provide; and GNU OpenMP, which auditwheel would take from the system
# (/usr/lib/.../libgomp.so.1): a second OpenMP runtime beside the one torch loaded.
# libstdc++.so.6, libgcc_s.so.1 and glibc's libraries are on manylinux's own list: never vendored.
EXCLUDES = ("libc10*.so", "libtorch*.so", "libcudart.so.*", "libgomp.so.*")
# The op of `opgen new --defaults`: alpha * x, with alpha = 2.0.
RUN_THE_OP = """
import torch, PACKAGE as package
x = torch.randn(1000, dtype=torch.float32)
torch.testing.assert_close(package.PACKAGE(x), 2 * x)
print("imported from", package.__file__, "with CUDA:", package.WITH_CUDA)
print("libgomp:", sorted({line.split()[-1] for line in open("/proc/self/maps") if "libgomp" in line}))
"""


def run(*command: str | Path, cwd: Path | None = None, **env: str) -> str:
    result = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True,
                            text=True, env={**os.environ, **env})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="auditwheel repairs Linux wheels only")
@pytest.mark.parametrize(
    ("abi", "build_env"),
    # torch's ABI for the CPU only (its CUDA build links libcudart.so like torch's own
    # extensions); the stable ABI with its CUDA kernels, one arch: compiling, not running.
    [("torch", {"USE_CUDA": "0"}), ("stable", {"TORCH_CUDA_ARCH_LIST": "9.0"})],
)
def test_the_wheel_is_abi3_and_auditwheel_repairs_it_without_torch_or_cuda(python, tmp_path, abi, build_env):
    name = f"wheel_{abi}"  # one package per ABI: both are installed into the tests' venv
    # On torch's ABI, the files that take longest to compile (the C++ autograd, the vector
    # loops) are left out: this is about the wheel, which still links OpenMP.
    lighter = ("--exact", "--no-backward") if abi == "torch" else ()
    project = render(tmp_path / "src", name, "--abi", abi, *lighter)
    run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", tmp_path / "dist",
        project, **build_env)
    [built] = (tmp_path / "dist").glob("*.whl")
    assert "-cp39-abi3-linux_" in built.name

    excludes = [argument for name in EXCLUDES for argument in ("--exclude", name)]
    run(sys.executable, "-m", "auditwheel", "repair", "--wheel-dir", tmp_path / "repaired",
        *excludes, built)
    [repaired] = (tmp_path / "repaired").glob("*.whl")
    assert re.search(r"-cp39-abi3-manylinux_\d+_\d+_x86_64\.whl$", repaired.name), repaired.name
    members = zipfile.ZipFile(repaired).namelist()
    # pip must not install a torch-ABI wheel beside another torch than the one it was built
    # against; a stable one goes with every torch from 2.10 on.
    metadata = zipfile.ZipFile(repaired).read(f"{name}-0.1.0.dist-info/METADATA").decode()
    requires = re.findall(r"^Requires-Dist: (torch.*)$", metadata, re.M)
    if abi == "torch":
        import torch

        assert requires == [f"torch=={torch.__version__.split('+')[0]}"], requires
    else:
        assert requires == ["torch>=2.10"], requires
    # No <package>.libs/ at all: the extension is the wheel's one shared library.
    libraries = [member for member in members if ".so" in Path(member).name]
    assert libraries == [f"{name}/_C.abi3.so"], members

    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", repaired)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    output = run(python, "-c", RUN_THE_OP.replace("PACKAGE", name), cwd=elsewhere)
    assert f"imported from {python.parent.parent}" in output, output  # the venv's copy
    assert f"with CUDA: {HAS_NVCC and abi == 'stable'}" in output
    # One OpenMP runtime in the process, torch's (none where torch runs without libgomp).
    assert len(re.search(r"libgomp: \[(.*)\]", output).group(1).split(",")) <= 1, output
