"""Grading a submission: the reward files, the per-case record, the locks and the copy."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from atoll.checker import STATUSES, grade_task, grader_source, read_scores
from atoll.checker import grader as grader_module

GOOD = """
import json, sys
instance = json.load(sys.stdin)
print(json.dumps({"x": round(0.2 + instance["case"] / 10, 3)}))
"""


def test_reward_and_per_case_record(graded, toy):
    report = graded(GOOD)
    assert report.scores == [0.2, 0.3, 0.4]
    assert report.reward == pytest.approx(0.3)
    out = toy / "out"
    assert sorted(p.name for p in out.iterdir()) == ["reward.json", "reward.txt", "scores.json"]
    assert json.loads((out / "reward.json").read_text()) == {"reward": report.reward}
    assert float((out / "reward.txt").read_text()) == report.reward
    scores = json.loads((out / "scores.json").read_text())
    assert scores["reward"] == report.reward
    assert [set(case) for case in scores["cases"]] == [
        {"case", "score", "status", "feasible", "wall_time", "detail"}
    ] * 3
    assert [c["status"] for c in scores["cases"]] == ["ok"] * 3
    assert all(c["feasible"] is True and 0 < c["wall_time"] < 2 for c in scores["cases"])
    assert scores["submission"]["accepted"] is True
    assert scores["isolation"]["uid"] not in (0, os.getuid())
    assert read_scores(out / "scores.json") == report


def _readme_status_table(readme: Path) -> list[tuple[str, str, str]]:
    """The rows (status, meaning, score) of the README's table under `| Status | Meaning |`."""
    lines = readme.read_text().splitlines()
    start = lines.index("| Status | Meaning | Score |")
    rows = []
    for line in lines[start + 2 :]:  # past the header and its |---| line
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        status, meaning, score = cells[0], cells[1], cells[-1]
        assert re.fullmatch(r"`[a-z_]+`", status), f"not one status in backticks: {line}"
        rows.append((status.strip("`"), meaning, score))
    return rows


def test_statuses_are_the_documented_ones(repo):
    """What scores.json can say is what verifiers/checker/README.md tells users, in its order."""
    table = _readme_status_table(repo / "verifiers" / "checker" / "README.md")
    assert tuple(status for status, _, _ in table) == STATUSES
    assert all(meaning for _, meaning, _ in table)
    # Only `ok` can score above 0, as the table says of every other status.
    assert [score for status, _, score in table if status != "ok"] == ["0"] * (len(table) - 1)


def test_private_directories_are_locked_while_the_submission_runs(graded, toy):
    before = {d: stat.S_IMODE(os.stat(toy / d).st_mode) for d in ("tests", "solution")}
    report = graded(
        """
import json, os, sys
json.load(sys.stdin)
modes = [os.stat(p).st_mode & 0o777 for p in ("%s/tests", "%s/solution", "%s/out")]
print(json.dumps({"x": 1 if all(m == 0o700 for m in modes) else 0.5}))
""".replace("%s", str(toy))
    )
    assert report.scores == [1.0, 1.0, 1.0]  # it saw all three at 0700
    after = {d: stat.S_IMODE(os.stat(toy / d).st_mode) for d in ("tests", "solution")}
    assert after == before  # restored once nothing of the submission runs


def test_the_submission_is_copied_before_it_runs(graded, toy, program):
    """A program that rewrites its own file changes nothing for the next case."""
    path = program(
        """
import json, sys
json.load(sys.stdin)
try:
    open(__file__, "a").write("raise SystemExit(3)\\n")
    wrote = True
except OSError:
    wrote = False
print(json.dumps({"x": 0.5 if not wrote else 0.25}))
"""
    )
    report = grade_task(toy, path, out_dir=toy / "out")
    assert report.scores == [0.5, 0.5, 0.5]
    assert report.submission["sha256"] and report.submission["bytes"] == path.stat().st_size


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: None, "no submission file"),
        (
            lambda p: p.with_name("real.py").write_text("print(1)") and p.symlink_to("real.py"),
            "symbolic link",
        ),
        (lambda p: p.write_bytes(b"#" * (10 * 1024 * 1024)), "bytes; the limit is"),
        (lambda p: os.mkfifo(p), "not a regular file"),
        (lambda p: p.mkdir(), "not a regular file"),
    ],
    ids=["missing", "symlink", "10MB", "fifo", "directory"],
)
def test_rejected_submissions_score_zero_on_every_case(toy, tmp_path, make, reason):
    path = tmp_path / "solution.py"
    make(path)
    report = grade_task(toy, path, out_dir=toy / "out")
    assert report.reward == 0.0
    assert report.submission["accepted"] is False and reason in report.submission["reason"]
    assert [c.status for c in report.cases] == ["crash"] * 3
    assert json.loads((toy / "out" / "reward.json").read_text()) == {"reward": 0.0}


def test_the_module_is_standard_library_only_and_runs_on_the_system_python(toy, tmp_path):
    """The copy a bundle carries runs with a bare python3 -I, no atoll installed."""
    carried = tmp_path / "grader.py"
    carried.write_bytes(grader_source())
    solution = tmp_path / "good.py"
    solution.write_text(GOOD)
    system_python = "/usr/bin/python3"
    done = subprocess.run(
        [
            system_python,
            "-I",
            str(carried),
            "grade",
            "--tests",
            str(toy / "tests"),
            "--submission",
            str(solution),
            "--out",
            str(toy / "out"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reward"] == pytest.approx(0.3)
    assert Path(grader_module.__file__).read_bytes() == grader_source()
    assert sys.version_info >= (3, 11)
