"""Two sandboxed programs joined by pipes (what a judge's interactor and a program need).

Each side gets one end of two pipes; the backend closes the caller's copies
once its program has started, so that one side's exit is the other's
end-of-file and nothing waits forever.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_conformance import py, with_limits

from atoll.core.sandbox import Pipes, SandboxError, SandboxResult, SandboxSpec, Status

pytestmark = pytest.mark.timeout(120)

# Asks for numbers, doubles each answer, says "done" after three.
ASKER = py(
    "import sys\n"
    "total = 0\n"
    "for i in range(3):\n"
    "    print(i + 1, flush=True)\n"
    "    total += int(sys.stdin.readline())\n"
    "sys.stderr.write(f'total {total}\\n')\n"
)
DOUBLER = py("import sys\nfor line in sys.stdin:\n    print(2 * int(line), flush=True)\n")


def joined(
    backend, spec, left: list[str], right: list[str], right_spec=None
) -> tuple[SandboxResult, SandboxResult]:
    """Run `left` and `right` at once, each one's stdout the other's stdin."""
    left_in, right_out = os.pipe()
    right_in, left_out = os.pipe()
    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(backend.run, left, spec, pipes=Pipes(left_in, left_out))
        b = pool.submit(backend.run, right, right_spec or spec, pipes=Pipes(right_in, right_out))
        return a.result(), b.result()


def open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def test_two_programs_talk_through_pipes(box):
    backend, spec = box
    if backend.name != "bwrap":
        pytest.skip("only the bwrap backend joins programs to host pipes")
    before = open_fds()
    asker, doubler = joined(backend, spec, ASKER, DOUBLER)
    assert asker.status is Status.OK and asker.stderr == b"total 12\n"
    # The asker's exit is the doubler's end of input: it finished, not timed out.
    assert doubler.status is Status.OK and doubler.wall_seconds < 5
    assert asker.stdout == b"" and doubler.stdout == b""
    assert open_fds() <= before, "the pipe ends handed to the backend were not closed"


def test_a_side_that_waits_forever_ends_at_its_wall_clock(box):
    backend, spec = box
    if backend.name != "bwrap":
        pytest.skip("only the bwrap backend joins programs to host pipes")
    started = time.monotonic()
    # Both read first: a deadlock, broken only by the sleeper's shorter wall clock.
    stuck, reader = joined(
        backend, with_limits(spec, wall_seconds=2), ["sleep", "60"], ["cat"], spec
    )
    assert stuck.status is Status.WALL_TIME_LIMIT
    assert reader.status is Status.OK  # its input ended when the sleeper was killed
    assert time.monotonic() - started < 10


def test_writing_to_a_side_that_left_is_a_broken_pipe(box):
    backend, spec = box
    if backend.name != "bwrap":
        pytest.skip("only the bwrap backend joins programs to host pipes")
    flood, quitter = joined(backend, spec, ["yes"], ["head", "-c", "10"])
    assert quitter.status is Status.OK
    assert flood.status is Status.RUNTIME_ERROR and flood.signal == 13  # SIGPIPE


def test_docker_refuses_pipes_and_closes_them() -> None:
    from atoll.core.sandbox.docker_backend import DockerBackend

    read_end, write_end = os.pipe()
    with pytest.raises(SandboxError, match="bwrap"):
        DockerBackend().run(["true"], SandboxSpec(), pipes=Pipes(read_end, write_end))
    for fd in (read_end, write_end):
        with pytest.raises(OSError):
            os.fstat(fd)
