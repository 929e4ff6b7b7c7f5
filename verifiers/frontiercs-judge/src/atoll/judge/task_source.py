"""`frontiercs/<ID>` task names on `atoll run`, resolved from the configured FrontierCS checkout.

A dynamic task source (see `Registration.dynamic`): `atoll run --task
frontiercs/17` becomes the directory of a task written for problem 17 by
`task_writer`, kept under the user's cache directory and reused while the
problem's files, the checkout's testlib and this writer are unchanged. With
no checkout configured (FRONTIERCS_HOME unset), or a name with a `@ref`,
the name is left to Harbor's registry, where `org/name` references live.
"""

from __future__ import annotations

import hashlib
import os
from importlib import metadata
from pathlib import Path

from atoll.core.registry import TaskSourceError
from atoll.core.user_dirs import cache_dir
from atoll.judge.checkout import HOME_ENV, configured_home
from atoll.judge.engine import JudgeInfrastructureError
from atoll.judge.problems import ProblemError
from atoll.judge.task_writer import TaskWriteError

PREFIX = "frontiercs/"
CACHE_ENV = "ATOLL_TASK_CACHE"


def resolve(name: str) -> Path | None:
    """The task directory for `frontiercs/<ID>`, written on first use; None to leave it to Harbor."""
    pid = name[len(PREFIX) :]
    home = configured_home()
    if home is None or "@" in pid or not pid or "/" in pid:
        return None
    from atoll.judge.task_cli import write_frontiercs_task

    try:
        target = task_cache() / f"frontiercs-{pid}-{_fingerprint(home, pid)}"
        if (target / "task.toml").is_file():
            return target
        write_frontiercs_task(pid, target, home, seed=None)
    except (ProblemError, JudgeInfrastructureError, TaskWriteError, OSError) as exc:
        raise TaskSourceError(f"task {name}: {exc} (the checkout is {HOME_ENV}={home})") from None
    return target


def task_cache() -> Path:
    """Where written tasks are kept: `$ATOLL_TASK_CACHE/frontiercs`, else `tasks/frontiercs` in
    atoll's cache."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]) / "frontiercs"
    return cache_dir("tasks", "frontiercs")


def _fingerprint(home: Path, pid: str) -> str:
    """A digest of what the task is made from: the problem's files, testlib, this writer."""
    digest = hashlib.sha256()
    try:
        version = metadata.version("atoll-frontiercs-judge")
    except metadata.PackageNotFoundError:
        version = "0"
    writer = Path(__file__).with_name("task_writer.py")
    parts: list[bytes] = [version.encode(), writer.read_bytes(), str(home.resolve()).encode()]
    for root in (home / "algorithmic" / "problems" / pid, home / "problems" / pid):
        if root.is_dir():
            for path in sorted(p for p in root.iterdir() if p.is_file()):
                parts += [path.name.encode(), path.read_bytes()]
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:16]
