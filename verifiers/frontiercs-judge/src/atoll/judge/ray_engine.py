"""Judging on a Ray cluster: each case a task on a judge node, the verdict assembled here.

`RayEngine` answers as `Engine` does (same `judge`, same results): a
submission is compiled on every judge node at once (each node once, cached by
source and flags), then its cases are sent to the nodes, as many at a time
to each as it has judge units, and their outcomes put together by
`submission_result` exactly as on one machine.

A node lost mid-judging (its actor dies with it) takes only its unfinished
cases with it: they are sent again to the nodes left, and each case counts
once, whichever node judged it. With no judge node left the submission is
the judge's failure (JudgeInfrastructureError), never a score. Nodes that
join the cluster are taken on at the next submission.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from atoll.judge.case_outcome import CaseOutcome
from atoll.judge.engine import JudgeInfrastructureError, JudgeStopped, UnknownProblem
from atoll.judge.problems import Problem
from atoll.judge.ray_cluster import JUDGE_RESOURCE, connect, judge_nodes
from atoll.judge.ray_node import CompileFailed, NodeJudge, NodeSetup
from atoll.judge.submission_result import CompileInfo, compile_error, result_of

log = logging.getLogger(__name__)

NODE_START_SECONDS = 180.0  # a node's judge readies its sandbox before it answers
WAIT_SLICE_SECONDS = 1.0  # how often a submission looks up from its cases (to stop)


@dataclass
class _Node:
    id: str
    units: int
    actor: Any
    busy: int = field(default=0)


class RayEngine:
    """The judge's engine on the Ray cluster at `address`; safe to call from several threads."""

    def __init__(self, problems: dict[str, Problem], setup: NodeSetup, address: str) -> None:
        self.problems = problems
        self.address = address
        self._setup = setup
        self._ray, self._joined = connect(address)
        self._nodes: dict[str, _Node] = {}
        self._lost: set[str] = set()  # a lost node may still look alive to Ray for a while
        self._guard = threading.Lock()
        self._refreshing = threading.Lock()  # one look for new nodes at a time: one actor each
        self._stopping = threading.Event()
        self._judging = 0  # submissions being judged (see `wait_idle`)
        self._idle = threading.Condition()
        self._refresh()
        if not self._nodes:
            self.close()
            raise JudgeInfrastructureError(
                f"no node of the Ray cluster at {address} offers the judge resource "
                f"{JUDGE_RESOURCE!r}: start judge nodes with "
                f"`ray start --resources='{{\"{JUDGE_RESOURCE}\": N}}'` (N: its cores)"
            )

    @property
    def workers(self) -> int:
        """The cluster's worker budget: the judge units of its live judge nodes together."""
        with self._guard:
            return sum(node.units for node in self._nodes.values())

    def problem(self, pid: str) -> Problem:
        try:
            return self.problems[pid]
        except KeyError:
            raise UnknownProblem(pid, list(self.problems)) from None

    def stop(self) -> None:
        self._stopping.set()

    def wait_idle(self, timeout_s: float) -> bool:
        """Until no submission is judged (its nodes, judging single cases, ready nothing
        for the next submission)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._judging, timeout_s)

    def close(self) -> None:
        self.stop()
        with self._guard:
            nodes, self._nodes = list(self._nodes.values()), {}
        for node in nodes:
            self._ray.kill(node.actor)
        if self._joined:  # this process leaves the cluster it joined for the judge
            self._ray.shutdown()

    def judge(self, pid: str, source: bytes) -> dict[str, Any]:
        """The final result for one submission, as `Engine.judge` gives it."""
        problem = self.problem(pid)
        if self._stopping.is_set():
            raise JudgeStopped(f"the judge stopped before judging a submission to problem {pid}")
        with self._idle:
            self._judging += 1
        try:
            return self._judge(problem, source)
        finally:
            with self._idle:
                self._judging -= 1
                self._idle.notify_all()

    def _judge(self, problem: Problem, source: bytes) -> dict[str, Any]:
        started = time.perf_counter()
        self._refresh()
        prepared = self._prepare(problem.id, source)
        if isinstance(prepared, CompileFailed):
            return compile_error(prepared.message)
        where: dict[int, str] = {}
        cases = self._run_cases(problem, source, where)
        if isinstance(cases, CompileFailed):
            return compile_error(cases.message)
        result = result_of(cases, prepared, started)
        # Which node judged how many cases: where the work went, beside the verdict.
        result["judge"]["nodes"] = dict(collections.Counter(where.values()))
        return result

    def _refresh(self) -> None:
        """Take on the judge nodes that joined; forget those that left.

        A node whose judge does not start is left out for as long as this
        engine runs (logged), so that no later submission waits for it again.
        """
        with self._refreshing:
            self._take_on(judge_nodes(self._ray))

    def _take_on(self, live: dict[str, int]) -> None:
        with self._guard:
            for gone in set(self._nodes) - set(live):
                self._nodes.pop(gone)
            known = set(self._nodes) | self._lost
            fresh = {nid: units for nid, units in live.items() if nid not in known}
        started = {nid: self._start_actor(nid, units) for nid, units in fresh.items()}
        for nid, actor in started.items():
            try:
                units = self._ray.get(actor.ready.remote(), timeout=NODE_START_SECONDS)
            except Exception as exc:  # a node that cannot judge is left out, with its reason
                # A node whose judge units another judge holds never starts one for us.
                log.warning(
                    "judge node %s left out (another judge of this cluster may hold its %s "
                    "units): %s",
                    nid,
                    JUDGE_RESOURCE,
                    _reason(exc),
                )
                self._ray.kill(actor)
                with self._guard:
                    self._lost.add(nid)
                continue
            with self._guard:
                self._nodes[nid] = _Node(nid, units, actor)

    def _start_actor(self, node_id: str, units: int) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = self._ray.remote(NodeJudge)
        return remote.options(
            num_cpus=0,
            resources={JUDGE_RESOURCE: units},
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            max_concurrency=2 * units + 2,
            max_restarts=0,
        ).remote(self._setup, units)

    def _live(self) -> list[_Node]:
        with self._guard:
            return list(self._nodes.values())

    def _lose(self, node: _Node, exc: BaseException) -> None:
        with self._guard:
            self._lost.add(node.id)
            if self._nodes.pop(node.id, None) is not None:
                log.warning("judge node %s lost: %s", node.id, _reason(exc))

    def _prepare(self, pid: str, source: bytes) -> CompileInfo | CompileFailed:
        """Compile on every judge node at once; the first node's account of it."""
        calls = {node.actor.prepare.remote(pid, source): node for node in self._live()}
        answers: list[CompileInfo] = []
        for ref, node in calls.items():
            answer = self._answer(ref, node)
            if isinstance(answer, CompileFailed):
                return answer
            if isinstance(answer, CompileInfo):
                answers.append(answer)
        if not answers:
            raise self._no_node_left(pid)
        return answers[0]

    def _run_cases(
        self, problem: Problem, source: bytes, where: dict[int, str]
    ) -> list[CaseOutcome] | CompileFailed:
        """Every case once, on whichever live node has a free unit; lost cases sent again.

        `where` gets the node that judged each case (by index).
        """
        waiting = collections.deque(range(len(problem.cases)))
        outcomes: dict[int, CaseOutcome] = {}
        running: dict[Any, tuple[_Node, int]] = {}
        busy: dict[str, int] = collections.Counter()
        while waiting or running:
            if self._stopping.is_set():
                raise JudgeStopped(f"the judge stopped while judging problem {problem.id}")
            for node in self._live():
                while waiting and busy[node.id] < node.units:
                    index = waiting.popleft()
                    ref = node.actor.judge_case.remote(problem.id, source, index)
                    running[ref] = (node, index)
                    busy[node.id] += 1
            if not running:
                raise self._no_node_left(problem.id)
            done, _ = self._ray.wait(list(running), num_returns=1, timeout=WAIT_SLICE_SECONDS)
            for ref in done:
                node, index = running.pop(ref)
                busy[node.id] -= 1
                answer = self._answer(ref, node)
                if answer is None:
                    waiting.appendleft(index)  # its node is gone: judged again elsewhere
                elif isinstance(answer, CompileFailed):
                    return answer
                elif index not in outcomes:
                    outcomes[index] = answer
                    where[index] = node.id
        return [outcomes[index] for index in range(len(problem.cases))]

    def _answer(self, ref: Any, node: _Node) -> Any:
        """A node's answer; None when the node was lost (and is dropped); the judge's own
        failure on the node raised as JudgeInfrastructureError."""
        from ray.exceptions import RayActorError, RayTaskError

        try:
            return self._ray.get(ref)
        except RayActorError as exc:
            self._lose(node, exc)
            return None
        except RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, Exception) else exc
            raise JudgeInfrastructureError(f"judge node {node.id}: {_reason(cause)}") from None

    def _no_node_left(self, pid: str) -> JudgeInfrastructureError:
        return JudgeInfrastructureError(
            f"no judge node of the Ray cluster at {self.address} is left to judge a "
            f"submission to problem {pid}; the submission was not scored"
        )


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"
