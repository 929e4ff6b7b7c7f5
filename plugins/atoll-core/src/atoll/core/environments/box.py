"""One command in a trial's box: the sandbox spec and limits every `atoll-local` exec gets.

`atoll-local` runs each exec of a trial with these, and the `checker` scorer
(atoll-checker) grades a search's candidates with them, because a candidate
must be graded exactly as the task's verifier grades it: the same mounts, the
same environment variables (the Dockerfile's ENV included), the same working
directory and the same limits. One builder used by both keeps them from
drifting apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from atoll.core.environments.trial_root import TrialRoot, User
from atoll.core.sandbox import Limits, Mount, Network, SandboxSpec
from atoll.core.sizes import MiB

EXEC_OUTPUT_BYTES = 64 * MiB
EXEC_PROCESSES = 4096  # the box as a whole; a grader limits each run of a candidate itself


def box_limits(
    *,
    timeout_sec: float | None,
    memory_mb: int | None,
    cpus: float | None,
    output_bytes: int = EXEC_OUTPUT_BYTES,
) -> Limits:
    """The limits of one exec: the phase's wall clock, the environment's memory and CPUs."""
    return Limits(
        cpu_seconds=None,
        wall_seconds=float(timeout_sec) if timeout_sec else None,
        memory_bytes=memory_mb * MiB if memory_mb else None,
        processes=EXEC_PROCESSES,
        file_size_bytes=None,
        open_files=None,
        stdout_bytes=output_bytes,
        stderr_bytes=output_bytes,
        cpus=float(cpus) if cpus else None,
    )


def box_spec(
    root: TrialRoot,
    user: User,
    *,
    cwd: str,
    limits: Limits,
    user_namespace: str,
    network: Network,
    image_env: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_mounts: Sequence[Mount] = (),
) -> SandboxSpec:
    """The spec of one exec as `user` in the trial's root.

    Every top-level directory of the root is bound writable at its path, with
    the trial's passwd and group; `image_env` (the Dockerfile's ENV) overrides
    the login variables and `env` (the exec's own) overrides both.
    """
    mounts = [Mount(root.fs / top, f"/{top}", writable=True) for top in root.tops()]
    mounts += [
        Mount(root.etc / "passwd", "/etc/passwd"),
        Mount(root.etc / "group", "/etc/group"),
    ]
    mounts += extra_mounts
    base_env = {
        "HOME": user.home,
        "USER": user.name,
        "LOGNAME": user.name,
        "TERM": "xterm",
        "LANG": "C.UTF-8",
    }
    return SandboxSpec(
        mounts=tuple(mounts),
        workdir=cwd,
        env={**base_env, **(image_env or {}), **(env or {})},
        uid=user.uid,
        gid=user.uid,
        network=network,
        limits=limits,
        user_namespace=user_namespace,
    )
