"""The judge client's three outcomes: scored, invalid, and unavailable (an exception)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from support.judge_reference import row_ratio
from support.ports import free_port

from atoll.judge.client import RESULT_WAIT_HEADER, Invalid, JudgeClient, JudgeUnavailable, Scored
from atoll.judge.embedded import EmbeddedJudge
from atoll.judge.problems import Problem

pytestmark = pytest.mark.timeout(120)

# A route handler gets (method, path, count of earlier requests to that path)
# and returns (status, JSON body).
Route = Callable[[str, str, int], tuple[int, object]]


class LoopbackJudge:
    """A scripted HTTP judge on 127.0.0.1 that records the requests it gets."""

    def __init__(self, route: Route, headers: dict[str, str] | None = None) -> None:
        self.route = route
        self.requests: list[tuple[str, str]] = []
        outer = self
        extra = dict(headers or {})

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                seen = sum(1 for _, p in outer.requests if p == self.path)
                outer.requests.append((self.command, self.path))
                status, body = outer.route(self.command, self.path, seen)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = _answer
            do_POST = _answer

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> LoopbackJudge:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def client_for() -> Iterator[Callable[[str], JudgeClient]]:
    made: list[JudgeClient] = []

    def make(url: str) -> JudgeClient:
        client = JudgeClient(url, poll_interval=0.02, request_timeout=5)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.mark.slow
def test_scored_against_the_embedded_judge(
    small_judge: EmbeddedJudge, sources: dict[str, bytes], problem0: Problem, client_for
) -> None:
    outcome = client_for(small_judge.url).score(sources["row"], deadline_s=60)
    assert isinstance(outcome, Scored)
    expected = [row_ratio(problem0.case_input(i).decode()) for i in (20, 12)]
    assert [c.ratio for c in outcome.cases] == pytest.approx(expected, abs=1e-6)
    assert outcome.score == pytest.approx(50 * sum(expected), abs=1e-4)
    assert outcome.reward == outcome.score and outcome.raw_score == pytest.approx(outcome.score)


def test_compile_error_is_invalid_with_reward_zero(
    small_judge: EmbeddedJudge, sources: dict[str, bytes], client_for
) -> None:
    outcome = client_for(small_judge.url).score(sources["broken"], deadline_s=60)
    assert isinstance(outcome, Invalid)
    assert outcome.reward == 0.0 and "undefined_symbol" in outcome.reason


def test_a_result_marked_invalid_is_invalid(client_for) -> None:
    def route(method: str, path: str, seen: int) -> tuple[int, object]:
        if path == "/submit":
            return 200, {"sid": 3}
        return 200, {"status": "done", "invalid": True, "score": 55.0, "result": "rejected"}

    with LoopbackJudge(route) as judge:
        outcome = client_for(judge.url).score("int main(){}", deadline_s=5)
    assert isinstance(outcome, Invalid) and outcome.reward == 0.0


def test_a_final_result_is_read_once_and_kept(client_for) -> None:
    # The authoritative server deletes a final result after the first read.
    final = {"status": "done", "passed": False, "result": "Wrong Answer", "score": 12.5,
             "scoreUnbounded": 13.0, "cases": [{"ok": True, "status": "Correct",
             "scoreRatio": 0.125, "scoreRatioUnbounded": 0.13, "msg": "Ratio: 0.125"}]}  # fmt: skip

    def route(method: str, path: str, seen: int) -> tuple[int, object]:
        if path == "/submit":
            return 200, {"sid": 11}
        if seen < 2:
            return 200, {"status": "queued"}
        return (200, final) if seen == 2 else (404, {"error": "not found"})

    with LoopbackJudge(route) as judge:
        client = client_for(judge.url)
        outcome = client.score("int main(){}", deadline_s=5)
        again = client.poll(11)
        assert again is outcome
        assert judge.requests.count(("GET", "/result/11")) == 3
    assert isinstance(outcome, Scored)
    assert (outcome.score, outcome.raw_score) == (12.5, 13.0)
    assert outcome.cases[0].ratio == 0.125


FINAL = {"status": "done", "passed": True, "result": "Correct Answer", "score": 100.0, "cases": []}


def test_a_judge_that_holds_no_poll_gets_the_polls_it_always_got(client_for) -> None:
    def route(method: str, path: str, seen: int) -> tuple[int, object]:
        if path == "/submit":
            return 200, {"sid": 5}
        return (200, {"status": "queued"}) if seen < 2 else (200, FINAL)

    with LoopbackJudge(route) as judge:
        started = time.monotonic()
        assert isinstance(client_for(judge.url).score("int main(){}", deadline_s=5), Scored)
        slept = time.monotonic() - started
    assert judge.requests == [("POST", "/submit")] + [("GET", "/result/5")] * 3
    assert slept >= 2 * 0.02  # the poll interval, twice


def test_a_judge_that_holds_polls_is_asked_to_hold_them(client_for) -> None:
    def route(method: str, path: str, seen: int) -> tuple[int, object]:
        if path == "/submit":
            return 200, {"sid": 6}
        # A held poll is answered when the result is final: here, at once.
        return (200, FINAL) if "wait=" in path else (200, {"status": "queued"})

    with LoopbackJudge(route, headers={RESULT_WAIT_HEADER: "5"}) as judge:
        client = JudgeClient(judge.url, poll_interval=60, request_timeout=4)
        try:
            started = time.monotonic()
            assert isinstance(client.score("int main(){}", deadline_s=30), Scored)
            assert time.monotonic() - started < 30  # never slept the minute between polls
        finally:
            client.close()
    # The first poll learns that the judge holds polls; the next asks it to at once, for
    # at most half the client's request timeout.
    assert judge.requests == [
        ("POST", "/submit"),
        ("GET", "/result/6"),
        ("GET", "/result/6?wait=2.000"),
    ]


def test_connection_refused_raises(client_for) -> None:
    client = client_for(f"http://127.0.0.1:{free_port()}")  # nothing listens there
    with pytest.raises(JudgeUnavailable, match="unreachable"):
        client.score("int main(){}", deadline_s=5)
    assert client.health() is False


@pytest.mark.parametrize("failing", ["/submit", "/result/5"])
def test_server_errors_raise(failing: str, client_for) -> None:
    def route(method: str, path: str, seen: int) -> tuple[int, object]:
        if path == failing:
            return 502, {"error": "upstream judge crashed"}
        return (200, {"sid": 5}) if path == "/submit" else (200, {"status": "queued"})

    with LoopbackJudge(route) as judge, pytest.raises(JudgeUnavailable, match="502"):
        client_for(judge.url).score("int main(){}", deadline_s=5)


def test_infrastructure_error_raises_and_is_never_a_score(client_for) -> None:
    def route(method: str, path: str, seen: int) -> tuple[int, object]:
        if path == "/submit":
            return 200, {"sid": 8}
        return 500, {"status": "infrastructure_error", "error": "sandbox unusable"}

    with LoopbackJudge(route) as judge, pytest.raises(JudgeUnavailable, match="sandbox"):
        client_for(judge.url).score("int main(){}", deadline_s=5)


def test_deadline_raises(client_for) -> None:
    def route(method: str, path: str, seen: int) -> tuple[int, object]:
        return (200, {"sid": 9}) if path == "/submit" else (200, {"status": "queued"})

    with LoopbackJudge(route) as judge, pytest.raises(JudgeUnavailable, match="within 0.3 s"):
        client_for(judge.url).score("int main(){}", deadline_s=0.3)


def test_lost_result_raises(client_for) -> None:
    def route(method: str, path: str, seen: int) -> tuple[int, object]:
        return (200, {"sid": 4}) if path == "/submit" else (404, {"error": "gone"})

    with LoopbackJudge(route) as judge, pytest.raises(JudgeUnavailable, match="no result"):
        client_for(judge.url).score("int main(){}", deadline_s=5)


@pytest.mark.parametrize(
    ("lang", "source", "file_part"),
    [
        ("cpp", "int main(){}", b'filename="solution.cpp"\r\nContent-Type: text/x-c++src'),
        ("python", "print(1)", b'filename="solution.py"\r\nContent-Type: text/x-python'),
    ],
)
def test_submission_is_multipart_like_the_reference_harness(
    client_for, lang: str, source: str, file_part: bytes
) -> None:
    seen: dict[str, bytes] = {}

    def route(method: str, path: str, count: int) -> tuple[int, object]:
        return (200, {"sid": 1}) if path == "/submit" else (200, {"status": "error", "error": "x"})

    with LoopbackJudge(route) as judge:
        # Route the client through a transport that records the raw request.
        transport = httpx.HTTPTransport()

        class Recording(httpx.BaseTransport):
            def handle_request(self, request: httpx.Request) -> httpx.Response:
                if request.url.path == "/submit":
                    seen["type"] = request.headers["content-type"].encode()
                    seen["body"] = request.read()
                return transport.handle_request(request)

        client = JudgeClient(judge.url, transport=Recording())
        try:
            client.score(source, pid="0", lang=lang, deadline_s=5)
        finally:
            client.close()
    assert seen["type"].startswith(b"multipart/form-data")
    assert b'name="pid"' in seen["body"] and b'name="lang"' in seen["body"]
    assert b'name="code"; ' + file_part in seen["body"]
    assert source.encode() in seen["body"]
