"""A resumed `atoll pi train shell` run logs each trajectory once.

The cookbook resumes after the last saved iteration and samples a cut-off
iteration again; the rows that iteration had already logged are dropped
first, atomically, so `trajectories.jsonl` never counts a trajectory twice.
"""

from __future__ import annotations

import json
from pathlib import Path

from atoll.pi_train.shell.train import TRAJECTORIES, drop_unfinished_trajectories


def _checkpoint(batch: int) -> str:
    return json.dumps({"name": f"{batch:06d}", "batch": batch, "state_path": f"tinker://m/{batch}"})


def test_rows_of_the_cut_off_iteration_are_dropped_and_saved_ones_kept(tmp_path: Path) -> None:
    (tmp_path / "checkpoints.jsonl").write_text(_checkpoint(1) + "\n" + _checkpoint(2) + "\n")
    rows = [{"iteration": i, "task": f"t{n}"} for n, i in enumerate([0, 0, 1, 1, 2, 2])]
    (tmp_path / TRAJECTORIES).write_text("".join(json.dumps(r) + "\n" for r in rows))
    drop_unfinished_trajectories(tmp_path)
    kept = [json.loads(line) for line in (tmp_path / TRAJECTORIES).read_text().splitlines()]
    assert kept == rows[:4]


def test_a_fresh_run_and_a_finished_one_are_left_alone(tmp_path: Path) -> None:
    drop_unfinished_trajectories(tmp_path)  # nothing there yet
    assert not (tmp_path / TRAJECTORIES).exists()
    (tmp_path / "checkpoints.jsonl").write_text(_checkpoint(2) + "\n")
    text = "".join(json.dumps({"iteration": i}) + "\n" for i in (0, 1, 1))
    (tmp_path / TRAJECTORIES).write_text(text)
    drop_unfinished_trajectories(tmp_path)
    assert (tmp_path / TRAJECTORIES).read_text() == text
