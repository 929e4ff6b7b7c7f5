"""A child's whole process group stops with its owner: at the block's end, on SIGTERM, on Ctrl-C.

Each owner here is a real Python process running `process_group.Owner`; its
child is a shell whose group holds more than one process, one of which sits
out SIGTERM for a while (as a server with a request in flight does). What is
checked is /proc: no member of the child's group runs afterwards, by pid and
by group, within a bound.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from support.processes import running
from support.waiting import wait_for

from atoll.core import process_group

# The leader exits at once on SIGTERM; a member of its group takes a second to finish.
SLOW_MEMBER = '(trap "sleep 1; exit 0" TERM; while :; do sleep 0.1; done) & exec sleep 60'
# Every member sits out SIGTERM: only SIGKILL ends them.
DEAF = "trap '' TERM; (trap '' TERM; while :; do sleep 0.1; done) & while :; do sleep 0.1; done"

OWNER = """
import sys, time
from atoll.core import process_group
with process_group.Owner(grace=float(sys.argv[2])) as owner:
    child = owner.spawn(["bash", "-c", sys.argv[3]])
    time.sleep(0.5)  # the traps are set
    print(child.pid, flush=True)
    sys.stdin.readline()  # the test has seen the group; a signal may come meanwhile
    if sys.argv[1] == "raise":
        raise RuntimeError("the owner failed")
print("after the block", flush=True)
"""


def _owner(ending: str, grace: float, script: str) -> tuple[subprocess.Popen[str], int]:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, ending, str(grace), script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert owner.stdout is not None
    line = owner.stdout.readline()
    assert line.strip().isdigit(), owner.stderr.read() if owner.stderr else ""
    return owner, int(line)


def _members_at_start(pgid: int) -> list[int]:
    """The group's members once the shell has started its second process."""
    wait_for(lambda: len(process_group.members(pgid)) >= 2, 10, "the group has two members")
    members = process_group.members(pgid)
    assert pgid in members, members
    return members


@pytest.mark.slow
@pytest.mark.parametrize(
    ("ending", "signum", "status"),
    [
        ("exit", None, 0),
        ("raise", None, 1),
        ("wait", signal.SIGTERM, 128 + signal.SIGTERM),
        ("wait", signal.SIGINT, -signal.SIGINT),  # Python ends by SIGINT on a KeyboardInterrupt
    ],
)
def test_the_owners_end_stops_the_whole_group(
    ending: str, signum: signal.Signals | None, status: int
) -> None:
    owner, pgid = _owner(ending, 10.0, SLOW_MEMBER)
    members = _members_at_start(pgid)
    started = time.monotonic()
    if signum is None:
        out, err = owner.communicate("go\n", timeout=30)
    else:
        owner.send_signal(signum)
        owner.wait(timeout=30)  # stdin stays open: only the signal ends the wait
        out, err = owner.communicate()
    assert owner.returncode == status, err
    assert time.monotonic() - started < 8  # SIGTERM sufficed: no wait for the grace
    assert not process_group.group_alive(pgid)
    assert not [pid for pid in members if running(pid)]
    assert ("after the block" in out) == (ending == "exit")


@pytest.mark.slow
def test_a_group_deaf_to_sigterm_is_killed_after_the_grace() -> None:
    owner, pgid = _owner("wait", 1.0, DEAF)
    members = _members_at_start(pgid)
    started = time.monotonic()
    owner.send_signal(signal.SIGTERM)
    owner.wait(timeout=30)
    owner.communicate()
    assert 1.0 <= time.monotonic() - started < 8
    assert owner.returncode == 128 + signal.SIGTERM
    assert not [pid for pid in members if running(pid)]


@pytest.mark.slow
def test_a_second_signal_during_the_stop_kills_at_once_and_the_stop_completes() -> None:
    owner, pgid = _owner("wait", 60.0, DEAF)
    members = _members_at_start(pgid)
    owner.send_signal(signal.SIGTERM)
    time.sleep(1.0)  # the stop waits out its grace: the group sits out SIGTERM
    assert process_group.group_alive(pgid)
    started = time.monotonic()
    owner.send_signal(signal.SIGINT)
    owner.wait(timeout=30)
    owner.communicate()
    assert time.monotonic() - started < 8  # not the 60 s grace
    assert owner.returncode == -signal.SIGINT  # delivered once the stop is done: it ends the owner
    assert not [pid for pid in members if running(pid)]


def test_stop_groups_returns_once_the_whole_group_is_gone() -> None:
    child = process_group.spawn(["bash", "-c", SLOW_MEMBER])
    time.sleep(0.5)  # the member has set its trap
    members = _members_at_start(child.pid)
    assert process_group.stop_groups([child.pid], grace=10, reap=child.poll) == []
    assert child.returncode is not None and not process_group.group_alive(child.pid)
    assert not [pid for pid in members if running(pid)]


def test_stopping_a_group_that_already_ended_returns_at_once() -> None:
    child = process_group.spawn(["bash", "-c", "exit 0"])
    child.wait()
    started = time.monotonic()
    assert process_group.stop_group(child.pid)
    assert time.monotonic() - started < 1


def test_released_children_outlive_the_block() -> None:
    with process_group.Owner(grace=5) as owner:
        kept = owner.spawn(["sleep", "60"])
        stopped = owner.spawn(["sleep", "60"])
        owner.release(kept)
    try:
        assert stopped.poll() == -signal.SIGTERM
        assert kept.poll() is None and process_group.group_alive(kept.pid)
    finally:
        process_group.stop_process(kept)
    assert not process_group.group_alive(kept.pid)
