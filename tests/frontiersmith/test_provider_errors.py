"""Provider refusals: one refused request is an error for its seed (at zero cost), a refused key stops the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.frontiersmith_cli import emit
from support.frontiersmith_model import FILTER_REJECTS, KnapsackModel, seed_lines, seed_of
from support.openai_server import Reply, ScriptedOpenAIServer

from atoll.core.ledger import Ledger, State


def _run(venv_bin: Path, tmp_path: Path, model: KnapsackModel, seeds: list[str]):
    seed_file = tmp_path / "seeds.jsonl"
    seed_file.write_text(seed_lines(seeds))
    out = tmp_path / "out"
    with ScriptedOpenAIServer(model.script) as server:
        done = emit(
            venv_bin, tmp_path,
            "--seeds", str(seed_file), "--target", "2", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2", "--out", str(out),
        )  # fmt: skip
    (run_dir,) = (out / "runs").iterdir()
    return done, json.loads((out / "run.json").read_text()), run_dir


@pytest.mark.slow
def test_a_refused_request_is_an_error_for_its_seed_at_zero_cost(venv_bin, tmp_path) -> None:
    model = KnapsackModel({"p2": FILTER_REJECTS})
    good_mutate = model.script.answers["mutate"]
    model.script.answers["mutate"] = lambda request: (
        Reply(status=422, error_message="schema not supported")
        if seed_of(request) == "p1"
        else good_mutate(request)
    )
    done, summary, run_dir = _run(venv_bin, tmp_path, model, ["p1", "p2"])
    assert done.returncode == 0, done.stderr[-3000:]
    skipped = {s["seed_id"]: (s["status"], s["reason"]) for s in summary["skipped"]}
    assert skipped == {
        "p1": ("error", "provider_rejected"),
        "p2": ("rejected", "formulation_rejected"),
    }
    assert summary["errors"] == {"provider_rejected": 1}
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        (refused,) = [r for r in ledger.receipts() if r.state is State.REJECTED]
    assert refused.http_status == 422 and refused.cost_micro == 0 and refused.label == "mutate:p1"


@pytest.mark.slow
def test_a_refused_key_stops_the_run(venv_bin, tmp_path) -> None:
    model = KnapsackModel()
    model.script.answers["mutate"] = Reply(status=401, error_message="invalid api key")
    done, summary, run_dir = _run(venv_bin, tmp_path, model, ["p1", "p2", "p3"])
    assert done.returncode == 4
    assert "HTTP 401" in done.stderr and "fix the key" in done.stderr
    assert summary["stop"]["reason"] == "provider_refused"
    assert list((run_dir / "seeds").glob("*.json")) == []  # nothing journaled: a resume retries
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        assert len(ledger.receipts()) == 1  # the first refusal stopped every other request
