"""Checks of `pipes=`: two programs joined to each other (a judge's interactor and a program).

A backend that `supports_pipes` must close the caller's pipe ends once its
program has started, so that one side's exit is the other's end of input; a
backend that does not must refuse them, closing them all the same.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

from atoll.core.sandbox.conformance.limits import py
from atoll.core.sandbox.conformance.suite import Box, describe, expect, not_applicable
from atoll.core.sandbox.spec import Pipes, SandboxError, SandboxResult, SandboxSpec, Status

# Asks for numbers, adds up the doubles it gets back, says the total on stderr.
ASKER = py(
    "import sys\n"
    "total = 0\n"
    "for i in range(3):\n"
    "    print(i + 1, flush=True)\n"
    "    total += int(sys.stdin.readline())\n"
    "sys.stderr.write(f'total {total}\\n')\n"
)
DOUBLER = py("import sys\nfor line in sys.stdin:\n    print(2 * int(line), flush=True)\n")


def _joined(
    box: Box, left: list[str], right: list[str], left_spec: SandboxSpec | None = None
) -> tuple[SandboxResult, SandboxResult]:
    """Run `left` and `right` at once, each one's stdout the other's stdin."""
    left_in, right_out = os.pipe()
    right_in, left_out = os.pipe()
    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(box.run, left, left_spec, pipes=Pipes(left_in, left_out))
        b = pool.submit(box.run, right, None, pipes=Pipes(right_in, right_out))
        return a.result(), b.result()


def _open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def _needs_pipes(box: Box) -> None:
    if not box.backend.supports_pipes:
        not_applicable(f"the {box.backend.name} backend does not join programs to host pipes")


def pipes_talk(box: Box) -> None:
    """Two programs talk through pipes; one's exit ends the other's input; no pipe end leaks."""
    _needs_pipes(box)
    before = _open_fds()
    asker, doubler = _joined(box, ASKER, DOUBLER)
    expect(asker.status is Status.OK and asker.stderr == b"total 12\n", describe(asker))
    # The asker's exit is the doubler's end of input: it finished, not timed out.
    expect(doubler.status is Status.OK and doubler.wall_seconds < 5, describe(doubler))
    expect(asker.stdout == b"" and doubler.stdout == b"", "output went to the pipes, not stdout")
    leaked = _open_fds() - before
    expect(not leaked, f"the pipe ends handed to the backend were not closed: {sorted(leaked)}")


def pipes_deadlock(box: Box) -> None:
    """Two sides that both wait end at the shorter wall clock, and the other then sees its end."""
    _needs_pipes(box)
    started = time.monotonic()
    stuck, reader = _joined(box, ["sleep", "60"], ["cat"], box.limited(wall_seconds=2))
    expect(stuck.status is Status.WALL_TIME_LIMIT, describe(stuck))
    expect(reader.status is Status.OK, f"its input ended with the sleeper: {describe(reader)}")
    expect(time.monotonic() - started < 10, "the pair took longer than the wall clock")


def pipes_broken(box: Box) -> None:
    """Writing to a side that left is a broken pipe (SIGPIPE)."""
    _needs_pipes(box)
    flood, quitter = _joined(box, ["yes"], ["head", "-c", "10"])
    expect(quitter.status is Status.OK, describe(quitter))
    expect(flood.status is Status.RUNTIME_ERROR and flood.signal == signal.SIGPIPE, describe(flood))


def pipes_refused(box: Box) -> None:
    """A backend without pipe support refuses `pipes=` with SandboxError and closes both ends."""
    if box.backend.supports_pipes:
        not_applicable(f"the {box.backend.name} backend joins programs to host pipes")
    read_end, write_end = os.pipe()
    try:
        result = box.run(["true"], pipes=Pipes(read_end, write_end))
    except SandboxError:
        pass
    else:
        expect(False, f"pipes were accepted by a backend that says it has none: {describe(result)}")
    still_open = []
    for fd in (read_end, write_end):
        try:
            os.fstat(fd)
            still_open.append(fd)
        except OSError:
            continue
    for fd in still_open:
        os.close(fd)
    expect(not still_open, f"descriptors {still_open} were left open")
