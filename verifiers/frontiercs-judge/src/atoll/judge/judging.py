"""What the judge service asks of an engine, wherever the cases run (one machine or a cluster)."""

from __future__ import annotations

from typing import Any, Protocol

from atoll.judge.problems import Problem


class Judging(Protocol):
    """`Engine` (this machine) and `RayEngine` (a Ray cluster's judge nodes) both are one."""

    problems: dict[str, Problem]

    @property
    def workers(self) -> int:
        """Processes kept busy at once: the worker budget a client may size its load to."""
        ...

    def problem(self, pid: str) -> Problem: ...

    def judge(self, pid: str, source: bytes) -> dict[str, Any]: ...

    def wait_idle(self, timeout_s: float) -> bool:
        """Until nothing is under way: no submission judged, nothing readied for the next
        (False: `timeout_s` passed first)."""
        ...

    def stop(self) -> None: ...

    def close(self) -> None: ...
