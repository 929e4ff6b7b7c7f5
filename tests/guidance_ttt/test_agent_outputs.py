"""The agent's outputs are rebuilt from the run's durable state and agree with the committed archive."""

from __future__ import annotations

import json

import pytest
from harbor.models.agent.context import AgentContext
from packers import CountingGuidance, PackerExecutor
from run_driver import run
from test_faults_kill_and_resume import Driver

from atoll.guidance_ttt.agent import agent_config
from atoll.guidance_ttt.contract import load_task
from atoll.guidance_ttt.harbor.trial_outputs import PLOT_FILE, RUN_FILE, STEPS_FILE, write_outputs
from atoll.guidance_ttt.state.run_dir import COMMITTED_FILE, run_dir
from atoll.judge.plugin import task_dir

pytest_plugins = ["support.fixtures"]


@pytest.mark.slow
def test_step_lines_plot_and_context_follow_the_committed_run(
    tmp_path, monkeypatch, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    reset_reef_upstream.script = CountingGuidance(malformed_every=3)
    scripted_llm.script = PackerExecutor()
    driver = Driver(tmp_path, reef_server, scripted_llm.base_url, judge_url)
    environ = {"REEF_TOKEN": reef_server.token}
    args = json.loads(json.dumps(driver.args))
    args["settings"].update(groups=2, steps=2)
    run(args, environ)

    logs = tmp_path / "logs"
    logs.mkdir()
    context = AgentContext()
    config = agent_config(args["settings"])
    report = write_outputs(config, load_task(task_dir("polyomino_packing")), logs, context)

    committed = json.loads((run_dir(driver.state_dir) / COMMITTED_FILE).read_text())["archive"]
    best = next(n for n in committed["nodes"] if n["id"] == committed["best_id"])
    # The archive replayed from the journals ends where the committed one is.
    assert report.rows[-1].archive_nodes == len(committed["nodes"])
    assert report.rows[-1].archive_best == best["raw_score"]
    lines = [json.loads(x) for x in (logs / STEPS_FILE).read_text().splitlines()]
    assert [x["step"] for x in lines] == [0, 1]
    assert all(x["training_mode"] == "search-only" for x in lines)
    rejected = sum(len(x["rejected_receipts"]) for x in lines)
    accepted = sum(len(x["well_formed_receipts"]) for x in lines)
    assert rejected == sum(x["sampled"] - x["well_formed_guidance"] for x in lines) == 2
    assert accepted == 6
    assert lines[0]["guidance_completion_tokens"] + lines[1]["guidance_completion_tokens"] == (
        17 * accepted + 11 * rejected
    )
    assert sum(x["executor_completion_tokens"] for x in lines) == 300 * accepted
    assert (logs / PLOT_FILE).read_bytes()[:4] == b"\x89PNG"
    summary = json.loads((logs / RUN_FILE).read_text())
    assert summary["training"] == "search-only" and summary["best_raw_score"] == best["raw_score"]
    seed = next(n for n in committed["nodes"] if n["id"] == 0)  # the first of the seed's roots
    assert seed["parent"] is None and summary["seed_raw_score"] == seed["raw_score"]
    assert context.metadata is not None and context.metadata["seed_raw_score"] == seed["raw_score"]
    assert context.metadata is not None and len(context.metadata["reef_receipts"]) == accepted
    assert context.n_output_tokens == 17 * accepted + 11 * rejected + 300 * accepted
