"""A Guidance-TTT run as one reef-eval episode: the Lab records the verifier's reward, tagged."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from packers import CountingGuidance, PackerExecutor
from reef_eval.types import Row

from atoll.guidance_ttt.harbor.reef_episode import (
    EpisodeError,
    episode_call,
    episode_failure,
    resolve_task,
)

pytest_plugins = ["support.fixtures"]


def _episode(tmp_path, args, env_extra):
    env = dict(
        os.environ, HOME=str(tmp_path), ATOLL_LOCAL_ROOT=str(tmp_path / "roots"), **env_extra
    )
    (tmp_path / "roots").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "atoll.guidance_ttt.harbor.reef_episode", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.timeout(320)
def test_one_search_is_one_recorded_episode(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = CountingGuidance(malformed_every=0)
    scripted_llm.script = PackerExecutor()
    lab = tmp_path / "lab"
    args = [str(lab), "polyomino_packing", "--key", "gttt-1"]
    for pair in (
        "groups=1",
        "rollouts=2",
        "steps=1",
        "training=off",
        "executor=openai",
        f"executor_base_url={scripted_llm.base_url}",
        "executor_model=scripted-executor",
        "guidance_model=scripted",
        f"state_dir={tmp_path / 'state'}",
    ):
        args += ["--set", pair]
    env = {
        "REEF_URL": reef_server.url,
        "REEF_TOKEN": reef_server.token,
        "FRONTIERCS_JUDGE_URL": judge_url,
        "OPENAI_API_KEY": "test-key-not-secret",
    }
    done = _episode(tmp_path, args, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    episode = json.loads(done.stdout)
    assert episode["key"] == "gttt-1" and episode["error"] is None

    with sqlite3.connect(lab / "results.sqlite") as db:
        rows = db.execute("SELECT * FROM results").fetchall()
        columns = [c[0] for c in db.execute("SELECT * FROM results").description]
    (row,) = [dict(zip(columns, r, strict=True)) for r in rows]
    text = json.dumps(row)
    assert "search-only" in text and "test-key" not in text
    best = json.loads((tmp_path / "state" / "guidance-run" / "result.json").read_text())["best"]
    assert episode["rewards"]["reward"] == pytest.approx(best["raw_score"])

    # Asking again finds the recorded episode and runs nothing.
    before = len(scripted_llm.chat_requests())
    again = _episode(tmp_path, args, env)
    assert again.returncode == 0 and again.stdout == done.stdout
    assert len(scripted_llm.chat_requests()) == before


@pytest.mark.slow
def test_a_bad_setting_is_one_line_before_any_trial(tmp_path):
    done = _episode(tmp_path, [str(tmp_path / "lab"), "polyomino_packing", "--set", "groups=0"], {})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: setting 'groups': Input should be greater than or equal to 1 (got '0')"
    ]
    assert not (tmp_path / "lab" / "results.sqlite").exists()


def test_the_episode_names_the_agent_and_its_training_mode(tmp_path):
    call = episode_call(
        resolve_task("polyomino_packing"), {"training": "off", "state_dir": tmp_path}
    )
    assert call["agent"]["import_path"] == "atoll.guidance_ttt.agent:GuidanceTTTAgent"
    assert call["agent"]["kwargs"]["state_dir"] == str(tmp_path)
    assert call["tags"]["training"] == "search-only"
    assert call["environment"] == {"import_path": "atoll.core.environments.local:LocalEnvironment"}
    with pytest.raises(EpisodeError, match="no-such-task"):
        resolve_task("no-such-task")


def test_an_episode_without_rewards_is_a_failure_not_a_result():
    def row(rewards: dict, **tags) -> Row:
        return Row(key="k", kind="episode", task="polyomino_packing", tags=tags, rewards=rewards)

    assert episode_failure(row({"reward": 41.5})) is None
    assert episode_failure(row({})) == (
        "the episode recorded no reward: the task's verifier scored nothing"
    )
    assert episode_failure(row({}, error="StepFailed: judge down")) == "StepFailed: judge down"
    assert episode_failure(row({"reward": 0.0}, error="boom")) == "boom"
