"""An HTTP server speaking SandboxFusion's `run_code` API, on loopback only.

SandboxFusion's own server is a container image; this one answers the same
`POST /run_code` (and `GET /v1/ping`) with atoll's sandbox behind it, so
trainers and evaluators written against SandboxFusion's client run here
unchanged. The standard library's threading server is enough: each request
runs one sandboxed program, at most `workers` at once (the others wait), and
a connection that sends nothing for `read_timeout_s` is dropped.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import ValidationError

from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.factory import get_backend
from atoll.core.sandbox.fusion.loopback import NotLoopbackError, is_loopback_host
from atoll.core.sandbox.fusion.protocol import RunCodeRequest
from atoll.core.sandbox.fusion.runner import RequestError, run_code
from atoll.core.sizes import MiB

log = logging.getLogger(__name__)

DEFAULT_PORT = 8080  # SandboxFusion's own
MAX_BODY_BYTES = 32 * MiB
READ_TIMEOUT_S = 30.0


def default_workers() -> int:
    """Programs run at once by default: one per core, as each is mostly CPU."""
    return max(1, os.cpu_count() or 1)


class FusionServer(ThreadingHTTPServer):
    """The listening server; `serve_forever()` serves until `shutdown()`."""

    daemon_threads = True

    def __init__(
        self,
        port: int = DEFAULT_PORT,
        *,
        host: str = "127.0.0.1",
        backend: SandboxBackend | None = None,
        workers: int | None = None,
    ) -> None:
        if not is_loopback_host(host):
            raise NotLoopbackError(f"the sandbox service binds loopback only, not {host!r}")
        self.backend = backend or get_backend("bwrap")
        self.slots = threading.BoundedSemaphore(workers or default_workers())
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{port}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = READ_TIMEOUT_S
    server: FusionServer
    server_version = "atoll-fusion"

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        if self.path.rstrip("/") == "/v1/ping":
            self._reply(HTTPStatus.OK, "pong")
        else:
            self._reply(HTTPStatus.NOT_FOUND, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path.rstrip("/") != "/run_code":
            self._reply(HTTPStatus.NOT_FOUND, {"detail": "Not Found"})
            return
        body = self._body()
        if body is None:
            return
        try:
            request = RunCodeRequest.model_validate_json(body)
        except ValidationError as exc:
            detail = json.loads(
                exc.json(include_url=False, include_context=False, include_input=False)
            )
            self._reply(HTTPStatus.UNPROCESSABLE_ENTITY, {"detail": detail})
            return
        try:
            with self.server.slots:
                response = run_code(request, self.server.backend)
        except RequestError as exc:
            self._reply(HTTPStatus.UNPROCESSABLE_ENTITY, {"detail": str(exc)})
            return
        self._reply(HTTPStatus.OK, response.model_dump(mode="json"))

    def _body(self) -> bytes | None:
        """The request body, or None once an error has been answered."""
        length_header = self.headers.get("Content-Length")
        if length_header is None or not length_header.strip().isdigit():
            self._reply(HTTPStatus.LENGTH_REQUIRED, {"detail": "Content-Length required"})
            return None
        length = int(length_header)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._reply(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                {"detail": f"request body over {MAX_BODY_BYTES // MiB} MiB"},
            )
            return None
        return self.rfile.read(length)

    def _reply(self, status: HTTPStatus, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        log.info("%s %s", self.address_string(), format % args)


class EmbeddedFusionServer:
    """A FusionServer on 127.0.0.1:<free port> in a background thread; a context manager.

    For callers given no sandbox URL (`atoll pi train check`, tests): they
    then speak to a sandbox exactly as they would to `atoll sandbox fusion-serve`.
    """

    def __init__(self, backend: SandboxBackend | None = None, workers: int | None = None) -> None:
        self._backend = backend
        self._workers = workers
        self._server: FusionServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the embedded sandbox service is not running")
        return self._server.url

    def start(self) -> str:
        """Check the backend, then serve; the service's URL."""
        backend = self._backend or get_backend("bwrap")
        backend.check()
        self._server = FusionServer(0, backend=backend, workers=self._workers)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fusion-sandbox", daemon=True
        )
        self._thread.start()
        return self._server.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> EmbeddedFusionServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
