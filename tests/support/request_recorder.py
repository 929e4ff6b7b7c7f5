"""A loopback HTTP server that records every request and answers each with a refusal.

A test points a command's service address (e.g. `--base-url` for Tinker) at
it to see whether, and what, the command sent: a command refused before it
may spend anything must leave `requests` empty. Every request is answered
401 with a JSON error, which a client takes as a bad key and gives up on at
once (no retry loop), so a command that does reach the service fails fast.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


class RequestRecorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []  # (method, path), in arrival order
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Recorder)
        self._thread = threading.Thread(target=self.serve_forever, name="recorder", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> RequestRecorder:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)


class _Recorder(BaseHTTPRequestHandler):
    server: RequestRecorder

    def _record(self) -> None:
        with self.server.lock:
            self.server.requests.append((self.command, self.path))
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        body = b'{"error": "this address only records requests"}'
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _record  # noqa: N815 - the base's names

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass
