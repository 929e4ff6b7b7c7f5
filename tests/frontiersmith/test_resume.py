"""Money across crashes: SIGKILL mid-stage, an uncertain request, reconcile, resume; a spent budget.

The run is killed while the scripted model holds one `solve` answer. The
request was sent, so its receipt is uncertain: a resume refuses to start
until `reconcile` settles it, and then pays for nothing it already has —
every request reaches the server once, except the ones reconciled, which
are sent again once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from support.frontiersmith_cli import emit, emit_env
from support.frontiersmith_model import KnapsackModel, seed_lines
from support.openai_server import ScriptedOpenAIServer

from atoll.core.durable import canonical_json
from atoll.core.ledger import Ledger, State, request_key

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _flags(server: ScriptedOpenAIServer, seeds: Path, out: Path, budget: str = "5") -> list[str]:
    return [
        "--seeds", str(seeds), "--target", "1", "--budget", budget, "--model", "scripted",
        "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
        "--environment", "atoll-local", "--out", str(out),
    ]  # fmt: skip


def _holding_one_seed(tmp_path: Path, seed: str) -> tuple[Path, Path, KnapsackModel]:
    """Seeds, output directory and a model that holds the seed's `solve` answer until released."""
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines([seed]))
    model = KnapsackModel()
    model.hold = ("solve", seed)
    return seeds, tmp_path / "out", model


def _start_emit(
    venv_bin: Path, tmp_path: Path, server: ScriptedOpenAIServer, seeds: Path, out: Path, **popen
) -> subprocess.Popen:
    return subprocess.Popen(
        [str(venv_bin / "atoll"), "emit", "frontiersmith", *_flags(server, seeds, out)],
        stderr=subprocess.PIPE,
        env=emit_env(tmp_path),
        cwd=tmp_path,
        **popen,
    )


def test_sigkill_mid_stage_then_reconcile_and_resume(venv_bin: Path, tmp_path: Path) -> None:
    seeds, out, model = _holding_one_seed(tmp_path, "k1")
    with ScriptedOpenAIServer(model.script) as server:
        process = _start_emit(venv_bin, tmp_path, server, seeds, out, stdout=subprocess.DEVNULL)
        try:
            assert model.held.wait(timeout=120), "the run never reached the held request"
            time.sleep(1.0)  # the other answers of the stage settle meanwhile
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
            process.stderr.close()  # type: ignore[union-attr]
        model.hold = None
        model.release.set()
        (run_id,) = [p.name for p in (out / "runs").iterdir()]
        sent_before = len(server.chat_requests())

        blocked = emit(venv_bin, tmp_path, "--out", str(out), "--resume", run_id)
        assert blocked.returncode == 2
        assert "uncertain request" in blocked.stderr and f"reconcile {run_id}" in blocked.stderr
        assert len(server.chat_requests()) == sent_before  # nothing was sent while blocked

        listed = emit(venv_bin, tmp_path, "reconcile", run_id, "--list")
        assert listed.returncode == 0 and "solve:k1" in listed.stdout + listed.stderr
        # no --out: the run is found through the run index
        settled = emit(venv_bin, tmp_path, "reconcile", run_id, "--note", "dashboard shows it")
        assert settled.returncode == 0, settled.stderr
        assert "settled at" in settled.stdout + settled.stderr

        resumed = emit(venv_bin, tmp_path, "--out", str(out), "--resume", run_id, "--workers", "2")
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-4000:]
        requests = server.chat_requests()

    summary = json.loads((out / "run.json").read_text())
    assert summary["totals"]["accepted"] == 1
    with Ledger.open(out / "runs" / run_id / "ledger.sqlite") as ledger:
        receipts = ledger.receipts()
    reconciled = [r for r in receipts if r.state is State.RECONCILED]
    assert reconciled and all("dashboard shows it" in (r.error or "") for r in reconciled)
    held = [
        r
        for r in reconciled
        if r.label == "solve:k1" and "independent solution 1 of" in json.dumps(r.request)
    ]
    assert len(held) == 1
    answered = [r.key for r in receipts if r.state is State.ANSWERED]
    assert len(answered) == len(set(answered))  # no answer paid for twice
    sent = Counter(request_key(r.body) for r in requests)
    again = Counter(r.key for r in reconciled)
    for key, count in sent.items():
        assert count == 1 + again.get(key, 0), "a request was sent again without being reconciled"
    assert all(canonical_json(r.request) for r in receipts)


def test_sigterm_stops_like_ctrl_c_once_requests_in_flight_settle(
    venv_bin: Path, tmp_path: Path
) -> None:
    seeds, out, model = _holding_one_seed(tmp_path, "t1")
    with ScriptedOpenAIServer(model.script) as server:
        process = _start_emit(
            venv_bin, tmp_path, server, seeds, out, stdout=subprocess.PIPE, text=True
        )
        try:
            assert model.held.wait(timeout=120), "the run never reached the held request"
            process.send_signal(signal.SIGTERM)
            time.sleep(1.0)
            model.release.set()  # the request in flight settles, then the run stops
            _, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 130, err[-3000:]
    assert "stopping: waiting for requests in flight to settle" in err
    assert "Traceback" not in err
    summary = json.loads((out / "run.json").read_text())
    assert summary["stop"]["reason"] == "interrupted"
    (run_dir,) = (out / "runs").iterdir()
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        assert all(
            r.state not in (State.RESERVED, State.DISPATCHED) for r in ledger.receipts()
        )  # none left open


def test_budget_exhaustion_stops_cleanly_with_nothing_half_written(
    venv_bin: Path, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["b1", "b2"]))
    out = tmp_path / "out"
    with ScriptedOpenAIServer(KnapsackModel().script) as server:
        # room for a few worst-case reservations (~$0.035 each), not for four at once
        done = emit(venv_bin, tmp_path, *_flags(server, seeds, out, budget="0.1"))
        sent = len(server.chat_requests())
    assert done.returncode == 1, done.stderr[-3000:]
    assert "budget exhausted" in done.stderr and "--raise-budget" in done.stderr
    assert "Traceback" not in done.stderr
    summary = json.loads((out / "run.json").read_text())
    assert summary["stop"]["reason"] == "budget_exhausted"
    assert summary["totals"]["accepted"] == 0 and summary["skipped"] == []
    (run_dir,) = (out / "runs").iterdir()
    assert list((run_dir / "seeds").glob("*.json")) == []  # cut short, so a resume continues it
    assert not (out / "tasks").exists() or list((out / "tasks").iterdir()) == []
    assert [p for p in out.rglob("*") if ".partial-" in p.name or p.name.endswith(".tmp")] == []
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        totals = ledger.totals()
        states = {r.state for r in ledger.receipts()}
    assert totals.open_micro == 0 and totals.spent_micro <= totals.limit_micro
    assert states == {State.ANSWERED} and sent == len(ledger_receipts(run_dir))
    assert (out / "report.md").is_file()


def ledger_receipts(run_dir: Path) -> list:
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        return ledger.receipts()
