"""A whole Guidance-TTT run as one Harbor trial: `atoll run --agent guidance-ttt` on atoll-local.

Everything is real except the two language models: the real Reef server in
front of a scripted guidance model, a scripted executor that writes real C++
packers, the real embedded judge (two test cases), Harbor 0.20 driving the
trial in the bubblewrap environment, and the task's own verifier re-scoring
what the agent left in the workspace.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from harbor.models.trajectories.trajectory import Trajectory
from harbor.viewer.server import create_app
from packers import MALFORMED, CountingGuidance, PackerExecutor, prompt_of

from atoll.guidance_ttt.state.run_dir import COMMITTED_FILE, run_dir, step_journal_path
from atoll.guidance_ttt.state.step_journal import read_step

pytest_plugins = ["support.fixtures"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def atoll_run(
    venv_bin: Path, work: Path, *, reef_server, executor_url: str, judge_url: str, ak: dict
) -> subprocess.CompletedProcess[str]:
    argv, env = atoll_command(venv_bin, work, reef_server=reef_server, judge_url=judge_url, ak=ak)
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=400, cwd=work, env=env, check=False
    )


def atoll_command(
    venv_bin: Path, work: Path, *, reef_server, judge_url: str, ak: dict
) -> tuple[list[str], dict[str, str]]:
    """The `atoll run` command line and environment of one trial whose files go under `work`."""
    jobs = work / "jobs"
    roots = work / "roots"
    jobs.mkdir(exist_ok=True)
    roots.mkdir(exist_ok=True)
    argv = [
        str(venv_bin / "atoll"),
        "run",
        "-y",
        "--task",
        "polyomino_packing",
        "--agent",
        "guidance-ttt",
        "--env",
        "atoll-local",
        "-o",
        str(jobs),
    ]
    for key, value in ak.items():
        argv += ["--ak", f"{key}={value}"]
    env = {
        "PATH": f"{venv_bin}:/usr/bin:/bin",
        "HOME": str(work),
        "TERM": "dumb",
        "ATOLL_LOCAL_ROOT": str(roots),
        "REEF_URL": reef_server.url,
        "REEF_TOKEN": reef_server.token,
        "FRONTIERCS_JUDGE_URL": judge_url,
        "OPENAI_API_KEY": "test-key-not-secret",
        # Harbor's LiteLLM would otherwise try to fetch its price list from the internet.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    if "CI" in os.environ:
        env["CI"] = os.environ["CI"]
    return argv, env


def trial_dir(work: Path) -> Path:
    (result,) = (work / "jobs").glob("*/*/result.json")
    return result.parent


def test_a_search_only_run_as_a_harbor_trial(
    tmp_path, venv_bin, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = CountingGuidance(malformed_every=5)
    scripted_llm.script = PackerExecutor()
    guidance_before = len(reset_reef_upstream.chat_requests())
    state_dir = tmp_path / "state"
    settings = {
        "groups": 2,
        "rollouts": 2,
        "steps": 3,
        "training": "off",
        "executor": "openai",
        "executor_base_url": scripted_llm.base_url,
        "executor_model": "scripted-executor",
        "guidance_model": "scripted",
        "state_dir": state_dir,
    }
    done = atoll_run(
        venv_bin,
        tmp_path,
        reef_server=reef_server,
        executor_url=scripted_llm.base_url,
        judge_url=judge_url,
        ak=settings,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    trial = trial_dir(tmp_path)
    result = json.loads((trial / "result.json").read_text())
    assert result["exception_info"] is None, result["exception_info"]

    # --- Reef: one inference per rollout, each report against its own receipt ---------------
    directory = run_dir(state_dir)
    journals = [read_step(step_journal_path(directory, s), s) for s in range(3)]
    finished = [j.finished[slot] for j in journals for slot in j.finish_order]
    assert len(finished) == 12
    assert len(reset_reef_upstream.chat_requests()) - guidance_before == 12
    scenario = json.loads((directory / "resume-state.json").read_text())["scenario"]
    assert scenario == f"guidance-ttt-{_run_id(state_dir)}"
    inference_ids = {r["agent_record_id"] for r in reef_server.records(scenario, "inference")}
    reports = {r["agent_record_id"]: r for r in reef_server.records(scenario, "report")}
    for done_rollout in finished:
        report = reports[done_rollout.report["agent_record_id"]]
        assert report["references"] == [done_rollout.receipt]
        assert done_rollout.receipt in inference_ids
        stored = reef_server.record(scenario, report["agent_record_id"])["payload"]
        assert stored["metadata"]["step"] == done_rollout.rollout.step
        assert stored["metadata"]["group"] == done_rollout.rollout.group
        assert stored["metadata"]["rollout"] == done_rollout.rollout.rollout
    run_reports = [r for r in reports if r.startswith(f"guidance-ttt-{_run_id(state_dir)}-")]
    assert len(run_reports) == 12  # no duplicate, no missing report

    # --- malformed guidance never reaches the executor ---------------------------------------
    well_formed = [d for d in finished if d.rollout.guidance is not None]
    rejected = [d for d in finished if d.rollout.guidance is None]
    assert len(rejected) >= 2 and all(
        d.rollout.verification.status.value == "guidance_rejected" for d in rejected
    )
    executor_prompts = [prompt_of(r.body) for r in scripted_llm.chat_requests()]
    assert len(executor_prompts) == len(well_formed)
    assert not any(MALFORMED in p for p in executor_prompts)

    # --- the archive: visits and T count every rollout; best never decreases ---------------
    committed = json.loads((directory / COMMITTED_FILE).read_text())["archive"]
    assert committed["step"] == 3 and committed["total_rollouts"] == 12
    roots = [n for n in committed["nodes"] if n["parent"] is None]
    assert len(roots) == 2 and sum(n["n"] for n in roots) == 12
    best = next(n for n in committed["nodes"] if n["id"] == committed["best_id"])

    agent_logs = trial / "agent"
    lines = [json.loads(x) for x in (agent_logs / "steps.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [0, 1, 2]
    assert all(
        x["training"] == "search-only" and x["training_mode"] == "search-only" for x in lines
    )
    bests = [x["archive_best_raw_score"] for x in lines]
    assert bests == sorted(bests) and bests[-1] == best["raw_score"]
    assert sum(x["sampled"] for x in lines) == 12
    assert sum(x["well_formed_guidance"] for x in lines) == len(well_formed)
    assert (agent_logs / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    run_summary = json.loads((agent_logs / "run.json").read_text())
    assert run_summary["training"] == "search-only"
    assert "test-key" not in (agent_logs / "run.json").read_text()

    _check_trajectory(tmp_path / "jobs", trial, finished, result["agent_result"])

    metadata = result["agent_result"]["metadata"]
    assert metadata["training"] == "search-only" and metadata["steps"] == 3
    assert sorted(metadata["reef_receipts"]) == sorted(d.receipt for d in well_formed)
    assert metadata["best_raw_score"] == best["raw_score"]
    assert result["agent_result"]["n_output_tokens"] == 17 * len(well_formed) + 11 * len(
        rejected
    ) + 300 * len(well_formed)

    # --- the verifier re-scored exactly the best program ------------------------------------
    verdict = json.loads((trial / "verifier" / "judge-result.json").read_text())
    program = best["entry"]["program"]
    assert verdict["solution_sha256"] == hashlib.sha256(program.encode()).hexdigest()
    reward = json.loads((trial / "verifier" / "reward.json").read_text())
    assert reward["raw_score"] == pytest.approx(best["raw_score"])
    assert result["verifier_result"]["rewards"]["reward"] == pytest.approx(reward["reward"])
    assert best["raw_score"] > roots[0]["raw_score"]  # the search beat the seed

    # --- the same state directory with another G: the trial fails with one line, samples nothing
    before = len(reset_reef_upstream.chat_requests())
    again = tmp_path / "again"
    again.mkdir()
    refused = atoll_run(
        venv_bin,
        again,
        reef_server=reef_server,
        executor_url=scripted_llm.base_url,
        judge_url=judge_url,
        ak={**settings, "groups": 3, "steps": 4},
    )
    assert refused.returncode == 1, refused.stderr[-3000:]
    assert f"failed: {trial_dir(again).name} (IdentityChanged)" in refused.stderr
    failed = json.loads((trial_dir(again) / "result.json").read_text())["exception_info"]
    assert failed["exception_type"] == "IdentityChanged"
    assert failed["exception_message"] == (
        f"cannot resume: groups changed from 2 to 3 in state dir {state_dir}; "
        "start a new state directory or restore the old settings"
    )
    assert len(reset_reef_upstream.chat_requests()) == before

    # --- the same command again (a new job, as after a lost jobs directory): its 3 steps are
    # done, so the trial hands in the committed best again, with no model call, and is scored
    executed = len(scripted_llm.chat_requests())
    done_already = tmp_path / "done-already"
    done_already.mkdir()
    repeated = atoll_run(
        venv_bin,
        done_already,
        reef_server=reef_server,
        executor_url=scripted_llm.base_url,
        judge_url=judge_url,
        ak=settings,
    )
    assert repeated.returncode == 0, repeated.stdout[-3000:] + repeated.stderr[-3000:]
    assert len(reset_reef_upstream.chat_requests()) == before
    assert len(scripted_llm.chat_requests()) == executed
    rerun = trial_dir(done_already)
    rerun_result = json.loads((rerun / "result.json").read_text())
    assert rerun_result["exception_info"] is None, rerun_result["exception_info"]
    rerun_reward = json.loads((rerun / "verifier" / "reward.json").read_text())
    assert rerun_reward["raw_score"] == pytest.approx(best["raw_score"])
    assert rerun_result["verifier_result"]["rewards"]["reward"] == pytest.approx(reward["reward"])
    assert rerun_result["agent_result"]["metadata"]["steps"] == 3
    log = (rerun / "agent" / "guidance-ttt.log").read_text()
    assert "has already completed its 3 steps; handing in its committed best" in log


def _check_trajectory(jobs: Path, trial: Path, finished: list, agent_result: dict) -> None:
    """`harbor view`: the viewer's reader serves the trial's ATIF trajectory, one step per
    guidance and executor call, each with its rollout's receipt, coordinates, verdict and parse."""
    text = (trial / "agent" / "trajectory.json").read_text()
    trajectory = Trajectory.model_validate_json(text)  # Harbor's own model accepts it
    with TestClient(create_app(jobs)) as viewer:
        served = viewer.get(f"/api/jobs/{trial.parent.name}/trials/{trial.name}/trajectory")
    assert served.status_code == 200 and served.json() == json.loads(text)
    assert trajectory.agent.name == "guidance-ttt" and trajectory.steps[0].source == "user"
    by_slot = {(d.rollout.step, d.rollout.group, d.rollout.rollout): d for d in finished}
    calls = [s for s in trajectory.steps if s.source == "agent"]
    seen = []
    for call in calls:
        extra = call.extra or {}
        done = by_slot[(extra["step"], extra["group"], extra["rollout"])]
        verification = done.rollout.verification
        assert extra["receipt"] == done.receipt and extra["committed"] is True
        assert (extra["status"], extra["raw_score"], extra["reward"]) == (
            verification.status.value,
            verification.raw_score,
            verification.reward,
        )
        assert call.metrics is not None
        if extra["call"] == "guidance":
            well_formed = done.rollout.guidance is not None
            assert extra["parse"] == ("ok" if well_formed else "rejected")
            assert call.metrics.completion_tokens == (17 if well_formed else 11)
        else:
            assert extra["parse"] == "program" and call.model_name == "scripted-executor"
            assert done.rollout.program is not None and done.rollout.program in call.message
            assert call.metrics.completion_tokens == 300
        seen.append((extra["call"], extra["step"], extra["group"], extra["rollout"]))
    expected = []
    for slot, done in sorted(by_slot.items()):
        expected.append(("guidance", *slot))
        if done.rollout.guidance is not None:
            expected.append(("executor", *slot))
    assert seen == expected
    assert trajectory.final_metrics is not None
    assert trajectory.final_metrics.total_completion_tokens == agent_result["n_output_tokens"]
    assert "test-key-not-secret" not in text


def _run_id(state_dir: Path) -> str:
    return json.loads((run_dir(state_dir) / "resume-state.json").read_text())["run_id"]
