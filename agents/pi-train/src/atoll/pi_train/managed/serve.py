"""SkyRL tx's Tinker API server, with the route current Tinker SDKs ask for first.

Run by the managed Python 3.11 interpreter with SkyRL tx's own arguments.
SkyRL tx 0.3.0 lacks `/api/v1/client/config` (the SDK POSTs it), which tinker >= 0.22 calls
before anything else; this module adds it (JWT auth off, the only mode the
server has) and then runs the server exactly as `python -m tx.tinker.api`.
"""

from __future__ import annotations

import argparse

import uvicorn
from tx.tinker import api
from tx.tinker.config import EngineConfig, add_model
from tx.utils.log import get_uvicorn_log_config


# SkyRL tx is read as Any here (see mypy-managed.ini), so its route decorator is untyped.
@api.app.api_route("/api/v1/client/config", methods=["GET", "POST"])  # type: ignore[untyped-decorator]
async def client_config() -> dict[str, bool]:
    return {"pjwt_auth_enabled": False}


def main() -> None:
    parser = argparse.ArgumentParser(description="SkyRL tx Tinker API server (atoll)")
    add_model(parser, EngineConfig)
    parser.add_argument("--host", type=str, default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    fields = {k: v for k, v in vars(args).items() if k in EngineConfig.model_fields}
    api.app.state.engine_config = EngineConfig.model_validate(fields)
    uvicorn.run(api.app, host=args.host, port=args.port, log_config=get_uvicorn_log_config())


if __name__ == "__main__":
    main()
