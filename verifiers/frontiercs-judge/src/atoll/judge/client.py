"""Client of a FrontierCS judge (the authoritative server or the embedded one).

Three outcomes, never confused: `Scored` (a score, a raw score and per-case
results), `Invalid` (the candidate did not compile, or the judge marked it
invalid: reward 0, a normal outcome), and `JudgeUnavailable` raised when the
judge cannot answer (connection refused, 5xx, infrastructure failure, no
final result before the deadline) — never a score. The authoritative server
deletes a final result after the first read, so the client keeps every final
result it has read and never asks for it twice.

A judge that can hold a poll until the result is final (atoll's, see
`result_wait`) says so in a header of its answers; once the client has seen
it, its polls ask to be held instead of sleeping between them. To any other
judge it sends exactly the requests it always did.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from atoll.core.http_abort import InFlight

if TYPE_CHECKING:
    from atoll.judge.api import JudgeVersion

DEFAULT_DEADLINE_S = 900.0
#: The answer header by which a judge says it holds a poll of a result, up to this many seconds.
RESULT_WAIT_HEADER = "Atoll-Result-Wait-Max"

# The file name and content type of a submission, by its `lang`, as the reference harness sends them.
SOURCE_FILES = {
    "cpp": ("solution.cpp", "text/x-c++src"),
    "python": ("solution.py", "text/x-python"),
}


class JudgeUnavailable(Exception):
    """The judge could not produce a result; retry later, do not score."""


@dataclass(frozen=True)
class CaseScore:
    number: int
    ok: bool
    status: str
    ratio: float
    message: str


@dataclass(frozen=True)
class Scored:
    sid: int | None
    score: float  # 0..100, the submission's score
    raw_score: float  # the judge's unbounded score
    passed: bool
    cases: tuple[CaseScore, ...]
    result: dict[str, Any]

    @property
    def reward(self) -> float:
        return self.score


@dataclass(frozen=True)
class Invalid:
    sid: int | None
    reason: str
    result: dict[str, Any]

    @property
    def reward(self) -> float:
        return 0.0

    @property
    def raw_score(self) -> float:
        return 0.0


Outcome = Scored | Invalid


def outcome_from_result(sid: int | None, body: dict[str, Any]) -> Outcome | None:
    """Interpret a `/result` body: an Outcome if final, None while queued.

    Raises JudgeUnavailable for an infrastructure failure or a shape no judge
    should send (a result the client cannot read is not a score of zero).
    """
    status = body.get("status")
    if status in ("queued", "running", "pending", "judging"):
        return None
    if status == "infrastructure_error":
        raise JudgeUnavailable(f"judge failed on submission {sid}: {body.get('error', '?')}")
    if status in ("error", "invalid") or body.get("invalid") is True:
        reason = str(body.get("error") or body.get("result") or status)
        return Invalid(sid, reason, body)
    if status != "done":
        raise JudgeUnavailable(f"judge answered submission {sid} with unknown status {status!r}")
    try:
        score = float(body["score"])
        raw = float(body.get("scoreUnbounded", score))
        cases = tuple(
            CaseScore(
                number=int(case.get("case", index + 1)),
                ok=bool(case.get("ok", False)),
                status=str(case.get("status", "")),
                ratio=float(case.get("scoreRatio", 0.0)),
                message=str(case.get("msg", "")),
            )
            for index, case in enumerate(body.get("cases") or [])
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise JudgeUnavailable(f"judge sent an unreadable result for {sid}: {exc}") from None
    return Scored(sid, score, raw, bool(body.get("passed", False)), cases, body)


class JudgeClient:
    """Submit programs to a judge at `url` and wait for their outcomes."""

    def __init__(
        self,
        url: str,
        *,
        request_timeout: float = 30.0,
        poll_interval: float = 0.25,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.poll_interval = poll_interval
        self.request_timeout = request_timeout
        self._in_flight = InFlight()
        self._http = httpx.Client(
            base_url=self.url,
            timeout=request_timeout,
            transport=transport,
            event_hooks={"request": [self._in_flight.attach]},
        )
        self._final: dict[int, Outcome] = {}
        self._lock = threading.Lock()
        # The longest this judge holds a poll (its `RESULT_WAIT_HEADER`); None: it holds none.
        self._hold_max: float | None = None

    def close(self) -> None:
        """Release the connections; from another thread, fail its requests in flight at once.

        A held poll may be blocked reading for up to half the request
        timeout, and a closed client alone would not wake it.
        """
        self._in_flight.abort()
        self._http.close()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        if self._in_flight.aborted:
            raise JudgeUnavailable(f"the client of the judge at {self.url} is closed")
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise JudgeUnavailable(f"judge at {self.url} unreachable: {exc}") from exc
        if response.status_code >= 500:
            raise JudgeUnavailable(
                f"judge at {self.url} answered {method} {path} with HTTP "
                f"{response.status_code}: {_error_text(response)}"
            )
        return response

    def health(self) -> bool:
        try:
            response = self._request("GET", "/health")
        except JudgeUnavailable:
            return False
        return response.status_code == 200

    def workers(self) -> int | None:
        """The worker budget the judge reports (`GET /health`), None from one that does not.

        On a Ray cluster it is the judge nodes' together: a client may size
        how many submissions it keeps in flight to it.
        """
        try:
            response = self._request("GET", "/health")
            body = response.json() if response.status_code == 200 else {}
        except (JudgeUnavailable, ValueError):
            return None
        workers = body.get("workers") if isinstance(body, dict) else None
        return workers if isinstance(workers, int) and workers >= 1 else None

    def about(self) -> JudgeVersion | None:
        """Which judge answers (`GET /version`); None from a judge that predates the route.

        JudgeUnavailable when it cannot be asked: a judge that does not answer
        says nothing about which judge it is.
        """
        from atoll.judge.api import JudgeVersion  # pydantic: only a client that asks loads it

        response = self._request("GET", "/version")
        if response.status_code == 404:
            return None
        try:
            response.raise_for_status()
            return JudgeVersion.model_validate(response.json())
        except (httpx.HTTPError, ValueError) as exc:
            raise JudgeUnavailable(f"judge at {self.url} sent no readable version: {exc}") from None

    def submit(self, source: bytes | str, pid: str = "0", lang: str = "cpp") -> int:
        """Send a program as the reference harness does (multipart) and return its sid."""
        code = source.encode("utf-8") if isinstance(source, str) else source
        name, content_type = SOURCE_FILES.get(lang, (f"solution.{lang}", "text/plain"))
        response = self._request(
            "POST",
            "/submit",
            data={"pid": pid, "lang": lang},
            files={"code": (name, code, content_type)},
        )
        if response.status_code != 200:
            raise JudgeUnavailable(
                f"judge refused the submission (HTTP {response.status_code}): "
                f"{_error_text(response)}"
            )
        try:
            return int(response.json()["sid"])
        except (ValueError, KeyError, TypeError):
            raise JudgeUnavailable(
                f"judge answered /submit without a sid: {response.text[:200]}"
            ) from None

    def poll(self, sid: int, hold: float | None = None) -> Outcome | None:
        """One look at `sid`: its outcome if final (kept, never re-read), else None.

        `hold`: ask the judge to answer once the result is final or after this
        many seconds (only a judge that said it can, see `wait`).
        """
        with self._lock:
            if sid in self._final:
                return self._final[sid]
        params = None if hold is None else {"wait": f"{hold:.3f}"}
        response = self._request("GET", f"/result/{sid}", params=params)
        self._learn_hold(response)
        if response.status_code == 404:
            raise JudgeUnavailable(f"judge has no result for submission {sid} (lost or never made)")
        if response.status_code != 200:
            raise JudgeUnavailable(
                f"judge answered /result/{sid} with HTTP {response.status_code}: "
                f"{_error_text(response)}"
            )
        try:
            body = response.json()
        except ValueError:
            raise JudgeUnavailable(f"judge sent a non-JSON result for {sid}") from None
        if not isinstance(body, dict):
            raise JudgeUnavailable(f"judge sent a result for {sid} that is not an object")
        outcome = outcome_from_result(sid, body)
        if outcome is not None:
            with self._lock:
                self._final[sid] = outcome
        return outcome

    def wait(self, sid: int, deadline_s: float = DEFAULT_DEADLINE_S) -> Outcome:
        """Poll `sid` until final; JudgeUnavailable once `deadline_s` has passed.

        Polls `poll_interval` apart, or, to a judge that holds polls, each
        held until the result is final (and then answered at once).
        """
        deadline = time.monotonic() + deadline_s
        while True:
            asked = time.monotonic()
            hold = self._hold_for(deadline - asked)
            outcome = self.poll(sid, hold)
            if outcome is not None:
                return outcome
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise JudgeUnavailable(
                    f"no final result for submission {sid} within {deadline_s:g} s"
                )
            if hold is None and self._hold_max is not None:
                continue  # the judge just said it holds polls: ask it to hold the next
            # A held poll answered early (the judge is stopping) waits out the interval.
            pause = self.poll_interval - (0.0 if hold is None else time.monotonic() - asked)
            if pause > 0:
                time.sleep(min(pause, remaining))

    def _hold_for(self, remaining: float) -> float | None:
        """How long to ask the judge to hold the next poll (None: it holds none)."""
        if self._hold_max is None:
            return None
        hold = min(self._hold_max, self.request_timeout / 2, remaining)
        return hold if hold > 0 else None

    def _learn_hold(self, response: httpx.Response) -> None:
        raw = response.headers.get(RESULT_WAIT_HEADER)
        if raw is None:
            return
        try:
            seconds = float(raw)
        except ValueError:
            return  # not a hold this client understands: poll as it always did
        if seconds > 0 and math.isfinite(seconds):
            self._hold_max = seconds

    def score(
        self,
        source: bytes | str,
        pid: str = "0",
        lang: str = "cpp",
        deadline_s: float = DEFAULT_DEADLINE_S,
    ) -> Outcome:
        """Submit and wait: Scored or Invalid, or JudgeUnavailable."""
        return self.wait(self.submit(source, pid, lang), deadline_s)


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or "(empty body)"
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return str(body)[:300]
