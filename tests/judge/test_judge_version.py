"""`GET /version`: which judge answers, so that a search can record the judge that scored it.

An embedded judge says so (its port is of the moment, not its identity); a
judge serving on its own is known by its URL and the version it reports; a
judge from before the route is known by its URL alone.
"""

from __future__ import annotations

from importlib import metadata
from typing import cast

import httpx
import pytest
from starlette.testclient import TestClient
from test_judge_client import LoopbackJudge

from atoll.core.scoring import ScorerUnavailable
from atoll.judge import describe_judge
from atoll.judge.client import JudgeClient, JudgeUnavailable
from atoll.judge.embedded import JUDGE_URL_ENV, EmbeddedJudge
from atoll.judge.server import create_app
from atoll.judge.service import JudgeService

pytestmark = pytest.mark.timeout(120)

VERSION = metadata.version("atoll-frontiercs-judge")


def test_the_embedded_judge_says_it_is_embedded(small_judge: EmbeddedJudge) -> None:
    answer = httpx.get(f"{small_judge.url}/version", timeout=10)
    assert answer.json() == {"name": "atoll-frontiercs-judge", "version": VERSION, "embedded": True}
    record = describe_judge(small_judge.url)
    assert record.to_json() == {"kind": "embedded", "address": "embedded", "version": VERSION}


def test_a_served_judge_says_it_is_not() -> None:
    app = create_app(
        cast(JudgeService, None)
    )  # `atoll judge serve`'s app; /version reads no service
    answer = TestClient(app).get("/version")
    assert answer.json() == {
        "name": "atoll-frontiercs-judge",
        "version": VERSION,
        "embedded": False,
    }


def test_without_a_url_the_embedded_judge_of_this_installation_is_described(monkeypatch) -> None:
    monkeypatch.delenv(JUDGE_URL_ENV, raising=False)
    assert describe_judge().to_json() == {
        "kind": "embedded",
        "address": "embedded",
        "version": VERSION,
    }


def _versions(status: int, body: object) -> LoopbackJudge:
    return LoopbackJudge(lambda method, path, seen: (status, body))


def test_a_judge_serving_on_its_own_is_described_by_its_url() -> None:
    about = {"name": "atoll-frontiercs-judge", "version": "7.0", "embedded": False}
    with _versions(200, about) as judge:
        assert describe_judge(judge.url + "/").to_json() == {
            "kind": "remote",
            "address": judge.url,
            "version": "7.0",
        }


def test_a_judge_without_the_route_is_described_by_its_url_alone() -> None:
    with _versions(404, {"error": "no route"}) as judge:
        with JudgeClient(judge.url) as client:
            assert client.about() is None
        assert describe_judge(judge.url).to_json() == {
            "kind": "remote",
            "address": judge.url,
            "version": None,
        }


@pytest.mark.parametrize(("status", "body"), [(500, {"error": "broken"}), (200, {"ok": True})])
def test_a_judge_that_cannot_say_which_it_is_is_unavailable(status: int, body: object) -> None:
    with _versions(status, body) as judge:
        with JudgeClient(judge.url) as client, pytest.raises(JudgeUnavailable):
            client.about()
        with pytest.raises(
            ScorerUnavailable, match=f"cannot tell which judge answers at {judge.url}"
        ):
            describe_judge(judge.url)
