"""`atoll emit frontiersmith --search-steps N`: synthesis, then a search on the fresh bundle.

One scripted campaign (one seed, the knapsack task) is emitted with the real
Harbor trials; then, in the same command, a search-only Guidance-TTT run of
two steps searches the bundle it just exported: guidance through the real
Reef server, the executor through the run's own ledger to the same scripted
model, every candidate (the seed included) graded by the bundle's checker.
The scripted executor answers with the exhaustive program, better than the
bundle's baseline (the search's seed), which must become the best node.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.frontiersmith_cli import emit_env
from support.frontiersmith_model import EXACT, KNAPSACK, KnapsackModel, seed_lines
from support.guidance_run import GuidanceScript
from support.openai_server import Reply, ScriptedOpenAIServer

from atoll.core.ledger import Ledger
from atoll.frontiersmith.bundle import read_bundle
from atoll.frontiersmith.command import (
    EXIT_OK,
    EXIT_PROVIDER,
    EXIT_SEARCH,
    EXIT_USAGE,
    Flags,
    _search_exit_code,
    run_command,
)
from atoll.frontiersmith.runs import RunDir
from atoll.guidance_ttt.contract import Language, load_task
from atoll.guidance_ttt.state.durable_archive import Library
from atoll.guidance_ttt.state.run_dir import run_dir, step_journal_path
from atoll.guidance_ttt.state.step_journal import read_step

pytest_plugins = ["support.fixtures"]


EXECUTOR_REQUESTS: list[dict[str, Any]] = []


def _executor(request: dict[str, Any]) -> Reply:
    """The executor's answer (a request without a response schema): the exhaustive program."""
    EXECUTOR_REQUESTS.append(request)
    return Reply(
        content=f"<solution>\n```python\n{EXACT}```\n</solution>\n"
        "<summary>Tries every subset and keeps the most valuable that fits.</summary>"
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_search_steps_search_the_emitted_task_from_its_baseline(
    venv_bin: Path, tmp_path: Path, reef_server, reset_reef_upstream
) -> None:
    reset_reef_upstream.script = GuidanceScript()
    EXECUTOR_REQUESTS.clear()
    model = KnapsackModel()
    model.script.answers[""] = _executor
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["s1"]))
    out = tmp_path / "out"
    flags = "--target 1 --budget 5 --model scripted --price-in 1 --price-out 2"
    flags += " --environment atoll-local --search-steps 2 --search-groups 1 --search-rollouts 2"
    with ScriptedOpenAIServer(model.script) as server:
        argv = [str(venv_bin / "atoll"), "emit", "frontiersmith", *flags.split()]
        argv += ["--seeds", str(seeds), "--base-url", server.base_url, "--out", str(out)]
        env = emit_env(tmp_path) | {"REEF_URL": reef_server.url, "REEF_TOKEN": reef_server.token}
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=840, cwd=tmp_path, env=env
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
        summary = json.loads((out / "run.json").read_text())
        (accepted,) = summary["accepted"]
        task = accepted["task"]
        executor_requests = len(EXECUTOR_REQUESTS)
        # `--resume RUN_ID --search-steps 2`: the finished search hands its best back, unpaid.
        resume = [str(venv_bin / "atoll"), "emit", "frontiersmith", "--resume", summary["run_id"]]
        resume += ["--out", str(out), "--search-steps", "2", "--search-groups", "1"]
        resume += ["--search-rollouts", "2"]
        again = subprocess.run(
            resume, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env
        )
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-5000:]
        assert f"search: {task['name']}: best" in again.stdout + again.stderr
        assert len(EXECUTOR_REQUESTS) == executor_requests
        trial = _atoll_run(venv_bin, tmp_path, out / task["path"], server.base_url, reef_server)

    # `atoll run --agent guidance-ttt -p OUT/tasks/TASK`: the bundle's verifier gives the reward.
    assert trial["verifier_result"]["rewards"]["reward"] == task["reference_reward"]
    assert trial["agent_result"]["metadata"]["best_raw_score"] == task["reference_reward"]

    # The bundle carries its search contract and baseline, and its hash covers both.
    bundle = read_bundle(out / task["path"])
    assert bundle.bundle_hash == task["bundle_hash"]
    assert bundle.spec.baseline == KNAPSACK.baseline
    contract = load_task(bundle.path).contract
    assert (contract.scorer, contract.solution_language) == ("checker", Language.PYTHON)
    assert KNAPSACK.objective in contract.objective

    # The search: two steps of 1x2 from the baseline; the better program is the best node.
    search = summary["search"]["tasks"][task["name"]]
    assert search["status"] == "searched", search
    assert (search["steps_done"], search["rollouts"]) == (2, 4)
    assert search["best_raw_score"] == task["reference_reward"] > task["baseline_reward"]
    assert search["best_is_seed"] is False
    report = (out / "report.md").read_text()
    assert "## Search (Guidance-TTT, search-only)" in report and "+0.0000" in report
    state = Path(search["state_dir"])
    library = Library.open(state)
    try:
        seed = library.archive.node(0)
        assert seed.entry.program == KNAPSACK.baseline
        assert seed.raw_score == task["baseline_reward"]
    finally:
        library.close()
    receipts = []
    for step in range(2):
        journal = read_step(step_journal_path(run_dir(state), step), step)
        receipts += [d.rollout.verification.receipt for d in journal.finished.values()]
    assert len(receipts) == 4
    assert all(
        r["scorer"] == "checker" and r["bundle_hash"] == task["bundle_hash"] for r in receipts
    )

    # The executor was asked for one complete Python program, per the bundle's contract.
    system, user = (EXECUTOR_REQUESTS[0]["messages"][i]["content"] for i in (0, -1))
    assert "Python program" in system and "C++" not in system
    assert "```python\n" in user and contract.solution_contract in user
    assert KNAPSACK.baseline.strip() in user  # the parent: the bundle's baseline, in full

    # The executor's requests were paid through the run's ledger, under the search's label.
    ledger = Ledger.open(out / "runs" / summary["run_id"] / "ledger.sqlite")
    try:
        paid = [r for r in ledger.receipts() if r.label == f"search:{task['name']}"]
    finally:
        ledger.close()
    assert len(paid) == 4


def _atoll_run(
    venv_bin: Path, home: Path, bundle: Path, executor_url: str, reef_server: Any
) -> dict[str, Any]:
    """One search-only step (one rollout) on the bundle through Harbor; the trial's result."""
    settings = {
        "groups": 1,
        "rollouts": 1,
        "steps": 1,
        "training": "off",
        "executor": "openai",
        "executor_base_url": executor_url,
        "executor_model": "scripted",
        "state_dir": str(home / "run-state"),
    }
    jobs = home / "jobs"
    argv = [str(venv_bin / "atoll"), "run", "-y", "-p", str(bundle), "--agent", "guidance-ttt"]
    argv += ["--env", "atoll-local", "-o", str(jobs)]
    argv += [word for key, value in settings.items() for word in ("--ak", f"{key}={value}")]
    (home / "roots").mkdir()
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=400,
        cwd=home,
        env={
            "PATH": f"{venv_bin}:/usr/bin:/bin",
            "HOME": str(home),
            "TERM": "dumb",
            "ATOLL_LOCAL_ROOT": str(home / "roots"),
            "REEF_URL": reef_server.url,
            "REEF_TOKEN": reef_server.token,
            "OPENAI_API_KEY": "test-key-not-secret",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        },
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "--plugin frontiercs-judge" not in done.stderr  # a checker task starts no judge
    (result_file,) = jobs.glob("*/*/result.json")
    result: dict[str, Any] = json.loads(result_file.read_text())
    assert result["exception_info"] is None, result["exception_info"]
    return result


def test_search_steps_without_a_reef_is_one_line_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("REEF_URL", raising=False)
    flags = Flags(
        seeds="textbook", target=1, budget="1", model="m", out=tmp_path / "out", search_steps=2
    )
    assert run_command(flags) == EXIT_USAGE
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--search-steps samples guidance through Reef: set REEF_URL" in line
    assert not (tmp_path / "out").exists()
    monkeypatch.setenv("REEF_URL", "http://127.0.0.1:9")
    assert run_command(Flags(**{**flags.__dict__, "search_steps": 0})) == EXIT_USAGE
    assert "--search-steps must be at least 1, not 0" in capsys.readouterr().err


def _searches(**statuses: str) -> dict[str, Any]:
    tasks = {
        name: {
            "status": status,
            **({"detail": "ConnectError: Reef is down"} if status == "error" else {}),
        }
        for name, status in statuses.items()
    }
    return {"settings": {"steps": 2, "groups": 1, "rollouts": 1}, "tasks": tasks}


def test_a_failed_search_exits_5_in_one_line_and_searched_or_no_search_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rich.console import Console

    run = RunDir(tmp_path / "out", "r1")
    console = Console(stderr=True, soft_wrap=True)
    assert _search_exit_code(console, None, run) == EXIT_OK
    assert _search_exit_code(console, _searches(a="searched", b="searched"), run) == EXIT_OK
    assert _search_exit_code(console, _searches(), run) == EXIT_OK
    assert capsys.readouterr().err == ""
    assert _search_exit_code(console, _searches(a="searched", b="error"), run) == EXIT_SEARCH
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "the search failed on 1 task(s) (b;" in line
    assert "--resume r1" in line and "--search-steps 2" in line


@pytest.mark.slow
def test_a_run_that_stops_before_export_says_its_search_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = KnapsackModel()
    model.script.answers["mutate"] = Reply(status=401, error_message="invalid api key")
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(seed_lines(["s1"]))
    for name, value in emit_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REEF_URL", "http://127.0.0.1:9")  # never reached: nothing is searched
    with ScriptedOpenAIServer(model.script) as server:
        flags = Flags(
            seeds=str(seeds),
            target=1,
            budget="5",
            model="scripted",
            base_url=server.base_url,
            price_in="1",
            price_out="2",
            environment="atoll-local",
            out=tmp_path / "out",
            search_steps=2,
        )
        assert run_command(flags) == EXIT_PROVIDER
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert "search: skipped (the run stopped: provider_refused)" in output
    summary = json.loads((tmp_path / "out" / "run.json").read_text())
    assert "search" not in summary


def test_a_resumed_search_asks_for_the_executor_port_it_started_with(tmp_path: Path) -> None:
    from atoll.frontiersmith.search import saved_port
    from atoll.guidance_ttt.config import load_config
    from atoll.guidance_ttt.state import resume

    state = tmp_path / "s1"
    assert saved_port(state) == 0  # a new search takes any port
    for url, port in (("http://127.0.0.1:43117/v1", 43117), ("https://api.example.org/v1", 0)):
        config = load_config(
            overrides={"training": "off", "state_dir": str(state), "executor_base_url": url}
        )
        saved = resume.ResumeState("r1", "guidance-ttt-r1", "search-only", config.identity(), 1)
        resume.resume_path(state).parent.mkdir(parents=True, exist_ok=True)
        resume.save(state, saved)
        assert saved_port(state) == port
    resume.resume_path(state).write_text("{not json")
    assert saved_port(state) == 0  # the search itself then says what is wrong with its state
