"""The scoring service the trainer process calls back, on 127.0.0.1 with a per-run token.

Hidden cases and Euler answers never leave this (Python 3.12) process: the
trainer posts a task id and a submission, and gets back counts (`/check`) or
a reward (`/reward`). The token lives only in the two processes' memory and
the trainer's environment, never on disk.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class ScoringService(ThreadingHTTPServer):
    daemon_threads = True
    # Every episode of an iteration (and of a held-out evaluation) posts at once; the
    # socketserver default backlog of 5 reset connections past a dozen or so, and one
    # reset fails the trainer's request and with it the whole run.
    request_queue_size = 256

    def __init__(self, routes: dict[str, Handler]) -> None:
        self.routes = routes
        self.token = secrets.token_urlsafe(24)
        self.errors: list[str] = []
        super().__init__(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self.serve_forever, name="scoring", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> ScoringService:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)


class _Handler(BaseHTTPRequestHandler):
    server: ScoringService

    def do_POST(self) -> None:  # noqa: N802 - the base class's name
        if self.headers.get("authorization") != f"Bearer {self.server.token}":
            self._send(HTTPStatus.UNAUTHORIZED, {"error": "unauthorized"})
            return
        route = self.server.routes.get(self.path)
        if route is None:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no route {self.path}"})
            return
        try:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length))
            answer = route(body)
        except Exception as exc:  # reported to the trainer as a 500 and kept for the run's error
            self.server.errors.append(f"{self.path}: {type(exc).__name__}: {exc}")
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": type(exc).__name__})
            return
        self._send(HTTPStatus.OK, answer)

    def _send(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        """Answer the trainer; a trainer that has gone meanwhile is no scoring failure.

        The trainer may end while a request is in flight (it refused its input,
        or was stopped): its own exit says why, and an answer nobody reads
        must not turn that into "scoring failed".
        """
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass
