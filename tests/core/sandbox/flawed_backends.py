"""Third-party backends with one flaw each: the conformance suite must catch every one.

Each wraps the real bubblewrap backend and breaks one promise of the
contract (the network setting, read-only mounts, the host's files, the
leftovers, the pipes it claims, a seekable stdin), as a careless backend would.
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from atoll.core.sandbox import (
    CancelToken,
    Mount,
    Network,
    Pipes,
    SandboxBackend,
    SandboxResult,
    SandboxSpec,
    get_backend,
)


class Flawed(SandboxBackend):
    """bubblewrap, with the spec changed before each run by `flaw`."""

    name = "flawed"
    supports_pipes = True

    def __init__(self, flaw: Callable[[SandboxSpec], SandboxSpec] = lambda spec: spec) -> None:
        self.inner = get_backend("bwrap")
        self.flaw = flaw

    def check(self) -> None:
        self.inner.check()

    def run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None = None,
        *,
        pipes: Pipes | None = None,
        cancel: CancelToken | None = None,
    ) -> SandboxResult:
        return self.inner.run(argv, self.flaw(spec), stdin, pipes=pipes, cancel=cancel)

    def leftovers(self) -> list[str]:
        return self.inner.leftovers()


def on_the_host_network() -> Flawed:
    return Flawed(lambda spec: dataclasses.replace(spec, network=Network.HOST))


def mounts_everything_writable() -> Flawed:
    return Flawed(
        lambda spec: dataclasses.replace(
            spec, mounts=tuple(dataclasses.replace(m, writable=True) for m in spec.mounts)
        )
    )


def shows_the_host_tmp() -> Flawed:
    return Flawed(lambda spec: dataclasses.replace(spec, mounts=(Mount(Path("/tmp"), "/tmp"),)))


def streams_a_seekable_stdin() -> Flawed:
    """Ignores `stdin_seekable`: the program gets its input through a pipe all the same."""
    return Flawed(lambda spec: dataclasses.replace(spec, stdin_seekable=False))


class WritableStdinFile(Flawed):
    """Gives a seekable stdin as a plain file opened read-write, which the program can change."""

    def run(self, argv, spec, stdin=None, *, pipes=None, cancel=None):  # type: ignore[no-untyped-def]
        if not spec.stdin_seekable:
            return super().run(argv, spec, stdin, pipes=pipes, cancel=cancel)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "stdin"
            path.write_bytes(stdin or b"")
            path.chmod(0o666)
            spec = dataclasses.replace(
                spec, stdin_seekable=False, mounts=(*spec.mounts, Mount(path, "/stdin", True))
            )
            opened = ["sh", "-c", 'exec 0<>/stdin; exec "$@"', "sandbox", *argv]
            return super().run(opened, spec, None, pipes=pipes, cancel=cancel)


class LeavesASleeper(Flawed):
    """Starts a process as the run's uid outside the box, and forgets it."""

    def __init__(self) -> None:
        super().__init__()
        self.sleepers: list[subprocess.Popen[bytes]] = []

    def run(self, argv, spec, stdin=None, *, pipes=None, cancel=None):  # type: ignore[no-untyped-def]
        result = super().run(argv, spec, stdin, pipes=pipes, cancel=cancel)
        switch = ["setpriv", f"--reuid={spec.uid}", f"--regid={spec.gid}", "--clear-groups"]
        sleeper = subprocess.Popen([*switch, "sleep", "60"])
        self.sleepers.append(sleeper)
        _wait_until_running_as(sleeper.pid, spec.uid)
        return result

    def stop_sleepers(self) -> None:
        for sleeper in self.sleepers:
            sleeper.kill()
            sleeper.wait()


class ClaimsNoPipesButTakesThem(Flawed):
    supports_pipes = False


class Crashes(Flawed):
    """A backend with a bug: every run raises."""

    def run(self, argv, spec, stdin=None, *, pipes=None, cancel=None):  # type: ignore[no-untyped-def]
        raise RuntimeError("backend bug")


def _wait_until_running_as(pid: int, uid: int, within_s: float = 10.0) -> None:
    """`setpriv` switches uid just after it starts: the flaw exists only from then on."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status").read_text()
        uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
        if str(uid) in uids and "sleep" in Path(f"/proc/{pid}/comm").read_text():
            return
        time.sleep(0.005)
    raise AssertionError(f"the sleeper {pid} never ran as uid {uid}")
