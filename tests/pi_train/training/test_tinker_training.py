"""Tinker training for real, on this machine: a tiny model, SkyRL tx, the cookbook's RL loop.

Nothing here fakes Tinker: the `atoll` command builds the tiny model in the
managed environment, starts SkyRL tx on loopback, and `atoll pi train hidden`
/ `answer` drive it with the tinker SDK through tinker-cookbook's loop, the
hidden cases checked in atoll's sandbox. The tests share the session's server
(tests/pi_train/conftest.py), whose teardown checks nothing of it is left.
A random tiny model's reward stays flat: these tests prove the plumbing and
the run directory, not learning.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from support.tinker_local import RUN_FLAGS, run_atoll

from atoll.pi_train.euler_source import Store
from atoll.pi_train.hidden.families import FAMILIES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_tiny_model_is_deterministic_for_a_seed(
    tmp_path: Path, venv_bin: Path, tiny_model: Path
) -> None:
    again = tmp_path / "again"
    done = run_atoll(venv_bin, dict(os.environ), "tinker", "tiny-model", str(again), "--seed", "3")
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in tiny_model.iterdir())
    assert "model.safetensors" in names and "tokenizer.json" in names
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        assert (tiny_model / name).read_bytes() == (again / name).read_bytes(), name


def test_local_server_answers_and_reports_status(
    server_env: dict[str, str], venv_bin: Path
) -> None:
    assert server_env["TINKER_BASE_URL"].startswith("http://127.0.0.1:")
    assert server_env["TINKER_API_KEY"].startswith("tml-")
    done = run_atoll(venv_bin, server_env, "tinker", "local", "status", timeout=30)
    assert done.returncode == 0, done.stderr
    assert "answers" in done.stdout and "does not answer" not in done.stdout
    doctor = run_atoll(
        venv_bin, {**server_env, "COLUMNS": "250"}, "doctor", "--only", "tinker-local", timeout=60
    )
    line = next(line for line in doctor.stdout.splitlines() if "tinker-local" in line)
    assert "ok" in line and f"{server_env['TINKER_BASE_URL']} (pid" in line and "answers" in line


def test_training_refuses_to_start_without_a_key(
    server_env: dict[str, str], venv_bin: Path, tiny_model: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in server_env.items() if k != "TINKER_API_KEY"}
    out = tmp_path / "run"
    done = run_atoll(
        venv_bin, env, "pi", "train", "hidden", "--base-model", str(tiny_model),
        "--iterations", "1", "--out", str(out), timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "TINKER_API_KEY" in done.stderr
    assert not out.exists()


@pytest.mark.long
def test_hidden_training_writes_its_run_and_resumes_without_repeating(
    server_env: dict[str, str], venv_bin: Path, tiny_model: Path, tmp_path: Path
) -> None:
    out = tmp_path / "hidden"
    base = ["pi", "train", "hidden", "--base-model", str(tiny_model), *RUN_FLAGS]
    first = run_atoll(venv_bin, server_env, *base, "--iterations", "1", "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert [r["step"] for r in _rows(out / "metrics.jsonl")] == [0]

    # The rerun with two iterations resumes after the first instead of starting over.
    second = run_atoll(venv_bin, server_env, *base, "--iterations", "2", "--out", str(out))
    assert second.returncode == 0, second.stderr
    rows = _rows(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1]
    for row in rows:
        # Every trajectory was checked in the sandbox: each one a submission's or an
        # infrastructure failure, or a pass; the random model never passes everything.
        failures = row["env/all/submission_failure"]
        assert failures == pytest.approx(1.0 - row["env/all/all_cases"])
        assert 0.0 <= row["env/all/pass_fraction"] <= 1.0
        assert row["env/all/check_seconds"] > 0
    checkpoints = _rows(out / "checkpoints.jsonl")
    assert all(c["sampler_path"].startswith("tinker://") for c in checkpoints)
    assert max(c["batch"] for c in checkpoints) == 2

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["iterations"] == 2
    assert manifest["namespaces"]["train"] == "train"
    assert manifest["bounds"]["tool_calls_per_episode"] == 2
    assert len(manifest["task_set"]["digest"]) == 64
    summary = (out / "summary.md").read_text()
    assert "](reward.png)" in summary and (out / "reward.png").read_bytes()[:4] == b"\x89PNG"
    assert server_env["TINKER_API_KEY"] not in "".join(
        p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()
    )

    # Other settings in the same directory are refused, not mixed in.
    other = run_atoll(
        venv_bin, server_env, *base, "--iterations", "3", "--lora-rank", "4", "--out", str(out),
        timeout=120,
    )  # fmt: skip
    assert other.returncode == 2 and "lora_rank" in other.stderr
    assert [r["step"] for r in _rows(out / "metrics.jsonl")] == [0, 1]


class _FailsFirstSandbox(ThreadingHTTPServer):
    """A sandbox on loopback that fails the first check of a sampled submission; the rest
    (the preflight's reference solutions among them) go to a real sandbox.

    Every attempt the client makes for that check (the same request body:
    a check's markers are its own) answers 500, so the check fails as a
    sandbox outage does, not as one retried hiccup.
    """

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.requests = 0
        self.doomed: bytes | None = None
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _is_reference(body: bytes) -> bool:
    """Whether a check request runs a family's reference solution (the preflight's)."""
    code = str(json.loads(body).get("code", ""))
    return any(
        code.startswith(source)
        for family in FAMILIES.values()
        for source in family.solutions.values()
    )


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _FailsFirstSandbox

    def do_POST(self) -> None:  # noqa: N802 - the base class's name
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        with self.server.lock:
            self.server.requests += 1
            if self.server.doomed is None and not _is_reference(body):
                self.server.doomed = body
            fail = body == self.server.doomed
        if fail:
            status, data, kind = 500, b'{"error": "sandbox down"}', "application/json"
        else:
            answer = httpx.post(
                self.server.upstream + self.path,
                content=body,
                headers={"content-type": self.headers.get("content-type", "application/json")},
                timeout=120,
            )
            status, data = answer.status_code, answer.content
            kind = answer.headers.get("content-type", "application/json")
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


@pytest.mark.parametrize("phase", ["train", "eval"])
def test_an_infrastructure_failure_drops_its_group_and_is_never_a_reward(
    server_env: dict[str, str], venv_bin: Path, tiny_model: Path, tmp_path: Path, phase: str
) -> None:
    """The sandbox fails the run's first check: a training group's (no held-out evaluation),
    or, with the held-out set evaluated at iteration 0 before any training, a held-out one's."""
    from atoll.core.sandbox.fusion import EmbeddedFusionServer

    out = tmp_path / "flaky"
    with EmbeddedFusionServer() as real, _FailsFirstSandbox(real.url) as flaky:
        thread = threading.Thread(target=flaky.serve_forever, daemon=True)
        thread.start()
        try:
            done = run_atoll(
                venv_bin, server_env, "pi", "train", "hidden", "--base-model", str(tiny_model),
                *RUN_FLAGS, "--languages", "python", "--iterations", "1",
                "--eval-every", "1" if phase == "eval" else "0",
                "--sandbox-url", flaky.url, "--out", str(out),
            )  # fmt: skip
        finally:
            flaky.shutdown()
        assert flaky.requests > 2  # the failed check, then the others through the real sandbox
    assert done.returncode == 0, done.stderr
    dropped = _rows(out / "infrastructure_failures.jsonl")
    assert len(dropped) == 1 and dropped[0]["iteration"] == 0
    assert dropped[0]["phase"] == phase and f"/{phase}/" in dropped[0]["task"]
    # One iteration is enough: the run finished (and saved its checkpoint) past the failure.
    rows = _rows(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0]
    assert max(c["batch"] for c in _rows(out / "checkpoints.jsonl")) == 1
    # Every trajectory in the metrics was a judged submission (a pass or a submission
    # failure), none an unjudged zero: iteration 0 trained on its other group only, or the
    # held-out metrics hold the other held-out group only (of 2: both families in Python).
    for row in rows:
        assert "env/all/infrastructure_failure" not in row
        judged = row["env/all/submission_failure"] + row["env/all/all_cases"]
        assert judged == pytest.approx(1.0)
    summary = (out / "summary.md").read_text()
    if phase == "train":
        assert "1 group(s) left out of the update" in summary
        assert not [k for k in rows[0] if k.startswith("test/")]
    else:
        assert rows[0]["test/env/all/total_episodes"] == 1
        assert rows[0]["test/env/all/submission_failure"] + rows[0][
            "test/env/all/all_cases"
        ] == pytest.approx(1.0)
        assert "1 held-out group(s) left out of the held-out metrics" in summary
        assert "left out of the update" not in summary


def test_answer_training_on_the_euler_sample_store(
    server_env: dict[str, str], venv_bin: Path, tiny_model: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    made = run_atoll(venv_bin, server_env, "euler", "import", "--sample", "--store", str(store))
    assert made.returncode == 0, made.stderr
    out = tmp_path / "answer"
    done = run_atoll(
        venv_bin, server_env, "pi", "train", "answer", "--base-model", str(tiny_model),
        *RUN_FLAGS, "--languages", "python", "--iterations", "1", "--store", str(store),
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # One iteration: answer training over several iterations runs in test_replay_training.py.
    rows = _rows(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0]
    for row in rows:
        # A random model shows no code block and no answer: the format penalty, nothing more.
        assert row["env/all/reward/total"] == pytest.approx(-0.1)
        assert row["env/all/correct"] == 0.0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["strategies"] == ["derive", "direct"]
    # Answers stay in the store's private part: not in anything the trainer was given.
    task_text = (out / "config.json").read_text()
    assert "euler/1/python/direct" in task_text
    assert Store(store).expected(1) not in task_text
