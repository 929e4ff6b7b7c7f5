"""Helpers of the stack tests: free ports, a process census by marker, the atoll command.

Every process a test starts carries a unique marker in its environment (Reef
passes its environment on to its services), so "no process left behind" is
checked by scanning /proc for that marker, unaffected by other test runs on
the same machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

MARK_ENV = "ATOLL_STACK_TEST_MARK"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def marked_processes(mark: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds `MARK_ENV=mark`."""
    needle = f"{MARK_ENV}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            if stat[stat.rindex(")") + 2] == "Z":
                continue
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def atoll(
    args: list[str], env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "atoll.core.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
