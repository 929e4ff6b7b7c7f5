"""Eval under failure: a provider error is an error row (never a score) and is retried on rerun;
SIGTERM stops a run cleanly (containers gone, rows kept, exit 130)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from scripted_solver import bash, solver, write
from support.euler_cli import ATOLL, KEY_ENV
from support.openai_server import Reply, ScriptedOpenAIServer

from atoll.pi import container

pytestmark = [pytest.mark.docker, pytest.mark.slow]

P1 = "print(sum(n for n in range(1000) if n % 3 == 0 or n % 5 == 0))\n"


def command(store: Path, out: Path, url: str) -> list[str]:
    return [
        ATOLL,
        "euler",
        "eval",
        "--store",
        str(store),
        "--problems",
        "1",
        "--languages",
        "python",
        "--base-url",
        url,
        "--model",
        "scripted-model",
        "--api-key-env",
        KEY_ENV,
        "--out",
        str(out),
        "--max-turns",
        "6",
        "--timeout",
        "120",
    ]


def test_provider_error_is_an_error_row_and_is_retried(
    rollout_ready: dict[str, Any], sample_store: Path, key_env: dict[str, str], tmp_path: Path
) -> None:
    honest = solver(
        lambda key, language, model: [write("solution.py", P1), bash("python3 solution.py")]
    )
    state = {"down": True}

    def script(request: dict[str, Any]) -> Reply:
        return (
            Reply(status=500, error_message="upstream overloaded")
            if state["down"]
            else honest(request)
        )

    with ScriptedOpenAIServer(script) as provider:
        out = tmp_path / "run"
        first = subprocess.run(
            command(sample_store, out, provider.base_url),
            capture_output=True,
            text=True,
            env=key_env,
            timeout=300,
        )
        assert first.returncode == 1, first.stderr[-2000:]
        assert "1 attempts ended in infrastructure errors (not scored)" in first.stderr
        [row] = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
        assert row["status"] == "error" and row["gate"] is None and not row["passed"]
        assert "0 scored attempts" in (out / "summary.md").read_text()
        state["down"] = False
        second = subprocess.run(
            command(sample_store, out, provider.base_url),
            capture_output=True,
            text=True,
            env=key_env,
            timeout=300,
        )
        assert second.returncode == 0, second.stderr[-2000:]
        lines = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
        assert [r["status"] for r in lines] == ["error", "scored"] and lines[1]["passed"]
        assert (
            "1 scored attempts, 1 passed, 0 infrastructure errors"
            in (out / "summary.md").read_text()
        )
        assert sorted(p.name for p in (out / "rollouts").iterdir()) == [
            "eval-p1-python-direct-s0",
            "eval-p1-python-direct-s0.try-2",
        ]
        assert [r["rollout_dir"] for r in lines] == [
            "rollouts/eval-p1-python-direct-s0",
            "rollouts/eval-p1-python-direct-s0.try-2",
        ]
        old = json.loads((out / lines[0]["rollout_dir"] / "record.json").read_text())
        assert old["scorable"] is False and "500" in old["error"]


def test_sigterm_stops_cleanly(
    rollout_ready: dict[str, Any], sample_store: Path, key_env: dict[str, str], tmp_path: Path
) -> None:
    slow = solver(lambda key, language, model: [write("solution.py", P1), bash("sleep 60")])
    with ScriptedOpenAIServer(slow) as provider:
        out = tmp_path / "run"
        process = subprocess.Popen(
            command(sample_store, out, provider.base_url),
            env=key_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 180
        bridge_logs = out / "rollouts" / "eval-p1-python-direct-s0" / "bridge.jsonl"
        while time.monotonic() < deadline and process.poll() is None:
            if bridge_logs.exists() and '"write"' in bridge_logs.read_text():
                break
            time.sleep(0.1)
        time.sleep(1.0)  # the `sleep 60` command is running in the container
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 130, stderr[-2000:]
        assert stderr.strip().splitlines()[-1].startswith("error: interrupted")
        client = container.connect()
        try:
            left = client.api.containers(all=True, filters={"label": container.LABEL})
            mine = f":{process.pid}"
            owned = [
                c
                for c in left
                if (c.get("Labels") or {}).get(container.OWNER_LABEL, "").endswith(mine)
            ]
            assert owned == []
        finally:
            client.close()
