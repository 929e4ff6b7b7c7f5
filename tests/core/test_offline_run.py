"""`atoll run` on a machine without internet: nothing tries to reach outside.

Every outbound HTTP(S) client in the run (LiteLLM's cost-map fetch among them)
honours the standard proxy variables, so the test points them at a proxy of
its own on loopback that records each request it is asked to forward and
forwards none. Harbor's telemetry is switched off the documented way
(`HARBOR_TELEMETRY=0`); anything else that reaches the proxy is an outside
connection the run attempted.
"""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from harbor.telemetry import POSTHOG_HOST

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TASK = Path(__file__).parent / "environments" / "tasks" / "write-a-file"


class RecordingProxy:
    """An HTTP proxy on loopback that records the first line of every request and answers none."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.requests: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._listener.close()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with client:
                client.settimeout(5)
                try:
                    head = client.recv(4096)
                except OSError:
                    head = b""
                self.requests.append(head.split(b"\r\n", 1)[0].decode(errors="replace"))


@pytest.fixture
def proxy() -> Iterator[RecordingProxy]:
    with RecordingProxy() as recording:
        yield recording


def test_atoll_run_attempts_no_outside_connection(venv_bin, tmp_path, proxy):
    jobs, roots = tmp_path / "jobs", tmp_path / "roots"
    jobs.mkdir()
    roots.mkdir()
    env = {
        "PATH": f"{venv_bin}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TERM": "dumb",
        "ATOLL_LOCAL_ROOT": str(roots),
        **{name: proxy.url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")},
        **{name.lower(): proxy.url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")},
    }
    done = subprocess.run(
        [str(venv_bin / "atoll"), "run", "-p", str(TASK), "--agent", "oracle",
         "--env", "atoll-local", "-o", str(jobs)],
        capture_output=True, text=True, timeout=240, cwd=jobs, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert list(jobs.glob("*/result.json")), "the run did not finish"
    telemetry = urlsplit(POSTHOG_HOST).hostname
    assert telemetry and [r for r in proxy.requests if telemetry not in r] == []
    assert "model cost map" not in done.stdout + done.stderr
