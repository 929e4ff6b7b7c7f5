"""Rollouts with a real coding agent: real Pi (`pi-docker`) in a Harbor trial of an accepted task.

One campaign, two seeds, both accepted, each rolled out with Pi against the
same scripted loopback model that wrote them. On p1 Pi writes the exhaustive
program to /workspace/solution.py and the trial's verifier scores it; on p2
the provider answers Pi with HTTP 500: the rollout is recorded as failed,
with why, and the task is exported all the same. Pi's requests go through
the run's ledger (reserved, settled, the lost one left uncertain). Every
task is accepted, yet the run exits 3: the lost rollout request's
reservation is held until `reconcile`, and the exit line says it is a
rollout's request (not a skipped seed). Reconcile says nothing will be sent
again, and the resume sends nothing. A rollout whose model stalls past
`--rollout-timeout` is recorded as failed with the timeout as the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.frontiersmith_cli import emit
from support.frontiersmith_model import EXACT, KnapsackModel, seed_lines, seed_of
from support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

from atoll.core.ledger import Ledger, State
from atoll.frontiersmith.bundle import read_bundle

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def pi_turn(request: dict) -> Reply:
    """Pi's model: write the program, then stop; on seed p2 the provider fails."""
    if seed_of(request) == "p2":
        return Reply(status=500, error_message="scripted provider failure")
    done = sum(1 for m in request.get("messages") or [] if m.get("role") == "assistant")
    if done == 0:
        write = ToolCall("write", {"path": "/workspace/solution.py", "content": EXACT})
        return Reply(tool_calls=(write,), completion_tokens=12)
    return Reply(content="solution.py is written.", completion_tokens=6)


def test_pi_rolls_out_accepted_tasks_and_a_failing_provider_keeps_the_task(
    venv_bin: Path, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["p1", "p2"]))
    out = tmp_path / "out"
    model = KnapsackModel()
    pi_requests: list[dict] = []

    def answer(request: dict) -> Reply:
        if "response_format" in request:  # a FrontierSmith stage
            return model.script(request)
        pi_requests.append(request)
        return pi_turn(request)

    with ScriptedOpenAIServer(answer) as server:
        done = emit(
            venv_bin, tmp_path,
            "--seeds", str(seeds), "--target", "2", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "atoll-local", "--rollout-tasks", "2",
            "--rollout-agent", "pi-docker", "--rollout-timeout", "300", "--out", str(out),
        )  # fmt: skip
        # the 500 answered a rollout request after it was sent: uncertain (exit 3), never re-sent
        assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-5000:]
        said = " ".join(done.stderr.split())
        assert "1 rollout request(s) uncertain" in said and "seeds were skipped" not in said
        assert "the task stays accepted and exported" in said
        assert "reconcile" in said and "nothing will be sent again" in said
        (run_id,) = [p.name for p in (out / "runs").iterdir()]
        settled = emit(venv_bin, tmp_path, "reconcile", run_id)
        assert settled.returncode == 0, settled.stderr
        said = " ".join((settled.stdout + settled.stderr).split())
        assert "the resume will send 0 of them again" in said and "paid twice" not in said
        assert "1 belonged to rollouts of accepted tasks" in said
        sent = len(server.chat_requests())
        resumed = emit(venv_bin, tmp_path, "--resume", run_id)
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-4000:]
        assert len(server.chat_requests()) == sent  # the resume sent nothing
    summary = json.loads((out / "run.json").read_text())
    by_seed = {a["seed_id"]: a for a in summary["accepted"]}
    assert sorted(by_seed) == ["p1", "p2"]  # the failed rollout dropped nothing
    for accepted in by_seed.values():
        read_bundle(out / accepted["task"]["path"])  # exported, intact

    solved = by_seed["p1"]["rollout"]
    assert (solved["status"], solved["agent"], solved["model"]) == (
        "scored",
        "pi-docker",
        "scripted",
    )
    trials = by_seed["p1"]["evidence"]["execution"]["trials"]
    exact = next(t for t in trials.values() if t["label"] == "sample-2")
    assert solved["reward"] == exact["reward"] and solved["scores"] == exact["scores"]
    assert any(r.get("tools") for r in pi_requests)  # Pi's own requests, with its tools
    # ... each through the run's ledger: reserved, sent without streaming, settled
    assert not any(r.get("stream") for r in pi_requests)
    (run_dir,) = (out / "runs").iterdir()
    with Ledger.open(run_dir / "ledger.sqlite") as ledger:
        receipts = ledger.receipts()
    rolled = [r for r in receipts if r.label == "rollout:p1"]
    assert [r.state for r in rolled] == [State.ANSWERED, State.ANSWERED]
    assert solved["requests"] == 2
    assert solved["cost_usd"] == sum(r.cost_micro for r in rolled) / 1e6 > 0
    assert [r.state for r in receipts if r.label == "rollout:p2"] == [State.RECONCILED]
    assert summary["totals"]["token_cost_usd"] == sum(r.cost_micro or 0 for r in receipts) / 1e6
    assert summary["totals"]["reconciled_rollout_requests"] == 1

    failed = by_seed["p2"]["rollout"]
    assert failed["status"] == "failed" and failed["agent"] == "pi-docker"
    assert "HTTP 500: scripted provider failure" in failed["detail"]
    report = (out / "report.md").read_text()
    assert f"{solved['reward']:.4f}" in report and "failed" in report
    assert "of which 1 in rollouts" in report


def test_a_rollout_that_hits_its_timeout_is_recorded_failed_with_the_timeout(
    venv_bin: Path, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["t1"]))
    out = tmp_path / "out"
    model = KnapsackModel()
    stalled: list[dict] = []

    def answer(request: dict) -> Reply:
        if "response_format" in request:  # a FrontierSmith stage
            return model.script(request)
        stalled.append(request)
        # Past the rollout's 8 s whenever Pi asks; the server's exit waits for this reply.
        return Reply(content="still thinking", delay_s=12)

    with ScriptedOpenAIServer(answer) as server:
        done = emit(
            venv_bin, tmp_path,
            "--seeds", str(seeds), "--target", "1", "--budget", "5", "--model", "scripted",
            "--base-url", server.base_url, "--price-in", "1", "--price-out", "2",
            "--environment", "atoll-local", "--rollout-tasks", "1",
            "--rollout-agent", "pi-docker", "--rollout-timeout", "8", "--out", str(out),
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert stalled  # Pi did ask the model, which stalled
    summary = json.loads((out / "run.json").read_text())
    (accepted,) = summary["accepted"]  # the timeout dropped nothing
    read_bundle(out / accepted["task"]["path"])
    rollout = accepted["rollout"]
    assert rollout["status"] == "failed" and "reward" not in rollout
    assert "AgentTimeoutError" in rollout["detail"] and "8" in rollout["detail"]
