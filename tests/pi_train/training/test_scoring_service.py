"""The scoring service answers every episode of an iteration at once, as the trainer asks.

The trainer's Envs post their checks and rewards concurrently (a group's
episodes, every group of a batch, a held-out evaluation's groups); a
connection the service resets fails that request and the run with it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx

from atoll.pi_train.training.scoring import ScoringService

CONCURRENT = 128


def test_many_concurrent_posts_are_all_answered() -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def reward(body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.01)  # a route that takes a moment, as a sandbox check does
        with lock:
            seen.append(int(body["i"]))
        return {"reward": float(body["i"]), "metrics": {}}

    async def post_all(url: str, token: str) -> list[httpx.Response]:
        headers = {"authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
            return await asyncio.gather(
                *(client.post("/reward", json={"i": i}) for i in range(CONCURRENT))
            )

    with ScoringService({"/reward": reward}) as service:
        answers = asyncio.run(post_all(service.url, service.token))
        assert not service.errors
    assert [a.status_code for a in answers] == [200] * CONCURRENT
    assert [a.json()["reward"] for a in answers] == [float(i) for i in range(CONCURRENT)]
    assert sorted(seen) == list(range(CONCURRENT))
