"""Held polls of a result (`GET /result/{sid}?wait=S`): answered once final, or after S seconds.

Without `wait` a poll is answered at once, as the authority answers it; the
client asks to be held only by a judge whose answers say it holds polls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from atoll.judge.client import RESULT_WAIT_HEADER, JudgeClient, JudgeUnavailable, Scored
from atoll.judge.embedded import EmbeddedJudge, JudgeSetup
from atoll.judge.result_wait import MAX_WAIT_S

pytestmark = pytest.mark.timeout(300)


@pytest.fixture()
def http(small_judge: EmbeddedJudge) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=small_judge.url, timeout=30) as client:
        yield client


def fresh(source: bytes) -> str:
    """`source` made new, so that it is compiled (and queued meanwhile), not taken from the cache."""
    return source.decode() + f"\n// {time.time_ns()}\n"


def submit(http: httpx.Client, code: str) -> int:
    return int(http.post("/submit", json={"pid": "0", "code": code}).json()["sid"])


def held(http: httpx.Client, sid: int, wait: float) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = http.get(f"/result/{sid}", params={"wait": str(wait)})
    return response, time.monotonic() - started


def test_a_held_poll_is_answered_once_the_result_is_final(
    http: httpx.Client, sources: dict[str, bytes]
) -> None:
    sid = submit(http, fresh(sources["row"]))
    for _ in range(60):
        response, seconds = held(http, sid, MAX_WAIT_S)
        assert response.status_code == 200
        assert response.headers[RESULT_WAIT_HEADER] == f"{MAX_WAIT_S:g}"
        if response.json()["status"] != "queued":
            break
        assert seconds >= MAX_WAIT_S - 0.05  # held for the whole wait while queued
    else:
        raise AssertionError(f"submission {sid} not judged within a minute of held polls")
    assert response.json()["status"] == "done"
    assert seconds < MAX_WAIT_S - 0.05  # answered when final, not when the wait ran out
    again, seconds = held(http, sid, MAX_WAIT_S)
    assert again.json() == response.json() and seconds < 1.0  # final: at once


def test_a_poll_without_wait_is_answered_at_once(
    http: httpx.Client, sources: dict[str, bytes]
) -> None:
    sid = submit(http, fresh(sources["row"]))
    response = http.get(f"/result/{sid}")
    assert response.json() == {"status": "queued"}  # the compile alone outlasts the request
    assert RESULT_WAIT_HEADER in response.headers


def test_a_held_poll_gives_up_after_its_wait(http: httpx.Client, sources: dict[str, bytes]) -> None:
    # A program judged for its wall limit (4 s): a fast one can be compiled and judged within
    # the wait (0.2 s), and the answer is then rightly the result.
    sid = submit(http, fresh(sources["sleeper"]))
    response, seconds = held(http, sid, 0.2)
    assert response.json() == {"status": "queued"} and seconds >= 0.2


@pytest.mark.parametrize("wait", ["-1", "abc", "nan", "inf", ""])
def test_a_wait_that_is_no_number_of_seconds_is_refused(http: httpx.Client, wait: str) -> None:
    response = http.get("/result/1", params={"wait": wait})
    assert response.status_code == 400
    assert "wait" in response.json()["error"]


def test_a_held_poll_of_a_missing_submission_is_404_at_once(http: httpx.Client) -> None:
    response, seconds = held(http, 999_999, MAX_WAIT_S)
    assert response.status_code == 404 and seconds < 1.0


def test_the_client_asks_to_be_held_and_sleeps_no_poll_interval(
    small_judge: EmbeddedJudge, sources: dict[str, bytes]
) -> None:
    interval = 60.0  # a client that slept between polls would take a minute at least
    with JudgeClient(small_judge.url, poll_interval=interval) as client:
        started = time.monotonic()
        outcome = client.score(fresh(sources["row"]), deadline_s=120)
        assert isinstance(outcome, Scored)
        assert time.monotonic() - started < interval / 2


@pytest.mark.slow
def test_a_stopping_judge_answers_its_held_polls(
    tmp_path: Path, small_problems: Path, sources: dict[str, bytes]
) -> None:
    setup = JudgeSetup(problems_dir=small_problems, state_dir=tmp_path)
    judge = EmbeddedJudge(setup)
    judge.start()
    answered: list[float] = []
    try:
        with httpx.Client(base_url=judge.url, timeout=30) as http:
            sid = submit(http, fresh(sources["sleeper"]))  # judged for the wall limit, 4 s

            def poll() -> None:
                response, _ = held(http, sid, MAX_WAIT_S)
                assert response.json() == {"status": "queued"}
                answered.append(time.monotonic())

            poller = threading.Thread(target=poll)
            poller.start()
            time.sleep(0.5)  # the poll is held by now
            stopping = time.monotonic()
            judge.stop()
            poller.join(30)
        assert answered and answered[0] - stopping < MAX_WAIT_S - 2
    finally:
        judge.stop()


def test_closing_the_client_fails_its_held_poll_at_once(
    small_judge: EmbeddedJudge, sources: dict[str, bytes]
) -> None:
    """A cancelled run closes its client from another thread: the held poll must not outlive it."""
    client = JudgeClient(small_judge.url)
    sid = client.submit(fresh(sources["sleeper"]))  # judged for the wall limit, 4 s
    failed: list[tuple[BaseException, float]] = []

    def poll() -> None:
        try:
            client.poll(sid, hold=MAX_WAIT_S)
        except JudgeUnavailable as exc:
            failed.append((exc, time.monotonic()))

    poller = threading.Thread(target=poll)
    poller.start()
    time.sleep(0.5)  # the poll is held by now
    closed = time.monotonic()
    client.close()
    poller.join(MAX_WAIT_S + 5)
    assert failed, "the held poll ended without an error: it was answered, not cut off"
    assert failed[0][1] - closed < 1.5
