"""A TCP listener on this host that egress tests try to reach from containers.

Bound to 0.0.0.0, it answers on every host address, including the gateway of
each bridge network; each client sends one token line, so a test can tell which
phase or policy actually got through.
"""

from __future__ import annotations

import socket
import threading


class Listener:
    """A TCP server on every host address that records the token each client sends."""

    def __init__(self) -> None:
        self.server = socket.create_server(("0.0.0.0", 0))
        self.port = self.server.getsockname()[1]
        self.tokens: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    self.tokens.append(conn.makefile().readline().strip())
                    conn.sendall(b"ok\n")
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()
