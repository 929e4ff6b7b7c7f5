"""Curriculum-driven answer training on the local Tinker: the replay mix trains, the regression
window is only evaluated (its problems never in a training group's metrics), and the manifest
and summary carry both. Shares the session's tiny model and server (conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.tinker_local import RUN_FLAGS, run_atoll

from atoll.euler.curriculum import Config, State, save
from atoll.pi_train.euler_source import Store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_answer_training_on_a_curriculum_replays_and_never_trains_its_regression_window(
    server_env: dict[str, str], venv_bin: Path, tiny_model: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    made = run_atoll(venv_bin, server_env, "euler", "import", "--sample", "--store", str(store))
    assert made.returncode == 0, made.stderr
    config = Config(store_digest=Store(store).digest, languages=("python",), approaches=("direct",))
    state = State.new(config)
    state.current_problem, state.mastered, state.mastered_through = 5, [1, 2, 3, 4], 4
    save(tmp_path / "curriculum", state)

    out = tmp_path / "run"
    done = run_atoll(
        venv_bin, server_env, "pi", "train", "answer", "--base-model", str(tiny_model),
        *RUN_FLAGS, "--languages", "python", "--iterations", "2", "--store", str(store),
        "--curriculum", str(tmp_path / "curriculum"), "--recent", "2",
        "--regression-window", "1", "--regression-every", "2", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Regression window (evaluation only, never a gradient): problems [1]" in done.stderr

    manifest = json.loads((out / "manifest.json").read_text())
    replay = manifest["replay"]
    assert replay["regression_window"]["problems"] == [1]
    assert replay["mix"]["pools"] == {
        "frontier": [5],
        "replay-recent": [3, 4],
        "replay-older": [2],
    }
    assert replay["mix"]["groups"] == {"frontier": 3, "replay-recent": 1, "replay-older": 0}

    rows = _rows(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1]
    # The window was sampled and scored every second iteration (the first, here)...
    assert "test/env/regression/reward/total" in rows[0] and "test/env/p1/reward/total" in rows[0]
    # Each window task sampled --group-size (2) times: its pass@1 and pass@2.
    assert 0.0 <= rows[0]["test/env/all/pass@1"] <= rows[0]["test/env/all/pass@2"] <= 1.0
    assert not [k for k in rows[1] if k.startswith("test/")]
    for row in rows:
        # ...and never trained: no training metric names its problem or its tag.
        trained = [k for k in row if k.startswith("env/")]
        assert trained and not [k for k in trained if k.startswith(("env/p1/", "env/regression/"))]
        assert "env/frontier/reward/total" in row and "env/p5/reward/total" in row
    assert any("env/replay-recent/reward/total" in row for row in rows)

    summary = (out / "summary.md").read_text()
    assert "Replay mix configured 70% frontier / 20% recent / 10% older" in summary
    assert "| iteration | regression reward | regression correct |" in summary
    assert "Held-out set: the regression window, Euler problems [1]" in summary
    assert "| held-out reward | held-out pass@1 | held-out pass@2 |" in summary
