"""The loopback ASGI server the metered endpoint runs on: real uvicorn, real sockets.

It runs inside the caller's event loop and must leave the run's signal
handlers alone (Ctrl-C stops a FrontierSmith run), take the port asked for
when it is free and another when not, and answer a request in flight before
it stops.
"""

from __future__ import annotations

import asyncio
import signal
import socket

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from atoll.frontiersmith import loopback


def _app(delay_s: float = 0.0, answered: list[str] | None = None) -> Starlette:
    async def answer(request: Request) -> PlainTextResponse:
        await asyncio.sleep(delay_s)
        if answered is not None:
            answered.append(request.url.path)
        return PlainTextResponse("answered")

    return Starlette(routes=[Route("/", answer)])


def test_serving_leaves_the_runs_signal_handlers_alone() -> None:
    async def go() -> tuple[object, object]:
        before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        async with loopback.serving(_app()) as port, httpx.AsyncClient() as client:
            assert (await client.get(f"http://127.0.0.1:{port}/")).text == "answered"
            during = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        return before, during

    before, during = asyncio.run(go())
    assert during == before


def test_the_port_asked_for_is_taken_when_free_and_another_when_not() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]

    async def go() -> tuple[int, int]:
        async with (
            loopback.serving(_app(), free) as first,
            loopback.serving(_app(), free) as second,
        ):
            return first, second

    first, second = asyncio.run(go())
    assert first == free and second not in (0, free)


def test_a_request_in_flight_is_answered_before_serving_ends() -> None:
    """Serving ends only once the handler has answered; the client then reads that answer.

    The client's own task may finish reading a moment after serving ends (it
    shares the loop), so what is held to "before" is the server's side: the
    handler's answer. That the client gets it at all, once no server is left
    to answer, shows the answer was sent, not cut off.
    """
    answered: list[str] = []

    async def go() -> tuple[str, list[str]]:
        async with httpx.AsyncClient(timeout=10) as client:
            async with loopback.serving(_app(delay_s=0.5, answered=answered)) as port:
                asked = asyncio.create_task(client.get(f"http://127.0.0.1:{port}/"))
                await asyncio.sleep(0.2)  # the request is in the app when serving ends
                assert answered == []
            answered_by_the_end = list(answered)
            return (await asked).text, answered_by_the_end

    text, answered_by_the_end = asyncio.run(go())
    assert answered_by_the_end == ["/"]
    assert text == "answered"
