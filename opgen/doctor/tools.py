"""Running the programs a build runs, and reading what they say."""

from __future__ import annotations

import subprocess
from pathlib import Path

TOOL_TIMEOUT = 60  # seconds for nvcc, the compiler, ninja, nvidia-smi


def run_tool(command: list[str], timeout: int = TOOL_TIMEOUT) -> subprocess.CompletedProcess | None:
    """Run a tool, stdout and stderr as text; None if it cannot be started or hangs."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def read_head(path: Path, size: int) -> bytes:
    """The first `size` bytes of a file (b"" if unreadable): enough to tell a script."""
    try:
        with open(path, "rb") as file:
            return file.read(size)
    except OSError:
        return b""
