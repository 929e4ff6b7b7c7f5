"""The `frontiercs-judge` job plugin: a judge for a whole Harbor job, found or started and stopped.

Real Harbor 0.20 runs the polyomino task's oracle on atoll-local, and the
task's own verifier, which has no network, reaches the judge through the
socket directory the plugin exports (FRONTIERCS_JUDGE_SOCKET_DIR): the
embedded judge's own socket, or a relay to the judge FRONTIERCS_JUDGE_URL names.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
from pathlib import Path

import httpx
import pytest
from support.judge import small_judge
from support.processes import processes_mentioning

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SEED_RESULT = Path(__file__).parents[2] / "tasks" / "polyomino_packing" / "solution" / "result.json"


def oracle_run(
    venv_bin: Path,
    work: Path,
    judge_url: str | None,
    socket_dir: Path | None = None,
    *,
    plugin: bool = True,
) -> subprocess.CompletedProcess:
    """`atoll run` of the oracle on polyomino_packing; `plugin=False` leaves adding the
    judge's job plugin to `atoll run` (the task needs it), as a user's plain run does."""
    (work / "roots").mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": f"{venv_bin}:/usr/bin:/bin",
        "HOME": str(work),
        "TERM": "dumb",
        "ATOLL_LOCAL_ROOT": str(work / "roots"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    if judge_url is not None:
        env["FRONTIERCS_JUDGE_URL"] = judge_url
    if socket_dir is not None:
        env["FRONTIERCS_JUDGE_SOCKET_DIR"] = str(socket_dir)
    argv = [
        str(venv_bin / "atoll"),
        "run",
        "-y",
        "--agent",
        "oracle",
        "--task",
        "polyomino_packing",
    ]
    argv += ["--env", "atoll-local", "-o", str(work / "jobs")]
    if plugin:
        argv += ["--plugin", "frontiercs-judge"]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=200, cwd=work, env=env, check=False
    )


def verdict(work: Path) -> tuple[dict, dict]:
    (trial_result,) = (work / "jobs").glob("*/*/result.json")
    verifier = trial_result.parent / "verifier"
    reward = json.loads((verifier / "reward.json").read_text())
    return reward, json.loads((verifier / "judge-result.json").read_text())


def answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


ANNOUNCED = re.compile(r"embedded judge at (http://127\.0\.0\.1:\d+) and (/\S+)/judge\.sock")


def test_the_embedded_judge_serves_the_job_and_stops_with_it(tmp_path, venv_bin):
    # Also the end-to-end run of the task on atoll-local: `atoll run` adds the judge's job
    # plugin by itself, and the verifier's reward is exactly the seed's recorded score.
    done = oracle_run(venv_bin, tmp_path, judge_url=None, plugin=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "atoll: added --plugin frontiercs-judge (needed by" in done.stderr
    url, socket_dir = ANNOUNCED.search(done.stderr).groups()
    reward, judged = verdict(tmp_path)
    seed = json.loads(SEED_RESULT.read_text())
    assert reward["reward"] == pytest.approx(seed["score"])
    (trial_result,) = (tmp_path / "jobs").glob("*/polyomino_packing__*/result.json")
    trial = json.loads(trial_result.read_text())
    assert trial["exception_info"] is None, trial["exception_info"]
    assert trial["verifier_result"]["rewards"] == {
        "reward": seed["score"],
        "raw_score": seed["raw_score"],
    }
    assert judged["judge_socket"] == "/run/frontiercs-judge/judge.sock"  # as the trial saw it
    (job_dir,) = (tmp_path / "jobs").iterdir()
    assert (job_dir / "frontiercs-judge").is_dir()  # its data lives with the job
    assert not answers(url)
    assert not Path(socket_dir).exists()  # the socket and its directory went with the job
    assert processes_mentioning(str(tmp_path)) == []


def test_a_judge_named_by_the_environment_is_used_and_left_running(tmp_path, venv_bin):
    with small_judge(tmp_path / "judge") as url:
        done = oracle_run(venv_bin, tmp_path / "work", judge_url=url)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"frontiercs-judge: using the judge at {url} (left running)" in done.stderr
        relayed = re.search(r"trials reach it via (/\S+)", done.stderr).group(1)
        reward, judged = verdict(tmp_path / "work")
        # the small judge has two cases, so its score differs from the full judge's
        assert reward["reward"] != pytest.approx(json.loads(SEED_RESULT.read_text())["score"])
        assert judged["judge"]["cases"] and len(judged["judge"]["cases"]) == 2
        assert answers(url)
        assert not Path(relayed).exists()  # the relay's socket went with the job


def test_a_socket_directory_that_is_not_a_judges_stops_the_job(tmp_path, venv_bin):
    with small_judge(tmp_path / "judge") as url:
        stale = tmp_path / "stale"
        stale.mkdir()
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(stale / "judge.sock"))
        done = oracle_run(venv_bin, tmp_path / "work", judge_url=url, socket_dir=stale)
    assert done.returncode != 0
    assert f"FRONTIERCS_JUDGE_SOCKET_DIR={stale} holds no judge socket that answers" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "work" / "jobs").glob("*/*/result.json"))


def test_a_named_judge_that_does_not_answer_stops_the_job_in_one_line(tmp_path, venv_bin):
    from support.ports import free_port

    url = f"http://127.0.0.1:{free_port()}"
    done = oracle_run(venv_bin, tmp_path, judge_url=url)
    assert done.returncode != 0
    assert f"FRONTIERCS_JUDGE_URL={url} does not answer GET /health" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "jobs").glob("*/*/result.json"))


# A program that runs a Harbor job itself (no `harbor run`, whose CLI handles SIGTERM):
# the plugin's start hook as Harbor calls it, then the job's long middle.
EMBEDDING_PROGRAM = """
import asyncio, sys, time
from pathlib import Path
from atoll.judge.job_plugin import FrontierCSJudgePlugin

class Job:  # what the plugin reads of Harbor's Job: its directory, its config's agents
    job_dir = Path(sys.argv[1])
    class config:
        agents = []

plugin = FrontierCSJudgePlugin()
asyncio.run(plugin.on_job_start(Job()))
print("started", flush=True)
time.sleep(120)
"""


def test_sigterm_to_a_program_running_a_job_stops_the_judge_it_started(tmp_path, venv_bin):
    env = {"PATH": f"{venv_bin}:/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "dumb"}
    program = subprocess.Popen(
        [str(venv_bin / "python"), "-c", EMBEDDING_PROGRAM, str(tmp_path / "job")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert program.stdout is not None
        assert program.stdout.readline() == "started\n", program.stderr.read()  # type: ignore[union-attr]
        program.send_signal(signal.SIGTERM)
        _, err = program.communicate(timeout=60)
    finally:
        if program.poll() is None:
            program.kill()
    url, socket_dir = ANNOUNCED.search(err).groups()
    assert program.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert not Path(socket_dir).exists()  # removed by the plugin's stop, not left to a sweep
    assert not answers(url)
