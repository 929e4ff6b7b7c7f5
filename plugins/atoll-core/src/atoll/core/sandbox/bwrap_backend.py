"""The bubblewrap backend: namespaces, a tmpfs root, a per-run cgroup and rlimits.

Needs no container engine, only `bwrap` and `setpriv` and root (to switch to
the spec's unprivileged uid). A run in a fresh box costs a few milliseconds
over a plain subprocess; a session (`session()`) prepares the box once and
starts each run in a private copy of it, for a fraction of that, which
matters when a judge runs dozens of programs per submission.
"""

from __future__ import annotations

import os
import shlex
import shutil
import threading
from collections.abc import Sequence

from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.bwrap_argv import bwrap_argv
from atoll.core.sandbox.bwrap_run import Start, Starter, run_in_box
from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.cgroups import RunCgroup, created_groups
from atoll.core.sandbox.rlimits import run_rlimits, ulimit_lines
from atoll.core.sandbox.session import SandboxSession
from atoll.core.sandbox.spec import (
    Limits,
    Pipes,
    SandboxError,
    SandboxResult,
    SandboxSpec,
    Status,
)

# The shell that joins the cgroups and sets rlimits before `exec bwrap`: dash
# starts in about a millisecond; bash is the fallback.
_SHELL = next((s for s in ("/bin/dash", "/usr/bin/dash") if os.path.exists(s)), "/bin/bash")

# Arms the parent-death signal before the shell runs (see `_prelude`).
_DIE_WITH_US = ("setpriv", "--pdeathsig", "KILL", "--")


def _prelude(limits: Limits, group: RunCgroup | None, userns: tuple[int, str] | None = None) -> str:
    """Shell lines run just before `exec bwrap`: join the cgroups, set rlimits, open the userns.

    The shell runs under `setpriv --pdeathsig KILL`, so it dies with this
    process; its first line checks that this process was still its parent
    once that was armed. Without both, a parent killed while the shell ran
    left a bwrap that `--die-with-parent` ties to nobody: a program under no
    supervisor and no wall clock, for ever.
    """
    lines = ["set -e", f'[ "$PPID" = "{os.getpid()}" ] || exit 125']
    if userns is not None:
        digit, path = userns
        lines.append(f"exec {digit}<{shlex.quote(path)}")
    if group is not None:
        lines += [f"echo $$ > {shlex.quote(str(p))}" for p in group.procs_files()]
    lines += ulimit_lines(run_rlimits(limits, group), dash=_SHELL.endswith("dash"))
    lines.append('exec "$@"')
    return "\n".join(lines)


def fresh_box(argv: Sequence[str], spec: SandboxSpec) -> Starter:
    """How a run in a box of its own starts: `setpriv`, the shell prelude, then bubblewrap."""

    def start(group: RunCgroup | None, status_w: int) -> Start:
        userns = None
        if spec.user_namespace is not None:
            # A descriptor number the prelude can open the namespace on: any digit but status_w.
            userns = (9 if status_w != 9 else 8, spec.user_namespace)
        command = bwrap_argv(
            argv,
            spec,
            status_fd=status_w,
            tmpfs_bytes=spec.limits.memory_bytes,
            userns_fd=userns[0] if userns else None,
        )
        prelude = _prelude(spec.limits, group, userns)
        return Start([*_DIE_WITH_US, _SHELL, "-c", prelude, "sandbox", *command])

    return start


class BwrapBackend(SandboxBackend):
    """Runs each command in fresh bubblewrap namespaces as an unprivileged uid."""

    name = "bwrap"
    supports_pipes = True

    def __init__(self) -> None:
        self._checked = False
        self._check_lock = threading.Lock()

    def check(self) -> None:
        with self._check_lock:
            if self._checked:
                return
            for tool, package in (("bwrap", "bubblewrap"), ("setpriv", "util-linux")):
                if shutil.which(tool) is None:
                    raise SandboxError(
                        f"`{tool}` is not installed; install it with `apt-get install {package}`"
                    )
            if os.geteuid() != 0:
                raise SandboxError(
                    "the bwrap backend must run as root to switch sandboxed programs to an "
                    "unprivileged uid; run as root or use the docker backend"
                )
            probe = run_in_box(
                SandboxSpec(), None, None, None, fresh_box(["/bin/true"], SandboxSpec())
            )
            if probe.status is not Status.OK:
                raise SandboxError(
                    "bubblewrap cannot start a sandbox here: "
                    + probe.stderr.decode(errors="replace").strip()
                )
            self._checked = True

    def run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None = None,
        *,
        pipes: Pipes | None = None,
        cancel: CancelToken | None = None,
    ) -> SandboxResult:
        try:
            self.check()
        except SandboxError:
            if pipes is not None:
                pipes.close()
            raise
        return run_in_box(spec, stdin, cancel, pipes, fresh_box(argv, spec))

    def session(self, spec: SandboxSpec, slots: Sequence[str] = ()) -> SandboxSession:
        """A box prepared once, each run started in a private copy of it (see `bwrap_session`)."""
        from atoll.core.sandbox.bwrap_session import BwrapSession

        self.check()
        return BwrapSession(spec, tuple(slots))

    def leftovers(self) -> list[str]:
        """This process's per-run cgroups that still exist (but those open sessions keep ready)."""
        from atoll.core.sandbox.bwrap_session import spare_groups

        spares = spare_groups()
        return [str(group) for group in created_groups() if str(group) not in spares]
