"""The `pi-docker` agent as a Harbor trial, on atoll-local and on Harbor's docker environment."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from harbor.models.trajectories.trajectory import Trajectory
from pi_support import KEY_ENV, TASKS, call, say, turns
from support.engine import docker_engine
from support.openai_server import Reply

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(400)]

TASK = TASKS / "sum-numbers"
SOLVE = "print(sum(int(x) for x in open('numbers.txt')))\n"


def harbor_trial(
    venv_bin: Path, env_name: str, jobs: Path, provider, key: str, exit_status: int = 0
) -> dict:
    done = subprocess.run(
        [str(venv_bin / "atoll"), "run", "-p", str(TASK), "--agent", "pi-docker"]
        + ["--env", env_name, "-o", str(jobs)]
        + ["--ak", f"base_url={provider.base_url}", "--ak", "model=scripted"]
        + ["--ak", f"api_key_env={KEY_ENV}", "--ak", "max_turns=8"],
        capture_output=True,
        text=True,
        timeout=360,
        cwd=jobs,
        env={
            **os.environ,
            KEY_ENV: key,
            "TERM": "dumb",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no network: the bundled cost map
            "ATOLL_LOCAL_ROOT": str(jobs),
            # Harbor's docker environment talks to the engine the tests use
            **({"DOCKER_HOST": docker_engine()} if env_name == "docker" else {}),
        },
    )
    assert done.returncode == exit_status, done.stdout[-3000:] + done.stderr[-3000:]
    (trial,) = [p for p in jobs.glob("*/*") if (p / "agent").is_dir()]
    return {"trial": trial, "result": json.loads((trial / "result.json").read_text())}


@pytest.mark.parametrize("env_name", ["atoll-local", "docker"])
def test_pi_solves_a_harbor_task_in_the_trials_environment(
    venv_bin, pi, rollout_image, provider, api_key, tmp_path, env_name
):
    provider.script = turns(
        call("write", path="solve.py", content=SOLVE),
        call("bash", command="python3 solve.py > answer.txt && cat answer.txt && pwd"),
        say("The sum is 42."),
    )
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    run = harbor_trial(venv_bin, env_name, jobs, provider, api_key)
    result, trial = run["result"], run["trial"]

    assert result["exception_info"] is None
    assert result["verifier_result"]["rewards"]["reward"] == 1.0
    agent = result["agent_result"]
    assert (agent["n_input_tokens"], agent["n_output_tokens"]) == (3 * 16, 2 * 12 + 6)
    assert (
        agent["metadata"]["outcome"] == "completed" and agent["metadata"]["disqualified"] is False
    )
    # The tools ran in the trial's environment, in its working directory.
    record = json.loads((trial / "agent" / "pi-docker" / "record.json").read_text())
    bash = [c for c in record["commands"] if c["op"] == "bash"]
    assert bash[0]["stdout"] == "42\n/app\n" and bash[0]["exit_code"] == 0
    assert record["environment"]["workdir"] == "/app"
    # An ATIF trajectory Harbor's own model accepts.
    trajectory = Trajectory.model_validate_json((trial / "agent" / "trajectory.json").read_text())
    agent_steps = [s for s in trajectory.steps if s.source == "agent"]
    assert [s.tool_calls[0].function_name for s in agent_steps[:2]] == ["write", "bash"]
    assert agent_steps[1].observation.results[0].content.startswith("42")
    assert trajectory.final_metrics.total_completion_tokens == 2 * 12 + 6
    # Pi's private dirs stay out of the trial's logs, and the key is nowhere in the job.
    assert not (trial / "agent" / "pi-docker" / "pi").exists()
    needle = api_key.encode()
    assert [p for p in jobs.rglob("*") if p.is_file() and needle in p.read_bytes()] == []


def test_a_provider_error_fails_the_trial_instead_of_scoring_it(
    venv_bin, pi, provider, api_key, tmp_path
):
    provider.script = lambda request: Reply(status=503, error_message="overloaded")
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    # atoll run says the trial failed: exit 1, one line naming the exception type
    run = harbor_trial(venv_bin, "atoll-local", jobs, provider, api_key, exit_status=1)
    exception = run["result"]["exception_info"]
    assert exception is not None and exception["exception_type"] == "PiRunFailed"
    assert "overloaded" in exception["exception_message"]
    assert run["result"]["verifier_result"] is None
