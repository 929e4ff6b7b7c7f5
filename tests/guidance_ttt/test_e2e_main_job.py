"""The main job on embedded defaults: only the two model endpoints are named.

`atoll run --agent guidance-ttt --task polyomino_packing` with no REEF_URL,
no FRONTIERCS_JUDGE_URL and no --env: atoll adds the agent's job plugins and
picks the environment; reef-stack starts the real Reef in upstream mode in
front of the scripted guidance model, frontiercs-judge starts the real
embedded judge (all 70 cases), the task's verifier re-scores the best
program, and both services are gone when the command returns.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx
import pytest
from packers import CountingGuidance, PackerExecutor
from support.openai_server import ScriptedOpenAIServer
from support.ports import free_port
from support.processes import processes_mentioning

from atoll.guidance_ttt.state.run_dir import COMMITTED_FILE, run_dir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def answers(url: str, path: str) -> bool:
    try:
        return httpx.get(url + path, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_main_job_runs_on_embedded_defaults(tmp_path: Path, venv_bin: Path) -> None:
    (tmp_path / "roots").mkdir()
    reef_url = f"http://127.0.0.1:{free_port()}"
    state_dir = tmp_path / "state"
    env = {
        "PATH": f"{venv_bin}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TERM": "dumb",
        "ATOLL_LOCAL_ROOT": str(tmp_path / "roots"),
        # No engine here, so the default environment is atoll-local whatever the machine runs.
        "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
        "OPENAI_API_KEY": "test-key-not-secret",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    with (
        ScriptedOpenAIServer(CountingGuidance(malformed_every=0)) as guidance,
        ScriptedOpenAIServer(PackerExecutor()) as executor,
    ):
        settings = {
            "training": "off",
            "groups": 1,
            "rollouts": 2,
            "steps": 1,
            "guidance_base_url": guidance.base_url,
            "executor": "openai",
            "executor_base_url": executor.base_url,
            "executor_model": "m",
            "reef_url": reef_url,  # a free port: the default 8900 may be taken on a shared machine
            "state_dir": state_dir,
        }
        argv = [str(venv_bin / "atoll"), "run", "-y", "--agent", "guidance-ttt"]
        argv += ["--task", "polyomino_packing", "-o", str(tmp_path / "jobs")]
        for key, value in settings.items():
            argv += ["--ak", f"{key}={value}"]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=280, cwd=tmp_path, env=env, check=False
        )
        guided = len(guidance.chat_requests())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "atoll: added --plugin frontiercs-judge --plugin reef-stack" in done.stderr
    assert "atoll: --env atoll-local (no Docker engine answers at unix://" in done.stderr
    assert "frontiercs-judge: embedded judge at http://127.0.0.1:" in done.stderr
    assert "reef-stack: search-only (training off)" in done.stderr

    (trial_result,) = (tmp_path / "jobs").glob("*/*/result.json")
    result = json.loads(trial_result.read_text())
    assert result["exception_info"] is None, result["exception_info"]
    assert guided == 2  # both rollouts' guidance went through the Reef the plugin started

    committed = json.loads((run_dir(state_dir) / COMMITTED_FILE).read_text())["archive"]
    best = next(n for n in committed["nodes"] if n["id"] == committed["best_id"])
    verifier = trial_result.parent / "verifier"
    reward = json.loads((verifier / "reward.json").read_text())
    assert reward["raw_score"] == pytest.approx(best["raw_score"])
    assert result["verifier_result"]["rewards"]["reward"] == pytest.approx(reward["reward"])

    judge_url = re.search(r"embedded judge at (http://\S+)", done.stderr).group(1)
    assert json.loads((verifier / "judge-result.json").read_text())["status"] == "done"
    assert not answers(judge_url, "/health")
    assert not answers(reef_url, "/healthz")
    assert processes_mentioning(str(tmp_path)) == []
