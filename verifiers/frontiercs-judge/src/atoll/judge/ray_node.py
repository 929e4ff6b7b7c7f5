"""The judge of one machine of a Ray cluster: a Ray actor holding an `Engine` of its own.

One actor per judge node, placed on that node and holding all of its judge
units: it compiles a submission once for the machine (the engine's compile
cache, in the node's own state directory) and runs each case it is sent in
the same sandbox, with the same limits and checks, as a judge on one
machine. The problems are read from the same paths on every node (the
problems shipped with atoll need none).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atoll.judge.case_outcome import CaseOutcome
from atoll.judge.compiler import CompileError
from atoll.judge.engine import Engine
from atoll.judge.submission_result import CompileInfo


@dataclass(frozen=True)
class NodeSetup:
    """Where a node finds the problems the server serves, and which sandbox it runs."""

    problems_dir: str | None
    frontiercs: str | None
    backend: str
    problem_ids: tuple[str, ...]


@dataclass(frozen=True)
class CompileFailed:
    """The program does not compile (the same on every node): an invalid submission."""

    message: str


class NodeJudge:
    """Made on its node by Ray (`ray.remote(NodeJudge)`); its methods are the cluster's tasks."""

    def __init__(self, setup: NodeSetup, units: int) -> None:
        from atoll.judge.embedded import JudgeSetup

        local = JudgeSetup(
            problems_dir=Path(setup.problems_dir) if setup.problems_dir else None,
            workers=units,
            backend=setup.backend,
            frontiercs=Path(setup.frontiercs) if setup.frontiercs else None,
        )
        problems = local.problem_set().problems
        missing = sorted(set(setup.problem_ids) - set(problems))
        if missing:
            raise FileNotFoundError(
                f"this node lacks problems {', '.join(missing)}: give every judge node the "
                "server's --problems and --frontiercs paths"
            )
        self.engine: Engine = local.engine()

    def ready(self) -> int:
        """The processes this node keeps busy at once (the server waits on this)."""
        return self.engine.workers

    def prepare(self, pid: str, source: bytes) -> CompileInfo | CompileFailed:
        try:
            return self.engine.prepare(pid, source)
        except CompileError as exc:
            return CompileFailed(str(exc))

    def judge_case(self, pid: str, source: bytes, index: int) -> CaseOutcome | CompileFailed:
        try:
            return self.engine.judge_case(pid, source, index)
        except CompileError as exc:
            return CompileFailed(str(exc))
