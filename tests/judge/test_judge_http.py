"""The embedded judge over HTTP: the authority's routes, body forms and JSON shapes."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import time

import httpx
import pytest
from support.judge_reference import row_ratio

from atoll.judge.embedded import EmbeddedJudge, tcp_listener
from atoll.judge.problems import Problem

pytestmark = pytest.mark.timeout(300)


def wait_final(http: httpx.Client, sid: int, deadline_s: float = 120) -> dict:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        body = http.get(f"/result/{sid}").json()
        if body.get("status") != "queued":
            return body
        time.sleep(0.05)
    raise AssertionError(f"submission {sid} not judged within {deadline_s} s")


@pytest.fixture()
def http(small_judge: EmbeddedJudge):
    with httpx.Client(base_url=small_judge.url, timeout=30) as client:
        yield client


def test_health_problems_and_statement(http: httpx.Client) -> None:
    # The worker budget it reports: every core, as nothing else was asked for.
    assert http.get("/health").json() == {"ok": True, "workers": os.cpu_count()}
    problems = http.get("/problems").json()["problems"]
    assert [p["id"] for p in problems] == ["0"]
    statement = http.get("/problem/0/statement")
    assert statement.headers["content-type"].startswith("text/plain")
    assert "Pack the Polyominoes" in statement.text
    missing = http.get("/problem/9/statement")
    assert missing.status_code == 404 and "unknown problem" in missing.json()["error"]


def expected_row_score(problem0: Problem) -> float:
    return (
        100
        * (
            row_ratio(problem0.case_input(20).decode())
            + row_ratio(problem0.case_input(12).decode())
        )
        / 2
    )


@pytest.mark.parametrize("form", ["multipart", "multipart-field", "json", "base64", "text"])
def test_every_body_form_is_accepted(
    form: str, http: httpx.Client, sources: dict[str, bytes], problem0: Problem
) -> None:
    code = sources["row"] + f"\n// {form}\n".encode()
    if form == "multipart":
        response = http.post(
            "/submit", data={"pid": "0", "lang": "cpp"}, files={"code": ("solution.cpp", code)}
        )
    elif form == "multipart-field":
        response = http.post(
            "/submit",
            data={"pid": "0", "lang": "gnu++17", "code": code.decode()},
            files={"unused": ("x", b"")},
        )
    elif form == "json":
        response = http.post("/submit", json={"pid": "0", "lang": "cxx", "code": code.decode()})
    elif form == "base64":
        payload = {"pid": "0", "lang": "g++", "codeBase64": base64.b64encode(code).decode()}
        response = http.post("/submit", json=payload)
    else:
        response = http.post(
            "/submit",
            params={"pid": "0", "lang": "c++"},
            content=code,
            headers={"content-type": "text/plain"},
        )
    assert response.status_code == 200, response.text
    sid = response.json()["sid"]
    body = wait_final(http, sid)
    assert body["status"] == "done"
    assert body["score"] == pytest.approx(expected_row_score(problem0), abs=1e-4)
    assert set(body["cases"][0]) >= {
        "ok",
        "status",
        "time",
        "memory",
        "msg",
        "scoreRatio",
        "scoreRatioUnbounded",
    }


@pytest.mark.parametrize("lang", ["cpp", "cpp17", "gnu++17", "c++", "cxx", "g++", "CPP"])
def test_lang_aliases(lang: str, http: httpx.Client) -> None:
    response = http.post("/submit", json={"pid": "0", "lang": lang, "code": "int main(){}"})
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("payload", "status", "needle"),
    [
        ({"pid": "0", "lang": "python", "code": "print(1)"}, 400, "unsupported lang"),
        ({"pid": "0", "lang": "cpp"}, 400, "no code"),
        ({"lang": "cpp", "code": "int main(){}"}, 400, "missing pid"),
        ({"pid": "7", "lang": "cpp", "code": "int main(){}"}, 404, "unknown problem"),
        ({"pid": "0", "codeBase64": "@@@"}, 400, "base64"),
    ],
)
def test_bad_submissions_get_one_clear_error(
    payload: dict, status: int, needle: str, http: httpx.Client
) -> None:
    response = http.post("/submit", json=payload)
    assert response.status_code == status
    assert needle in response.json()["error"]


def test_results_can_be_read_again_and_again(http: httpx.Client, sources: dict[str, bytes]) -> None:
    sid = http.post("/submit", json={"pid": "0", "code": sources["row"].decode()}).json()["sid"]
    first = wait_final(http, sid)
    again = [http.get(f"/result/{sid}").json() for _ in range(3)]
    assert all(body == first for body in again)


def test_unknown_result_is_404(http: httpx.Client) -> None:
    assert http.get("/result/999999").status_code == 404
    assert http.get("/result/abc").status_code == 400


def test_compile_error_has_the_authoritys_shape(
    http: httpx.Client, sources: dict[str, bytes]
) -> None:
    sid = http.post("/submit", json={"pid": "0", "code": sources["broken"].decode()}).json()["sid"]
    body = wait_final(http, sid)
    assert body["status"] == "error" and "undefined_symbol" in body["error"]


@pytest.mark.slow
def test_adversarial_programs_do_not_stop_the_judge(
    http: httpx.Client, sources: dict[str, bytes], problem0: Problem
) -> None:
    sids = {
        name: http.post("/submit", json={"pid": "0", "code": sources[name].decode()}).json()["sid"]
        for name in ("forkbomb", "hog", "flood", "crash_ratio")
    }
    for name, sid in sids.items():
        body = wait_final(http, sid)
        assert body["status"] == "done" and body["score"] == 0.0, name
    assert http.get("/health").json()["ok"] is True
    sid = http.post("/submit", json={"pid": "0", "code": sources["row"].decode()}).json()["sid"]
    assert wait_final(http, sid)["score"] == pytest.approx(expected_row_score(problem0), abs=1e-4)


def test_answers_do_not_wait_for_delayed_acks(http: httpx.Client) -> None:
    """Each answer leaves at once: with Nagle's algorithm on the judge's connections, every
    request after the first on a kept-alive connection took the client's 40 ms delayed ACK."""
    seconds = []
    for _ in range(20):
        started = time.perf_counter()
        assert http.get("/health").status_code == 200
        seconds.append(time.perf_counter() - started)
    assert min(seconds[1:]) < 0.035, seconds


def test_the_listener_gives_connections_tcp_nodelay() -> None:
    async def accepted_nodelay() -> int:
        listener = tcp_listener()
        listener.bind(("127.0.0.1", 0))
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname())
            result = await asyncio.wait_for(seen, 10)
            writer.close()
        return result

    assert asyncio.run(accepted_nodelay()) == 1
