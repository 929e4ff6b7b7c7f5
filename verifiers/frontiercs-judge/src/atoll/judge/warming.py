"""The sandbox's part of a submission's cases, made ready ahead of them.

Every case pays for its sandbox before its program starts: a cgroup made and
joined, a process in namespaces of its own, a fresh /proc and /tmp.
`Warming` has the sessions the cases will run in make that ready ahead
(`SandboxSession.warm`), in a thread of its own, at two moments:

- while the judge is idle after a verdict (a refill), for the next
  submission to the same problem: an agent thinks between its submissions,
  and the cores are free then;
- while a submission's program compiles, for whatever the refill did not
  cover (a first submission, another problem, a refill cut short). Work
  done here takes a core from the compiler, so the refill does the most.

A refill yields to judging: it waits a moment before it starts (so that a
resubmission sent straight after its verdict does not wait for it), readies
a few runs at a time, and stops as a submission arrives, which then waits at
most for the few runs in progress. The runs are the same runs, with the same
limits and the same isolation; only their making is earlier. After a refill,
still idle, the judge does its other idle work (precompiling the headers
submissions start with, see `precompiled`), cancelled as a submission arrives.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from atoll.core.sandbox import CancelToken, Limits, SandboxError, SessionPool
from atoll.judge.problems import Mode, Problem
from atoll.judge.run_limits import CHECKER_LIMITS, interactor_limits, run_limits

log = logging.getLogger(__name__)

#: Runs made ready per session, as a share of an even split of the cases.
EXTRA_SHARE = 1.25
#: How long the judge is idle after a verdict before it refills.
REFILL_DELAY_S = 0.05
#: Runs a refill readies per session between two looks for a submission arriving.
REFILL_STEP = 4
#: How long closing waits for the idle work it cancelled (its sessions are still open).
CLOSE_WAIT_S = 30.0


class IdleWork(Protocol):
    """Work for the cores while the judge is idle, which a submission arriving cancels."""

    def pending(self) -> bool:
        """Whether there is any (a judge with none schedules nothing after a single case)."""
        ...

    def run(self, cancel: CancelToken) -> None:
        """Do it, until `cancel` (then what is left waits for the next idle moment)."""
        ...


class Warming:
    """Readies the program and tool sessions of a problem's cases, one problem at a time."""

    def __init__(
        self,
        programs: SessionPool,
        tools: SessionPool,
        workers: int,
        idle_work: IdleWork | None = None,
    ) -> None:
        self.programs = programs
        self.tools = tools
        self.workers = workers
        self._idle_work = idle_work  # after a refill, while idle; cancelled as judging starts
        self._idle_token: CancelToken | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="judge-warm")
        self._state = threading.Condition()
        self._judging = 0  # submissions (or single cases) being judged now
        self._arrivals = 0  # of them ever: a refill stops when it changes
        self._refills = 0  # refills scheduled and not over
        self._closed = False
        self._step = threading.Lock()  # held while a refill readies a few runs

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

    @contextlib.contextmanager
    def judging(self, refill: Problem | None = None) -> Iterator[None]:
        """Around the judging of a submission: no refill meanwhile (the few runs one is
        readying first finish); after it, with the judge idle again, `refill`'s sessions
        are refilled."""
        with self._state:
            self._judging += 1
            self._arrivals += 1
            self._state.notify_all()  # a refill waiting out its delay gives up
            if self._idle_token is not None:
                self._idle_token.cancel()
        with self._step:
            pass
        try:
            yield
        finally:
            self._judged(refill)

    def wait_idle(self, timeout_s: float) -> bool:
        """Until nothing is judged and no refill is due or under way (False if `timeout_s`
        passed first): for a caller about to time other work on the same cores."""
        with self._state:
            return self._state.wait_for(
                lambda: self._closed or not (self._refills or self._judging), timeout_s
            )

    def close(self) -> None:
        with self._state:
            self._closed = True
            self._state.notify_all()
            if self._idle_token is not None:
                self._idle_token.cancel()
            self._state.wait_for(lambda: self._idle_token is None, CLOSE_WAIT_S)
        with self._step:  # the runs a refill is readying, done before the sessions close
            pass
        self._thread.shutdown(wait=False, cancel_futures=True)

    def _judged(self, refill: Problem | None) -> None:
        with self._state:
            self._judging -= 1
            self._state.notify_all()
            if self._judging or self._closed:
                return
            if refill is None and not (self._idle_work and self._idle_work.pending()):
                return
            self._refills += 1
            arrivals = self._arrivals
        try:
            self._thread.submit(self._refill, refill, arrivals)
        except RuntimeError:  # closed meanwhile
            self._refill_over()

    def _refill(self, problem: Problem | None, arrivals: int) -> None:
        """Ready `problem`'s sessions (if one is given), then do the idle work, while idle."""
        try:
            if not self._idle_for(REFILL_DELAY_S, arrivals):
                return
            if problem is None or self._ready(problem, arrivals):
                self._work_while_idle(arrivals)
        except SandboxError as exc:
            log.warning("could not ready the sandbox for the next submission: %s", exc)
        finally:
            self._refill_over()

    def _ready(self, problem: Problem, arrivals: int) -> bool:
        """Each session's share of runs, a few at a time; False if a submission arrived."""
        runs = self._runs(problem)
        for pool, limits in self._pools(problem):
            for target in range(REFILL_STEP, runs + REFILL_STEP, REFILL_STEP):
                with self._step:
                    if not self._still_idle(arrivals):
                        return False
                    pool.warm(limits, min(target, runs), self.workers)
        return True

    def _work_while_idle(self, arrivals: int) -> None:
        """The idle work (precompiling headers), until a submission arrives or the judge closes."""
        if self._idle_work is None:
            return
        with CancelToken() as token:
            with self._state:
                if not self._still_idle(arrivals):
                    return
                self._idle_token = token
            try:
                self._idle_work.run(token)
            finally:
                with self._state:
                    self._idle_token = None
                    self._state.notify_all()

    def _idle_for(self, seconds: float, arrivals: int) -> bool:
        """Whether no submission arrives (and nothing closes) for `seconds`."""
        deadline = time.monotonic() + seconds
        with self._state:
            while self._still_idle(arrivals):
                left = deadline - time.monotonic()
                if left <= 0:
                    return True
                self._state.wait(left)
            return False

    def _still_idle(self, arrivals: int) -> bool:
        return not self._closed and self._arrivals == arrivals

    def _refill_over(self) -> None:
        with self._state:
            self._refills -= 1
            self._state.notify_all()

    def _warm(self, problem: Problem) -> None:
        runs = self._runs(problem)
        for pool, limits in self._pools(problem):
            pool.warm(limits, runs, self.workers)

    def _runs(self, problem: Problem) -> int:
        # A quarter more than each worker's share: the workers do not share the cases
        # evenly (each takes the next as it is free), and a run a session has to make among
        # the cases costs that case about half a millisecond more. What is left serves the
        # next submission; the sessions prepare the rest as the cases run.
        return math.ceil(EXTRA_SHARE * len(problem.cases) / self.workers)

    def _pools(self, problem: Problem) -> list[tuple[SessionPool, Limits]]:
        """The sessions a case of `problem` runs in, each with the limits of its run."""
        case = problem.cases[0].limits
        interactive = problem.mode is Mode.INTERACTIVE
        pools = [(self.programs, run_limits(case, interactive))]
        if problem.tool is not None:
            tool = interactor_limits(case) if interactive else CHECKER_LIMITS
            pools.append((self.tools, tool))
        return pools
