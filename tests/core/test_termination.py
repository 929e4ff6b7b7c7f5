"""SIGTERM unwinds through `finally` and atexit, and a host's own handler is left alone."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time

import pytest

from atoll.core.termination import (
    Terminated,
    UnwindOnSigterm,
    interrupted_status,
    loop_signal_handlers,
    sigterm_kept,
    sigterm_unwinds,
)

CHILD = """
import atexit, sys, time
from atoll.core.termination import sigterm_unwinds
atexit.register(lambda: print("atexit ran", flush=True))
with sigterm_unwinds():
    try:
        print("ready", flush=True)
        time.sleep(60)
    finally:
        print("finally ran", flush=True)
"""


def test_a_killed_process_runs_its_cleanup_and_exits_143() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        child.terminate()
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 128 + signal.SIGTERM, err
    assert out.splitlines() == ["finally ran", "atexit ran"]
    assert "Traceback" not in err


def test_sigterm_raises_system_exit_or_keyboard_interrupt_and_the_default_comes_back() -> None:
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    with pytest.raises(SystemExit) as exited, sigterm_unwinds():
        signal.raise_signal(signal.SIGTERM)
        time.sleep(5)  # not reached: the handler raises at once
    assert exited.value.code == 143
    with pytest.raises(KeyboardInterrupt) as interrupted, sigterm_unwinds(interrupt=True):
        signal.raise_signal(signal.SIGTERM)
        time.sleep(5)
    assert isinstance(interrupted.value, Terminated)
    assert interrupted_status(interrupted.value) == 143
    assert interrupted_status(KeyboardInterrupt()) == 130
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_hosts_own_handler_is_kept() -> None:
    seen: list[int] = []

    def host(signum: int, _frame: object) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGTERM, host)
    try:
        handler = UnwindOnSigterm()
        assert handler.install() is False
        signal.raise_signal(signal.SIGTERM)  # the host's handler, not an exit
        handler.restore()
        assert seen == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is host
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_handler_someone_else_replaced_is_not_restored_over() -> None:
    def later(_signum: int, _frame: object) -> None:
        pass

    handler = UnwindOnSigterm()
    assert handler.install() is True
    try:
        signal.signal(signal.SIGTERM, later)
        handler.restore()
        assert signal.getsignal(signal.SIGTERM) is later
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_off_the_main_thread_nothing_is_installed() -> None:
    installed: list[bool] = []
    thread = threading.Thread(target=lambda: installed.append(UnwindOnSigterm().install()))
    thread.start()
    thread.join()
    assert installed == [False]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_an_event_loop_runs_the_callback_while_the_block_lasts() -> None:
    async def main() -> list[str]:
        calls: list[str] = []
        loop = asyncio.get_running_loop()
        with loop_signal_handlers(loop, lambda: calls.append("stop")):
            signal.raise_signal(signal.SIGTERM)
            await asyncio.sleep(0.05)  # the loop delivers the signal to the callback
        return calls

    assert asyncio.run(main()) == ["stop"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_handler_set_within_sigterm_kept_is_gone_after_it() -> None:
    """As `ray.init()` does: its handler replaced the default for good, and `sigterm_unwinds`
    then refused to install over it."""

    def libraries(_signum: int, _frame: object) -> None:
        raise AssertionError("not reached")

    with sigterm_kept():
        signal.signal(signal.SIGTERM, libraries)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    with sigterm_unwinds(), sigterm_kept():
        signal.signal(signal.SIGTERM, libraries)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
