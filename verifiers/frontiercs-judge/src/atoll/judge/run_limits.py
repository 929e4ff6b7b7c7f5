"""The authority's limits for a case's program, its checker and its interactor.

They are the judge's part of a verdict: a program meets here the CPU, wall
clock, memory, stack, address space, process and output limits it meets
there. The engine runs every case with them, and readies its sandbox
sessions for them while a program compiles (`warming`).
"""

from __future__ import annotations

import functools

from atoll.core.sandbox import Limits
from atoll.core.sizes import MiB
from atoll.judge.problems import Limits as CaseLimits

# The authority's caps (stdout 128 MiB, stderr 64 MiB): a program that logs to
# stderr, or pads its answer with whitespace, fares here as it does there.
STDOUT_CAP = 128 * MiB
STDERR_CAP = 64 * MiB
INTERACTIVE_STDERR_CAP = 1 * MiB  # the authority's cap on each side of a dialogue
PROCESSES = 128  # the authority's limit; threads count

# The authority's checker limits: 10 s CPU, 20 s wall clock, 256 MiB, 1 MiB of each output.
CHECKER_LIMITS = Limits(
    cpu_seconds=10.0,
    wall_seconds=20.0,
    memory_bytes=256 * MiB,
    processes=PROCESSES,
    file_size_bytes=16 * MiB,
    open_files=64,
    stdout_bytes=1 * MiB,
    stderr_bytes=1 * MiB,
    stack_bytes=256 * MiB,
)


@functools.lru_cache(maxsize=256)  # one per problem's limits: made once, not per case
def run_limits(case: CaseLimits, interactive: bool = False) -> Limits:
    """The authority's limits for a program on one case.

    The authority sets the stack and the address space to the memory limit:
    the usual 8 MiB stack would crash deep recursions it accepts, and without
    the address-space limit a program that reserves more memory than it
    touches would pass here and fail there. In a dialogue it sets no
    address-space limit and keeps 1 MiB of the program's stderr.
    """
    return Limits(
        cpu_seconds=case.cpu_seconds,
        wall_seconds=case.wall_seconds,
        memory_bytes=case.memory_bytes,
        processes=PROCESSES,
        file_size_bytes=16 * MiB,
        open_files=64,
        stdout_bytes=STDOUT_CAP,
        stderr_bytes=INTERACTIVE_STDERR_CAP if interactive else STDERR_CAP,
        stack_bytes=case.memory_bytes,
        address_space_bytes=None if interactive else case.memory_bytes,
    )


def interactor_limits(case: CaseLimits) -> Limits:
    """The authority's limits for an interactor: four times the program's CPU and memory."""
    return Limits(
        cpu_seconds=4 * case.cpu_seconds,
        wall_seconds=8 * case.cpu_seconds,
        memory_bytes=4 * case.memory_bytes,
        processes=PROCESSES,
        file_size_bytes=16 * MiB,
        open_files=64,
        stdout_bytes=1 * MiB,
        stderr_bytes=INTERACTIVE_STDERR_CAP,
        stack_bytes=4 * case.memory_bytes,
    )
