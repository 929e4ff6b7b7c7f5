"""summary.md and reward.png from a run's metrics.jsonl, with and without held-out rows (fast)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atoll.pi_train.training import held_out, summary
from atoll.pi_train.training.held_out import HeldOut

PNG = b"\x89PNG\r\n\x1a\n"


def _manifest(command: str, **extra: Any) -> dict[str, Any]:
    return {
        "command": command,
        "config": {"base_model": "m", "renderer": "qwen3", "groups_per_batch": 2, "group_size": 2},
        "task_set": {"digest": "a" * 64},
        **extra,
    }


def _write_rows(run_dir: Path, rows: list[dict[str, Any]]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _table(text: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The per-iteration table (its headings, and its rows by iteration)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| iteration | reward |"))
    headings = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(headings, cells, strict=True))
    return headings, rows


def _assert_png(path: Path) -> None:
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == PNG
    pixels = imread(path)  # decodes the whole file: a truncated PNG fails here
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100


def test_a_run_with_held_out_rows_shows_them_beside_the_training_ones(tmp_path: Path) -> None:
    evaluated = {
        "test/env/all/reward/total": 0.75,
        "test/env/all/pass@1": 0.25,
        "test/env/all/pass@2": 0.5,
        "test/env/multiples/pass@1": 0.5,
    }
    rows = [
        {"step": 0, "env/all/reward/total": 0.125, "time/total": 3.0, **evaluated},
        {"step": 1, "env/all/reward/total": 0.25, "time/total": 2.0},
        {"step": 2, "env/all/reward/total": 0.5, "time/total": 2.0,
         "test/env/all/reward/total": 1.0, "test/env/all/pass@1": 0.5, "test/env/all/pass@2": 1.0},
    ]  # fmt: skip
    _write_rows(tmp_path, rows)
    (tmp_path / "infrastructure_failures.jsonl").write_text(
        '{"iteration": 1, "task": "multiples/train/0/python", "phase": "train"}\n'
        '{"iteration": 2, "task": "multiples/eval/0/python", "phase": "eval"}\n'
        '{"iteration": 2, "task": "multiples/eval/0/python", "phase": "eval"}\n'
    )
    options = HeldOut(instances=1, samples=2, every=2)
    manifest = _manifest(
        "atoll pi train hidden",
        evaluation=held_out.record(options, 4),
        batches={"order": "mixed-v1", "seed": 4, "families": ["multiples", "recurrence"],
                 "languages": ["python", "javascript"]},
    )  # fmt: skip
    text = summary.write(tmp_path, manifest).read_text()
    headings, table = _table(text)
    assert headings[-4:] == [
        "held-out reward",
        "held-out pass@1",
        "held-out pass@2",
        "groups dropped (infrastructure)",
    ]
    assert table["0"]["reward"] == "0.125" and table["0"]["held-out reward"] == "0.750"
    assert table["0"]["held-out pass@1"] == "0.250" and table["0"]["held-out pass@2"] == "0.500"
    assert table["1"]["held-out reward"] == "–" and table["1"]["held-out pass@2"] == "–"
    assert table["2"]["held-out pass@2"] == "1.000"
    # A held-out check the sandbox failed is not a group dropped from the update.
    assert [table[s]["groups dropped (infrastructure)"] for s in "012"] == ["0", "1", "0"]
    assert "1 group(s) left out of the update" in text
    assert "1 held-out group(s) left out of the held-out metrics" in text
    assert "Held-out set: 4 groups from the `eval` namespace" in text
    assert "2 sample(s) each" in text and "every 2 iteration(s)" in text
    assert "order `mixed-v1`, seed 4" in text
    assert "](reward.png)" in text
    _assert_png(tmp_path / "reward.png")


def test_a_run_without_a_held_out_set_says_so_and_invents_none(tmp_path: Path) -> None:
    _write_rows(tmp_path, [{"step": 0, "env/all/reward/total": -0.1, "time/total": 1.0}])
    text = summary.write(tmp_path, _manifest("atoll pi train answer")).read_text()
    assert "This run has no held-out set: `answer` holds out only a curriculum's" in text
    headings, table = _table(text)
    assert not [h for h in headings if "held-out" in h]
    assert table["0"]["reward"] == "-0.100"
    _assert_png(tmp_path / "reward.png")

    # A namespace run asked for none, or never evaluated it: said, not shown as zeros.
    for options, said in (
        (HeldOut(instances=0), "no held-out set (`--eval-instances 0`)"),
        (HeldOut(every=0), "never evaluated its 4 held-out groups (`--eval-every 0`)"),
    ):
        groups = 0 if options.instances == 0 else 4
        manifest = _manifest("atoll pi train shell", evaluation=held_out.record(options, groups))
        text = summary.write(tmp_path, manifest).read_text()
        assert said in text
        assert "held-out reward" not in text


def test_answer_holds_out_its_regression_window(tmp_path: Path) -> None:
    rows = [
        {"step": 0, "env/all/reward/total": 0.0, "test/env/all/reward/total": 0.5,
         "test/env/regression/reward/total": 0.5, "test/env/all/pass@1": 0.5, "test/env/all/pass@2": 1.0, "test/env/all/pass@4": 1.0},
        {"step": 1, "env/all/reward/total": 0.25},
    ]  # fmt: skip
    _write_rows(tmp_path, rows)
    window = {"problems": [1, 2], "group_size": 4, "every_iterations": 2, "size": 2}
    replay = {
        "mix": {
            "configured": {"frontier": 0.7, "replay-recent": 0.2, "replay-older": 0.1},
            "groups": {"frontier": 2, "replay-recent": 0, "replay-older": 0},
            "pools": {"frontier": [5], "replay-recent": [], "replay-older": []},
        },
        "regression_window": window,
    }
    text = summary.write(tmp_path, _manifest("atoll pi train answer", replay=replay)).read_text()
    assert "Held-out set: the regression window, Euler problems [1, 2]" in text
    assert "| iteration | regression reward | regression correct |" in text
    headings, table = _table(text)
    assert "held-out pass@4" in headings
    assert table["0"]["held-out pass@4"] == "1.000" and table["1"]["held-out pass@4"] == "–"
    _assert_png(tmp_path / "reward.png")


def test_no_row_no_plot(tmp_path: Path) -> None:
    _write_rows(tmp_path, [])
    text = summary.write(tmp_path, _manifest("atoll pi train hidden")).read_text()
    assert "reward.png" not in text and not (tmp_path / "reward.png").exists()
    assert "This run has no held-out set" in text


def test_bad_held_out_flags_are_refused_in_one_line_before_anything_is_written(
    tmp_path: Path,
) -> None:
    from typer.testing import CliRunner

    from atoll.pi_train.cli import train_app

    out = tmp_path / "run"
    for command in ("hidden", "shell"):
        for flag, value, least in (
            ("--eval-samples", "0", 1),
            ("--eval-every", "-1", 0),
            ("--eval-instances", "-2", 0),
        ):
            args = [command, "--base-model", "tiny", "--out", str(out), flag, value]
            done = CliRunner().invoke(train_app, args)
            assert done.exit_code == 2, done.output
            lines = done.output.strip().splitlines()
            assert lines == [f"error: {flag} must be at least {least} (got {value})"]
    assert not out.exists()
