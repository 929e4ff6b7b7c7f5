"""The real Reef server (`reef serve`, record-only upstream mode) for tests.

Reef is what the guidance model is served and trained through, so tests of
the Reef wire protocol run against the real server from `reef-infra`, placed
in front of a scripted OpenAI-compatible upstream. One server is started per
test session (it takes a few seconds) on a free loopback port; its log is
kept in its run directory and printed when it fails to start.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from support.openai_server import ScriptedOpenAIServer
from support.ports import free_port

STARTUP_TIMEOUT_S = 90.0


class ReefServer:
    """One `reef serve` process proxying `/v1/chat/completions` to `upstream`."""

    def __init__(
        self, upstream: ScriptedOpenAIServer, run_dir: Path, *, model: str = "scripted"
    ) -> None:
        self.upstream = upstream
        self.run_dir = run_dir
        self.model = model
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.log_path = run_dir / "reef-serve.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ReefServer:
        reef = shutil.which("reef", path=str(Path(sys.executable).parent)) or "reef"
        self.run_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, REEF_TOKEN=self.token)
        argv = [
            reef,
            "serve",
            "--inference.upstream-url",
            self.upstream.root_url,
            "--inference.upstream-model",
            self.model,
            "--reef.port",
            str(self.port),
            "--reef.run-dir",
            str(self.run_dir),
        ]
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                argv,
                cwd=self.run_dir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"reef serve exited with {self._process.returncode}:\n{self.log()}"
                )
            try:
                self.get("/reef/status")
                return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"reef serve did not answer within {STARTUP_TIMEOUT_S} s:\n{self.log()}")

    def stop(self) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def get(self, path: str) -> Any:
        request = urllib.request.Request(
            self.url + path, headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read().decode() or "null")

    def records(self, scenario: str, request_type: str | None = None) -> list[dict[str, Any]]:
        """Every record Reef stored for `scenario` (optionally of one request type), oldest first."""
        out: list[dict[str, Any]] = []
        after = 0
        while True:
            query = f"?after_sequence={after}&limit=100"
            if request_type is not None:
                query += f"&request_type={request_type}"
            page = self.get(f"/reef/scenarios/{scenario}/records{query}")
            out.extend(page["records"])
            if page.get("next_after_sequence") is None:
                return out
            after = int(page["next_after_sequence"])

    def record(self, scenario: str, record_id: str) -> dict[str, Any]:
        """One stored record with its payload."""
        return self.get(f"/reef/scenarios/{scenario}/records/{record_id}")
