"""How long the default op takes to build, as a user builds it: the README's numbers.

    python tests/build_times.py            # 5 rounds, in the Python that runs it
    python tests/build_times.py --rounds 9

Renders `opgen new my_op --defaults` into a temporary directory, then per round: a clean
`pip install --no-build-isolation -e .` (build/ and the library removed first), the same
command after editing only csrc/my_op_kernel.cu, once more with nothing edited, and
`python setup.py build_ext --inplace` after another .cu edit. Prints each time and the
medians. Needs opgen, torch, ninja and setuptools in this Python; nvcc to build CUDA.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = ("clean install", "install after a .cu edit", "install with no edit", "build_ext after a .cu edit")


def timed(command: list[str], cwd: Path) -> float:
    began = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "-e", "."]
    build_ext = [sys.executable, "setup.py", "-q", "build_ext", "--inplace"]
    times: dict[str, list[float]] = {step: [] for step in STEPS}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "opgen", "new", "my_op", "--defaults"], cwd=tmp, check=True,
                       capture_output=True)
        project = Path(tmp) / "my_op"
        kernel = project / "csrc" / "my_op_kernel.cu"
        for round_ in range(args.rounds):
            shutil.rmtree(project / "build", ignore_errors=True)
            for built in (project / "my_op").glob("_C*.so"):
                built.unlink()
            times["clean install"].append(timed(install, project))
            kernel.write_text(kernel.read_text() + f"// edit {round_}\n")
            times["install after a .cu edit"].append(timed(install, project))
            times["install with no edit"].append(timed(install, project))
            kernel.write_text(kernel.read_text() + f"// edit {round_}b\n")
            times["build_ext after a .cu edit"].append(timed(build_ext, project))
            print("  ".join(f"{step}: {times[step][-1]:.1f} s" for step in STEPS), flush=True)
    for step in STEPS:
        values = times[step]
        print(f"{step}: median {statistics.median(values):.1f} s ({min(values):.1f}-{max(values):.1f}) "
              f"of {len(values)}")


if __name__ == "__main__":
    main()
