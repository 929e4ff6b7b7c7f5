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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from atoll.judge.engine import JudgeInfrastructureError, JudgeStopped, UnknownProblem
from atoll.judge.judging import Judging
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
    final: bool = True  # False while the submission waits or is judged


class JudgeService:
    def __init__(
        self,
        engine: Judging,
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
        self._listeners: list[Callable[[int], None]] = []
        self._listeners_lock = threading.Lock()

    def on_final(self, listener: Callable[[int], None]) -> Callable[[], None]:
        """Call `listener(sid)` (from a dispatcher thread) once each result is final and stored.

        Returns the call that stops it. Why: a server holding a poll of a
        result answers the moment the result is final, not at the poll's next turn.
        """
        with self._listeners_lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._listeners_lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    def _announce(self, sid: int) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(sid)
            except Exception:  # a listener's failure must not stop the dispatcher
                log.exception("a listener of final results failed on submission %d", sid)

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
        """Stop judging and release the engine and the store.

        Waits for the cases already running, not for the rest of their
        submissions: those stay unfinished and are judged again at the next start.
        """
        self.engine.stop()
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
            return ResultView(200, {"status": "queued"}, final=False)
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
            if self._judge(sid, submission.pid, submission.source):
                self._announce(sid)

    def _judge(self, sid: int, pid: str, source: bytes) -> bool:
        """Judge one submission and store its final result (or the judge's failure).

        False when the judge stopped first: the submission stays unfinished.
        """
        try:
            result = self.engine.judge(pid, source)
        except JudgeStopped:
            log.info(
                "submission %d: the judge stopped while judging it; judged again at its next start",
                sid,
            )
            self.store.put_back(sid)
            return False
        except (JudgeInfrastructureError, UnknownProblem) as exc:
            log.error("submission %d: %s", sid, exc)
            self.store.fail(sid, str(exc))
            return True
        except Exception as exc:  # a bug must not kill the dispatcher or score anything
            log.exception("submission %d: unexpected failure", sid)
            self.store.fail(sid, f"judge failure: {type(exc).__name__}: {exc}")
            return True
        self.store.finish(sid, result)
        return True
