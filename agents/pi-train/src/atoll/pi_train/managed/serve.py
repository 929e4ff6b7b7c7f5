"""SkyRL tx's Tinker API server, with the route current Tinker SDKs ask for first.

Run by the managed Python 3.11 interpreter with SkyRL tx's own arguments.
SkyRL tx 0.3.0 lacks `/api/v1/client/config` (the SDK POSTs it), which tinker >= 0.22 calls
before anything else; this module adds it (JWT auth off, the only mode the
server has) and then runs the server as `python -m tx.tinker.api` does, but
with engine.py beside it as its engine, woken after each request that leaves
the engine work (engine.py says why).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvicorn
from tx.tinker import api
from tx.tinker.config import EngineConfig, add_model
from tx.utils.log import get_uvicorn_log_config


# SkyRL tx is read as Any here (see mypy-managed.ini), so its route decorator is untyped.
@api.app.api_route("/api/v1/client/config", methods=["GET", "POST"])  # type: ignore[untyped-decorator]
async def client_config() -> dict[str, bool]:
    return {"pjwt_auth_enabled": False}


#: The routes whose request leaves a pending future for the engine (SkyRL tx 0.3.0's API).
ENGINE_WORK = frozenset(
    f"/api/v1/{name}"
    for name in (
        "create_model",
        "unload_model",
        "forward_backward",
        "forward",
        "optim_step",
        "load_weights",
        "save_weights",
        "save_weights_for_sampler",
        "asample",
    )
)
#: The variables the uv shim and engine.py read (env.py's shim; engine.WAKE_VARIABLE).
ENGINE_SCRIPT_VARIABLE = "ATOLL_TINKER_ENGINE"
WAKE_VARIABLE = "ATOLL_TINKER_WAKE"


def wake_engine_after_work(name: str) -> None:
    """After each request of ENGINE_WORK, a datagram to the engine's wake socket `name`.

    Best effort: a full queue means a wake is already pending, and an engine
    not yet listening looks for work on its own within a second.
    """
    sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK)
    address = "\0" + name

    @api.app.middleware("http")  # type: ignore[untyped-decorator]
    async def wake(request: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        response = await call_next(request)
        if request.url.path in ENGINE_WORK:
            with contextlib.suppress(OSError):
                sender.sendto(b"!", address)
        return response


def main() -> None:
    parser = argparse.ArgumentParser(description="SkyRL tx Tinker API server (atoll)")
    add_model(parser, EngineConfig)
    parser.add_argument("--host", type=str, default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    fields = {k: v for k, v in vars(args).items() if k in EngineConfig.model_fields}
    api.app.state.engine_config = EngineConfig.model_validate(fields)
    # The engine is started by the app's startup with this environment.
    wake = f"atoll-tinker-wake-{os.getpid()}-{secrets.token_hex(4)}"
    os.environ[WAKE_VARIABLE] = wake
    os.environ[ENGINE_SCRIPT_VARIABLE] = str(Path(__file__).with_name("engine.py"))
    wake_engine_after_work(wake)
    uvicorn.run(api.app, host=args.host, port=args.port, log_config=get_uvicorn_log_config())


if __name__ == "__main__":
    main()
