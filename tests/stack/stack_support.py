"""Helpers of the stack tests: a process census by marker, the atoll command, Guidance-TTT's config.

Every process a test starts carries a unique marker in its environment (Reef
passes its environment on to its services), so "no process left behind" is
checked by scanning /proc for that marker, unaffected by other test runs on
the same machine.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from support.processes import processes_with_environment

from atoll.guidance_ttt.agent import stack_settings
from atoll.stack.config import StackConfig, stack_config

MARK_ENV = "ATOLL_STACK_TEST_MARK"


def marked_processes(mark: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds `MARK_ENV=mark`."""
    return processes_with_environment(f"{MARK_ENV}={mark}")


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


def guidance_stack_config(settings: Mapping[str, Any]) -> StackConfig:
    """The stack's config as Guidance-TTT hands it over for these run settings."""
    return stack_config(stack_settings(settings))
