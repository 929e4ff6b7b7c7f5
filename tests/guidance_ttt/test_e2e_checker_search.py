"""A search-only run on the emitted task `frontiersmith-example`: every candidate graded by its checker.

The run starts the way the Harbor agent starts it (`wiring.run_search` on the
task directory): the guidance model answers through the real Reef server, the
executor is a scripted OpenAI-compatible server, and every program, the seed
included, is graded by the task's own bundled grader run in atoll's sandbox
(the `checker` scorer the task's contract names).
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.guidance_run import GuidanceScript
from support.openai_server import NumberedScript, Reply

from atoll.checker import grade_task
from atoll.core.scoring import ScorerNotInstalled
from atoll.guidance_ttt.agent import agent_config
from atoll.guidance_ttt.config import IdentityChanged
from atoll.guidance_ttt.contract import Language, load_task
from atoll.guidance_ttt.search.scored_program import Status
from atoll.guidance_ttt.services.wiring import run_search
from atoll.guidance_ttt.state.durable_archive import Library
from atoll.guidance_ttt.state.run_dir import run_dir, step_journal_path
from atoll.guidance_ttt.state.step_journal import read_step

pytest_plugins = ["support.fixtures"]

CRASHES = "import sys\nsys.exit(3)\n"


class BetterProgram(NumberedScript):
    """The first executor answer is the task's reference program (better than the baseline);
    the second crashes on every instance; later ones are the baseline again (a duplicate)."""

    def __init__(self, reference: str, baseline: str) -> None:
        super().__init__()
        self.reference = reference
        self.baseline = baseline
        self.first: dict[str, Any] | None = None  # the first executor request, as sent

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        if number == 1:
            self.first = request
        program = {1: self.reference, 2: CRASHES}.get(number, self.baseline)
        return Reply(
            content=f"<solution>\n```python\n{program}```\n</solution>\n"
            f"<summary>Candidate {number}.</summary>"
        )


@pytest.fixture
def example_dir(repo: Path) -> Path:
    return repo / "tasks" / "frontiersmith-example"


@pytest.fixture
def emitted_task(example_dir: Path, tmp_path: Path) -> Path:
    """A copy of the example as it ships (its baseline and search contract included)."""
    task = tmp_path / "frontiersmith-example"
    shutil.copytree(example_dir, task)
    return task


def _programs(task: Path) -> tuple[str, str]:
    """The bundle's reference program and its baseline."""
    solution = task / "solution"
    return (
        (solution / "solution.py").read_text(encoding="utf-8"),
        (solution / "baseline.py").read_text(encoding="utf-8"),
    )


@pytest.mark.slow
def test_a_search_on_an_emitted_task_scores_every_rollout_with_the_checker(
    emitted_task, tmp_path, reef_server, reset_reef_upstream, scripted_llm
):
    reference, baseline = _programs(emitted_task)
    reset_reef_upstream.script = GuidanceScript()
    scripted_llm.script = BetterProgram(reference, baseline)
    settings = {
        "groups": 1,
        "rollouts": 2,
        "steps": 2,
        "training": "off",
        "state_dir": str(tmp_path / "state"),
        "executor": "openai",
        "executor_base_url": scripted_llm.base_url,
        "executor_model": "exec-model",
        "judge_concurrency": 2,
    }
    task = load_task(emitted_task)
    assert task.contract.solution_language is Language.PYTHON
    log = io.StringIO()
    result = run_search(
        agent_config(settings),
        task,
        emitted_task,
        environ={
            "REEF_URL": reef_server.url,
            "REEF_TOKEN": reef_server.token,
            "OPENAI_API_KEY": "sk-scripted",
        },
        console=Console(file=log, width=120),
    )
    assert "step 1: " in log.getvalue()
    assert [s.sampled for s in result.summaries] == [2, 2]

    # The executor was asked for one complete Python program, per the task's contract.
    first = scripted_llm.script.first
    assert first is not None
    system, user = first["messages"][0]["content"], first["messages"][-1]["content"]
    assert "Python program" in system and "C++" not in system
    assert "```python\n" in user and task.contract.solution_contract in user
    assert baseline.strip() in user  # the parent (the seed: the bundle's baseline), in full

    # The seed is the bundle's baseline, graded by the checker as the verifier would.
    library = Library.open(tmp_path / "state")
    try:
        seed = library.archive.node(0)
    finally:
        library.close()
    assert seed.entry.program == baseline
    baseline_reward = grade_task(emitted_task, emitted_task / "solution" / "baseline.py").reward
    assert seed.raw_score == baseline_reward and seed.entry.verification is not None
    assert seed.entry.verification.receipt["scorer"] == "checker"

    # Every rollout carries a checker receipt with its per-case scores.
    rollouts = _rollout_verifications(tmp_path / "state")
    assert len(rollouts) == 4
    for verification in rollouts:
        receipt = verification["receipt"]
        assert receipt["scorer"] == "checker" and len(receipt["case_scores"]) >= 8
        assert receipt["bundle_hash"].startswith("sha256:")
        assert (
            abs(sum(receipt["case_scores"]) / len(receipt["case_scores"]) - receipt["reward"])
            < 1e-9
        )
    statuses = sorted(v["status"] for v in rollouts)
    assert statuses.count(Status.INVALID.value) == 1  # the crashing program: reward 0, not a node

    # The scripted better candidate (the reference program) is the best node, with the
    # reward the task records for it.
    best = result.best
    assert best is not None and best.entry.program == reference
    reference_reward = _reference_reward(emitted_task)
    assert best.raw_score == reference_reward > baseline_reward

    # The task's contract edited since: the resume refuses in one line, before anything starts.
    contract = json.loads((emitted_task / "contract.json").read_text())
    contract["objective"] = "Light as few cells as possible."
    (emitted_task / "contract.json").write_text(json.dumps(contract))
    calls = scripted_llm.script.calls
    with pytest.raises(IdentityChanged) as refused:
        run_search(
            agent_config({**settings, "steps": 3}),
            load_task(emitted_task),
            emitted_task,
            environ={"REEF_URL": reef_server.url, "REEF_TOKEN": reef_server.token},
        )
    assert str(refused.value).startswith(
        "cannot resume: the task's contract.json changed since the run started"
    )
    assert "\n" not in str(refused.value)
    assert len(_rollout_verifications(tmp_path / "state")) == 4  # nothing new was sampled
    assert scripted_llm.script.calls == calls


def test_a_task_whose_scorer_is_not_installed_is_refused_in_one_line(tmp_path, example_dir):
    task_dir = tmp_path / "task"
    shutil.copytree(example_dir, task_dir)
    contract = json.loads((task_dir / "contract.json").read_text())
    (task_dir / "contract.json").write_text(json.dumps({**contract, "scorer": "no-such-scorer"}))
    settings = {"training": "off", "state_dir": str(tmp_path / "state")}
    with pytest.raises(ScorerNotInstalled) as caught:
        run_search(agent_config(settings), load_task(task_dir), task_dir, environ={})
    message = str(caught.value)
    assert "'no-such-scorer'" in message and "\n" not in message
    assert "checker" in message and "frontiercs-judge" in message  # what is installed
    assert not (tmp_path / "state").exists()  # refused before anything was started


def _reference_reward(task_dir: Path) -> float:
    import tomllib

    return tomllib.loads((task_dir / "task.toml").read_text())["metadata"]["reference_reward"]


def _rollout_verifications(state_dir: Path) -> list[dict[str, Any]]:
    """Each rollout's verification, as its step's durable journal recorded it."""
    found = []
    for step in range(2):
        state = read_step(step_journal_path(run_dir(state_dir), step), step)
        found += [done.rollout.verification.to_json() for done in state.finished.values()]
    return found


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_atoll_run_on_a_bundle_hands_the_best_program_to_the_bundles_verifier(
    emitted_task, tmp_path, venv_bin, reef_server, reset_reef_upstream, scripted_llm
):
    """`atoll run --agent guidance-ttt -p BUNDLE`: the search's best is what the verifier grades."""
    reference, baseline = _programs(emitted_task)
    reset_reef_upstream.script = GuidanceScript()
    scripted_llm.script = BetterProgram(reference, baseline)
    settings = {
        "groups": 1,
        "rollouts": 2,
        "steps": 1,
        "training": "off",
        "executor": "openai",
        "executor_base_url": scripted_llm.base_url,
        "executor_model": "exec-model",
        "guidance_model": "scripted",
        "state_dir": str(tmp_path / "state"),
    }
    jobs = tmp_path / "jobs"
    argv = [str(venv_bin / "atoll"), "run", "-y", "-p", str(emitted_task)]
    argv += ["--agent", "guidance-ttt", "--env", "atoll-local", "-o", str(jobs)]
    for key, value in settings.items():
        argv += ["--ak", f"{key}={value}"]
    (tmp_path / "roots").mkdir()
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=400,
        cwd=tmp_path,
        env={
            "PATH": f"{venv_bin}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "TERM": "dumb",
            "ATOLL_LOCAL_ROOT": str(tmp_path / "roots"),
            "REEF_URL": reef_server.url,
            "REEF_TOKEN": reef_server.token,
            "OPENAI_API_KEY": "test-key-not-secret",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        },
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (result_file,) = jobs.glob("*/*/result.json")
    result = json.loads(result_file.read_text())
    assert result["exception_info"] is None, result["exception_info"]
    trial = result_file.parent
    # The bundle's own grader graded what the agent handed in: the reference program.
    scores = json.loads((trial / "verifier" / "scores.json").read_text())
    assert scores["submission"]["sha256"] == hashlib.sha256(reference.encode()).hexdigest()
    reward = result["verifier_result"]["rewards"]["reward"]
    assert reward == _reference_reward(emitted_task)
    assert result["agent_result"]["metadata"]["best_raw_score"] == reward
    assert json.loads((trial / "agent" / "run.json").read_text())["scorer"] == "checker"
