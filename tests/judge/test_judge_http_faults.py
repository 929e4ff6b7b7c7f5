"""Malformed requests to the real judge server: each a 4xx with one line, never a 500.

Each case here once made the embedded judge answer 500 with a traceback in
its log (found by fault injection); the server must turn every one into a
client error that says what to fix, and keep serving.
"""

from __future__ import annotations

import httpx
import pytest

from atoll.judge.embedded import EmbeddedJudge

pytestmark = pytest.mark.timeout(120)

JSON = {"content-type": "application/json"}


@pytest.fixture()
def http(small_judge: EmbeddedJudge):
    with httpx.Client(base_url=small_judge.url, timeout=30) as client:
        yield client


def one_line_error(response: httpx.Response) -> str:
    assert response.headers["content-type"].startswith("application/json"), response.text
    message = response.json()["error"]
    assert isinstance(message, str) and message and "\n" not in message
    assert "Traceback" not in message
    return message


@pytest.mark.parametrize(
    ("request_kwargs", "needle"),
    [
        ({"json": {"pid": "0", "lang": 5, "code": "int main(){}"}}, "lang"),
        ({"json": {"pid": "0", "lang": ["cpp"], "code": "int main(){}"}}, "lang"),
        ({"json": {"pid": {"a": 1}, "code": "int main(){}"}}, "pid"),
        ({"json": {"pid": 0.5, "code": "int main(){}"}}, "pid"),
        ({"json": {"pid": True, "code": "int main(){}"}}, "pid"),
        ({"json": {"pid": "0", "code": 7}}, "code"),
        ({"json": {"pid": "0", "codeBase64": ["aGk="]}}, "codeBase64"),
        ({"json": {"pid": "x" * 1000, "code": "int main(){}"}}, "pid"),
        ({"content": b'{"pid": "0", "code": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
          "headers": JSON}, "nested"),
        ({"content": b'{"pid": "0", "code": "int main(){}\\ud800"}', "headers": JSON}, "code"),
        ({"content": b'{"pid": "\\udfff", "code": "int main(){}"}', "headers": JSON}, "pid"),
        ({"content": b'{"pid": "0", "lang": "\\ud800", "code": "x"}', "headers": JSON}, "lang"),
        ({"content": b'{"pid": ' + b"9" * 5000 + b', "code": "x"}', "headers": JSON}, "JSON"),
        ({"content": b'{"pid": NaN, "code": "x"}', "headers": JSON}, "pid"),
        ({"data": {"pid": "0"}, "files": {"lang": ("lang.txt", b"cpp"),
          "code": ("s.cpp", b"int main(){}")}}, "lang"),
        ({"files": {"pid": ("pid.txt", b"0"), "code": ("s.cpp", b"int main(){}")}}, "pid"),
        ({"content": b"garbage", "headers": {"content-type": "multipart/form-data; boundary=x"}},
         "multipart"),
        ({"content": b"garbage", "headers": {"content-type": "multipart/form-data"}}, "boundary"),
    ],
    ids=[
        "lang-int", "lang-list", "pid-object", "pid-float", "pid-bool", "code-int",
        "base64-list", "pid-long", "deep-nesting", "code-lone-surrogate", "pid-lone-surrogate",
        "lang-lone-surrogate", "huge-number", "nan", "lang-file-part", "pid-file-part",
        "bad-multipart", "multipart-without-boundary",
    ],
)  # fmt: skip
def test_malformed_submissions_are_client_errors(
    http: httpx.Client, request_kwargs: dict, needle: str
) -> None:
    response = http.post("/submit", **request_kwargs)
    assert 400 <= response.status_code < 500, response.text
    assert needle in one_line_error(response)
    assert http.get("/health").json()["ok"] is True


@pytest.mark.parametrize(
    ("sid", "status"),
    [
        (str(2**63), 404),
        (str(2**64 + 5), 404),
        ("9" * 60, 404),
        ("1" * 5000, 404),
        ("-1", 400),
        ("+1", 400),
        ("1e3", 400),
        ("\u0663", 400),  # an Arabic-Indic digit three: int() would read it as 3
        ("%ED%A0%80", 400),
    ],
)
def test_result_ids_out_of_range_or_malformed_are_client_errors(
    http: httpx.Client, sid: str, status: int
) -> None:
    response = http.get(f"/result/{sid}")
    assert response.status_code == status, response.text
    one_line_error(response)


def test_unknown_routes_and_methods_answer_json(http: httpx.Client) -> None:
    missing = http.get("/no/such/route")
    assert missing.status_code == 404
    one_line_error(missing)
    wrong = http.get("/submit")
    assert wrong.status_code == 405
    one_line_error(wrong)


def test_integer_pid_is_read_as_the_problem_id(http: httpx.Client) -> None:
    response = http.post("/submit", json={"pid": 0, "code": "int main(){}"})
    assert response.status_code == 200, response.text
    assert isinstance(response.json()["sid"], int)
