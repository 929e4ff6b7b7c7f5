"""What a finished sandbox run may not leave on the host: processes, mounts, the backend's own things.

Read from /proc, so it needs no help from the backend under audit beyond its
optional `leftovers()`.
"""

from __future__ import annotations

import time
from collections.abc import Container, Iterable
from pathlib import Path

from atoll.core.mounts import mount_points
from atoll.core.sandbox.base import SandboxBackend


def processes_of_uid(uid: int | Container[int], *, zombies: bool = False) -> list[int]:
    """Pids of this machine's processes whose real or effective uid is `uid` (or one of `uid`).

    Zombies (ended, not yet reaped) count only with `zombies`: they hold no
    memory and run nothing, but a parent that never reaps them is a leak too.
    """
    wanted: Container[int] = {uid} if isinstance(uid, int) else uid
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if not zombies and fields.get("State", "").strip().startswith("Z"):
            continue
        if any(int(x) in wanted for x in fields.get("Uid", "").split()[:2]):
            found.append(int(entry.name))
    return found


def new_mounts(before: set[str], watched: Iterable[str]) -> list[str]:
    """Mount points that appeared since `before` at or below one of `watched`.

    Only the places a run could have mounted onto are watched: other
    processes of a shared machine (a container engine, say) mount elsewhere.
    """
    roots = [w.rstrip("/") or "/" for w in watched]
    return sorted(
        m for m in mount_points() - before if any(m == r or m.startswith(r + "/") for r in roots)
    )


def leftovers(
    backend: SandboxBackend, uid: int, mounts_before: set[str], watched: Iterable[str]
) -> list[str]:
    """Everything a run of `backend` as `uid` left behind, each as one line (none is the rule)."""
    found = [f"process {pid} of uid {uid} outlived its run" for pid in _unreaped_after_grace(uid)]
    found += [f"{thing} outlived its run" for thing in backend.leftovers()]
    found += [f"mount at {m} outlived its run" for m in new_mounts(mounts_before, watched)]
    return found


#: How long a run's last processes may take to be reaped once the run has returned.
REAP_GRACE_S = 2.0


def _unreaped_after_grace(uid: int) -> list[int]:
    """The processes of `uid` still there (zombies too) `REAP_GRACE_S` after the run returned.

    A process leaves its cgroup as it exits, before its parent reaps it: a run
    whose cgroup is empty may still have zombies of its box for a moment, on a
    busy machine long enough to be seen. A leaked process stays.
    """
    deadline = time.monotonic() + REAP_GRACE_S
    while True:
        left = processes_of_uid(uid, zombies=True)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.02)
