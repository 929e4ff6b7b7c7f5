"""The judge as a service: a bounded queue in front of the engine, backed by the store.

Submissions are written to the store before their id is returned, judged by a
few dispatcher threads (the cases of each fan out over every core through the
engine's pool), and their results committed before they become readable. On
start, whatever a previous run accepted but did not finish is judged again.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

from atoll.judge.engine import Engine, JudgeInfrastructureError, UnknownProblem
from atoll.judge.store import MAX_ATTEMPTS, State, Store

log = logging.getLogger(__name__)

DEFAULT_MAX_QUEUE = 64
_STOP = -1


class QueueFull(Exception):
    """Too many submissions are waiting; the client should retry later."""


@dataclass(frozen=True)
class ResultView:
    """What `GET /result/{sid}` answers: an HTTP status and a JSON body."""

    http_status: int
    body: dict[str, Any]


class JudgeService:
    def __init__(
        self,
        engine: Engine,
        store: Store,
        max_queue: int = DEFAULT_MAX_QUEUE,
        dispatchers: int = 2,
    ) -> None:
        self.engine = engine
        self.store = store
        self.max_queue = max_queue
        self._queue: queue.Queue[int] = queue.Queue()
        self._admit = threading.Lock()
        self._threads = [
            threading.Thread(target=self._dispatch, name=f"judge-dispatch-{i}", daemon=True)
            for i in range(dispatchers)
        ]

    def start(self) -> None:
        """Re-queue what a previous run left unfinished, then start judging."""
        for submission in self.store.unfinished():
            if submission.attempts >= MAX_ATTEMPTS:
                self.store.fail(
                    submission.sid,
                    f"the judge stopped {submission.attempts} times while judging this "
                    "submission; it was not scored",
                )
                continue
            log.info("re-queueing submission %d left unfinished by a restart", submission.sid)
            self._queue.put(submission.sid)
        for thread in self._threads:
            thread.start()
        threading.Thread(target=self._warm, name="judge-warm", daemon=True).start()

    def _warm(self) -> None:
        for problem in self.engine.problems.values():
            try:
                problem.warm()
            except Exception:  # a bad input shows up, with its message, when judged
                log.exception("cannot parse the test inputs of problem %s", problem.id)

    def stop(self) -> None:
        for _ in self._threads:
            self._queue.put(_STOP)

    def close(self) -> None:
        """Stop judging and release the engine and the store (waits for running work)."""
        self.stop()
        for thread in self._threads:
            if thread.is_alive():
                thread.join()
        self.engine.close()
        self.store.close()

    def submit(self, pid: str, lang: str, source: bytes) -> int:
        """Accept a submission (durably) and return its id; QueueFull when saturated."""
        self.engine.problem(pid)  # UnknownProblem before anything is stored
        with self._admit:
            waiting = self.store.pending_count()
            if waiting >= self.max_queue:
                raise QueueFull(
                    f"judge queue is full ({waiting} submissions waiting, limit "
                    f"{self.max_queue}); retry later"
                )
            sid = self.store.add(pid, lang, source)
        self._queue.put(sid)
        return sid

    def result(self, sid: int) -> ResultView:
        submission = self.store.get(sid)
        if submission is None:
            return ResultView(404, {"error": f"no submission {sid}"})
        if submission.state in (State.QUEUED, State.RUNNING):
            return ResultView(200, {"status": "queued"})
        body = submission.result or {}
        if submission.state is State.INFRASTRUCTURE_ERROR:
            return ResultView(500, body)
        return ResultView(200, body)

    def _dispatch(self) -> None:
        while True:
            sid = self._queue.get()
            if sid == _STOP:
                return
            submission = self.store.get(sid)
            if submission is None or submission.state not in (State.QUEUED, State.RUNNING):
                continue
            self.store.start(sid)
            try:
                result = self.engine.judge(submission.pid, submission.source)
            except (JudgeInfrastructureError, UnknownProblem) as exc:
                log.error("submission %d: %s", sid, exc)
                self.store.fail(sid, str(exc))
                continue
            except Exception as exc:  # a bug must not kill the dispatcher or score anything
                log.exception("submission %d: unexpected failure", sid)
                self.store.fail(sid, f"judge failure: {type(exc).__name__}: {exc}")
                continue
            self.store.finish(sid, result)
