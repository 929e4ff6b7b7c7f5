"""A user namespace that maps a block of unprivileged host ids onto ids 0..count-1 inside it.

Why: a task's root (its verifier, an installer step) expects to act as root does in a
container: switch to the task's other users, chown their files, signal their processes.
It must never be root of the host. A user namespace gives exactly that: the box's root is
id 0 inside, holding a container's capabilities over the ids of its namespace only, and
every one of those ids is an unprivileged host uid of the trial's block.

The namespace is made once per trial: a short-lived `unshare --user` process creates it,
this (root) process writes its id maps, keeps a descriptor to it and lets the process
exit. Each sandboxed run enters it with `nsenter --user=/proc/<this pid>/fd/<fd>`, so the
descriptor never leaks into a box and nothing outlives the trial but what `close` ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from atoll.core.sandbox.spec import SandboxError


class UserNamespace:
    """Ids 0..count-1 inside are host ids host_first..host_first+count-1."""

    def __init__(self, host_first: int, count: int) -> None:
        if host_first <= 0 or count <= 0:
            raise SandboxError("a user namespace maps a non-empty block of unprivileged host ids")
        for tool in ("unshare", "nsenter"):
            if shutil.which(tool) is None:
                raise SandboxError(f"`{tool}` is not installed; install util-linux")
        self.host_first = host_first
        self.count = count
        self._fd = self._create()

    def _create(self) -> int:
        holder = subprocess.Popen(
            ["unshare", "--user", "--", "sh", "-c", "echo ready; exec cat >/dev/null"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": "/usr/bin:/bin"},
        )
        try:
            assert holder.stdout is not None and holder.stdin is not None
            if holder.stdout.readline() != b"ready\n":
                raise SandboxError(
                    "cannot create a user namespace: "
                    + holder.communicate(timeout=5)[1].decode(errors="replace").strip()
                )
            mapping = f"0 {self.host_first} {self.count}\n"
            try:
                for kind in ("uid", "gid"):
                    with open(f"/proc/{holder.pid}/{kind}_map", "w") as handle:
                        handle.write(mapping)
                return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
            except OSError as exc:
                raise SandboxError(f"cannot map ids into a user namespace: {exc}") from exc
        finally:
            if holder.stdin is not None:
                holder.stdin.close()
            try:
                holder.wait(timeout=5)
            except subprocess.TimeoutExpired:
                holder.kill()
                holder.wait()

    @property
    def path(self) -> str:
        """What `nsenter --user=` opens, from any process this one starts."""
        if self._fd < 0:
            raise SandboxError("the user namespace is closed")
        return f"/proc/{os.getpid()}/fd/{self._fd}"

    def host_id(self, inside: int) -> int:
        if not 0 <= inside < self.count:
            raise SandboxError(f"id {inside} is not mapped in this user namespace")
        return self.host_first + inside

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> UserNamespace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
