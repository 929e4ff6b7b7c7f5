"""Checks of running and limiting: exit statuses, stdin, the environment, every limit, cancel.

Each hostile program must end with the right Status, soon, and leave the
host able to run the next one.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.conformance.suite import Box, describe, expect
from atoll.core.sandbox.spec import Limits, Status
from atoll.core.sizes import MiB


def py(code: str) -> list[str]:
    return ["python3", "-c", code]


FORK_BOMB = ["sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 30"]
MEMORY_BOMB = py("chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 2**20))")
CPU_SPIN = py("while True:\n    pass")
CPU_SPIN_FORKED = ["sh", "-c", "for i in 1 2 3; do (while :; do :; done) & done; wait"]
SLEEP = ["sleep", "60"]
SLEEP_SILENT = ["sh", "-c", "exec >/dev/null 2>&1; sleep 60"]
YES = ["yes"]
YES_STDERR = ["sh", "-c", "yes >&2"]


def plain_run(box: Box) -> None:
    """A plain run reports its stdout, stderr and exit code, as the spec's uid."""
    result = box.run(["sh", "-c", "id -u; echo oops >&2; exit 3"])
    expect(result.status is Status.RUNTIME_ERROR, f"exit 3 is a runtime error: {describe(result)}")
    expect(result.exit_code == 3 and result.signal is None, f"exit code 3: {describe(result)}")
    expect(result.stdout == f"{box.uid}\n".encode(), f"runs as uid {box.uid}: {describe(result)}")
    expect(result.stderr == b"oops\n", f"stderr kept apart: {describe(result)}")
    expect(result.wall_seconds < 5, f"a trivial run took {result.wall_seconds:.1f} s")


def stdin_reaches_the_program(box: Box) -> None:
    """300 kB of stdin reach the program unchanged."""
    data = os.urandom(300_000)
    result = box.run(["cat"], stdin=data)
    expect(result.ok and result.stdout == data, f"cat echoes its input: {describe(result)}")


def killed_by_a_signal(box: Box) -> None:
    """A program killed by a signal is a runtime error that names the signal."""
    result = box.run(["sh", "-c", "kill -SEGV $$"])
    expect(result.status is Status.RUNTIME_ERROR, f"SIGSEGV is a runtime error: {describe(result)}")
    expect(result.signal == signal.SIGSEGV, f"signal 11 reported: {describe(result)}")


def only_the_declared_environment(box: Box) -> None:
    """The program sees the spec's environment, never the host's."""
    name = "ATOLL_CONFORMANCE_HOST_SECRET"
    os.environ[name] = "hunter2"
    try:
        result = box.run(["env"], dataclasses.replace(box.spec, env={"GREETING": "hello"}))
    finally:
        os.environ.pop(name, None)
    expect(result.ok, f"env runs: {describe(result)}")
    expect(b"GREETING=hello" in result.stdout, "the spec's variable is set")
    expect(b"hunter2" not in result.stdout, "a host variable leaked into the box")


def fork_bomb(box: Box) -> None:
    """A fork bomb is stopped at the process limit and the wall clock; the next run still starts."""
    spec = box.limited(processes=32, wall_seconds=3)
    result = box.run(FORK_BOMB, spec)
    expect(result.status is not Status.OK, f"a fork bomb cannot succeed: {describe(result)}")
    expect(result.wall_seconds < 10, f"a fork bomb ran {result.wall_seconds:.1f} s")
    after = box.run(["true"], spec)
    expect(after.ok, f"a run after the fork bomb fails: {describe(after)}")


def memory_bomb(box: Box) -> None:
    """A program that allocates without end is a memory limit, stopped near the limit."""
    result = box.run(MEMORY_BOMB, box.limited(memory_bytes=96 * MiB))
    expect(result.status is Status.MEMORY_LIMIT, f"memory limit expected: {describe(result)}")
    expect(result.peak_memory_bytes <= 110 * MiB, f"peak over the limit: {describe(result)}")


def cpu_spin(box: Box) -> None:
    """A busy loop is a CPU time limit, at about the limit's CPU seconds."""
    result = box.run(CPU_SPIN, box.limited(cpu_seconds=1, wall_seconds=20))
    expect(result.status is Status.CPU_TIME_LIMIT, f"CPU time limit expected: {describe(result)}")
    # A cgroup's clock and the kernel's per-process rlimit clock differ a little on a busy VM.
    expect(0.5 <= result.cpu_seconds <= 4, f"CPU time near 1 s: {describe(result)}")
    expect(result.wall_seconds < 8, f"stopped late: {describe(result)}")


def cpu_spread_over_processes(box: Box) -> None:
    """CPU time spread over several processes counts as a whole."""
    result = box.run(CPU_SPIN_FORKED, box.limited(cpu_seconds=1, wall_seconds=20))
    expect(result.status is Status.CPU_TIME_LIMIT, f"CPU time limit expected: {describe(result)}")
    expect(result.wall_seconds < 8, f"stopped late: {describe(result)}")


def sleep_past_the_wall_clock(box: Box) -> None:
    """A sleeper is stopped at its wall clock, also one that closed its output."""
    spec = box.limited(wall_seconds=1)
    for argv in (SLEEP, SLEEP_SILENT):
        result = box.run(argv, spec)
        expect(result.status is Status.WALL_TIME_LIMIT, f"{argv}: wall limit: {describe(result)}")
        expect(0.9 <= result.wall_seconds < 5, f"{argv}: stopped at 1 s: {describe(result)}")


def endless_output(box: Box) -> None:
    """Endless stdout or stderr is an output limit; the first bytes are kept, marked truncated."""
    spec = box.limited(stdout_bytes=1000, stderr_bytes=500)
    result = box.run(YES, spec)
    expect(result.status is Status.OUTPUT_LIMIT, f"output limit expected: {describe(result)}")
    expect(result.stdout == b"y\n" * 500, "the first 1000 bytes of stdout are kept")
    expect(result.stdout_truncated, "stdout is marked truncated")
    result = box.run(YES_STDERR, spec)
    expect(result.status is Status.OUTPUT_LIMIT, f"output limit expected: {describe(result)}")
    expect(result.stderr == b"y\n" * 250, "the first 500 bytes of stderr are kept")
    expect(result.stderr_truncated, "stderr is marked truncated")


def file_size_limit(box: Box) -> None:
    """Writing a file over the file-size limit is an output limit."""
    result = box.run(
        ["sh", "-c", "head -c 4000000 /dev/zero > /tmp/big"], box.limited(file_size_bytes=MiB)
    )
    expect(result.status is Status.OUTPUT_LIMIT, f"output limit expected: {describe(result)}")


def open_files_limit(box: Box) -> None:
    """Opening more files than the limit fails in the program."""
    code = "files = [open('/dev/null') for _ in range(100)]"
    result = box.run(py(code), box.limited(open_files=32))
    expect(result.status is Status.RUNTIME_ERROR, f"runtime error expected: {describe(result)}")
    expect(b"Too many open files" in result.stderr, f"EMFILE expected: {describe(result)}")


def stack_and_address_space(box: Box) -> None:
    """The stack and address-space limits reach the program, and a larger allocation fails."""
    spec = box.limited(stack_bytes=64 * MiB, address_space_bytes=256 * MiB)
    result = box.run(["sh", "-c", "ulimit -s; ulimit -v"], spec)
    expect(result.ok, f"ulimit runs: {describe(result)}")
    expect(result.stdout == b"65536\n262144\n", f"the limits in KiB: {result.stdout!r}")
    big = box.run(py("bytearray(400 * 2**20)"), spec)
    expect(big.status is not Status.OK, f"400 MiB under a 256 MiB limit: {describe(big)}")
    expect(b"MemoryError" in big.stderr, f"the allocation itself fails: {describe(big)}")


def no_limits(box: Box) -> None:
    """A spec without limits runs unlimited."""
    limits = Limits(
        cpu_seconds=None,
        wall_seconds=None,
        memory_bytes=None,
        processes=None,
        file_size_bytes=None,
        open_files=None,
    )
    result = box.run(["sh", "-c", "echo fine"], dataclasses.replace(box.spec, limits=limits))
    expect(result.ok and result.stdout == b"fine\n", f"runs: {describe(result)}")


def parallel_runs(box: Box) -> None:
    """40 runs from 8 threads through one backend each get their own output."""
    spec = box.limited(memory_bytes=64 * MiB)

    def one(i: int) -> bytes:
        result = box.run(["sh", "-c", f"echo {i}"], spec)
        expect(result.ok, f"run {i}: {describe(result)}")
        return result.stdout

    with ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(one, range(40)))
    expect(outputs == [f"{i}\n".encode() for i in range(40)], "outputs mixed up between runs")


def cancel(box: Box) -> None:
    """Another thread's cancel ends a run at once, before or while it runs."""
    with CancelToken() as token:
        timer = threading.Timer(1.0, token.cancel)
        started = time.monotonic()
        timer.start()
        try:
            result = box.run(SLEEP, cancel=token)
        finally:
            timer.cancel()
        took = time.monotonic() - started
    expect(result.status is Status.WALL_TIME_LIMIT, f"a cancelled run: {describe(result)}")
    expect(1.0 <= took < 10, f"cancelled after 1 s, returned after {took:.1f} s")
    with CancelToken() as token:
        token.cancel()
        started = time.monotonic()
        result = box.run(SLEEP, cancel=token)
        took = time.monotonic() - started
    expect(result.status is Status.WALL_TIME_LIMIT, f"cancelled before: {describe(result)}")
    expect(took < 10, f"a run cancelled before it started took {took:.1f} s")
