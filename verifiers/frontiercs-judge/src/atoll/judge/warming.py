"""The sandbox's part of a submission's cases, made ready while its program compiles.

A compile keeps one core busy for a few hundred milliseconds, and the others
have nothing to do; then every case pays for its sandbox before its program
starts: a cgroup made and joined, a process in namespaces of its own, a
fresh /proc and /tmp. Told the problem as the compile starts, `Warming` has
the sessions the cases will run in make that ready for them meanwhile
(`SandboxSession.warm`), in a thread of its own. The runs are the same runs,
with the same limits and the same isolation; only their making is earlier.
"""

from __future__ import annotations

import logging
import math
from concurrent.futures import Future, ThreadPoolExecutor

from atoll.core.sandbox import Limits, SandboxError, SessionPool
from atoll.judge.problems import Mode, Problem
from atoll.judge.run_limits import CHECKER_LIMITS, interactor_limits, run_limits

log = logging.getLogger(__name__)

#: Runs made ready per session, as a share of an even split of the cases.
EXTRA_SHARE = 1.25


class Warming:
    """Readies the program and tool sessions of a problem's cases, one problem at a time."""

    def __init__(self, programs: SessionPool, tools: SessionPool, workers: int) -> None:
        self.programs = programs
        self.tools = tools
        self.workers = workers
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="judge-warm")

    def start(self, problem: Problem) -> Future[None]:
        """Begin readying `problem`'s sessions; `wait` for it before its cases run."""
        return self._thread.submit(self._warm, problem)

    def wait(self, warming: Future[None] | None) -> None:
        """Until `warming` is done (its failure only costs the cases their head start)."""
        if warming is None:
            return
        try:
            warming.result()
        except SandboxError as exc:
            log.warning("could not ready the sandbox for the cases ahead: %s", exc)

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)

    def _warm(self, problem: Problem) -> None:
        # A quarter more than each worker's share: the workers do not share the cases
        # evenly (each takes the next as it is free), and a run a session has to make among
        # the cases costs that case about half a millisecond more. What is left serves the
        # next submission; the sessions prepare the rest as the cases run.
        runs = math.ceil(EXTRA_SHARE * len(problem.cases) / self.workers)
        for pool, limits in self._pools(problem):
            pool.warm(limits, runs, self.workers)

    def _pools(self, problem: Problem) -> list[tuple[SessionPool, Limits]]:
        """The sessions a case of `problem` runs in, each with the limits of its run."""
        case = problem.cases[0].limits
        interactive = problem.mode is Mode.INTERACTIVE
        pools = [(self.programs, run_limits(case, interactive))]
        if problem.tool is not None:
            tool = interactor_limits(case) if interactive else CHECKER_LIMITS
            pools.append((self.tools, tool))
        return pools
