"""The discovery tasks' verifier as a trial runs it: tests/test.sh in the verifier's box.

Every program here is scored by the `verifier` scorer, which runs the task's
own tests/test.sh (tests/verify.py with the grader's sandbox) in a box built
the way atoll-local builds a trial's, and reads the reward file it writes.
The seeds' scores are measured there and compared with their closed forms;
a program that runs past a limit, crashes, prints something else or nothing
scores 0; a verifier that cannot verify is an error, never a score.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from atoll.checker import grader
from atoll.checker.verifier_scorer import VerifierScorer
from atoll.core.scoring import ScorerUnavailable, ScoreStatus
from atoll.discovery import TASKS, task_dir, task_facts
from atoll.discovery.verify import VerifierError, check_numpy, run

pytestmark = pytest.mark.slow

# Each seed's objective, worked out by hand (see each seed's docstring).
CLOSED_FORMS = {
    "erdos_min_overlap": 1 / 2,
    "autocorrelation_ac1": 2.0,
    "autocorrelation_ac2": 2 / 3,
    "circle_packing_26": 26 / 12,
    "circle_packing_32": 32 / 12,
}


def _copy(name: str, tmp_path: Path, **limits: float) -> Path:
    """A copy of the task, its candidate's limits changed as given."""
    copy = tmp_path / name
    shutil.copytree(task_dir(name), copy)
    problem_file = copy / "tests" / "problem.json"
    problem = json.loads(problem_file.read_text())
    problem["limits"].update(limits)
    problem_file.write_text(json.dumps(problem), encoding="utf-8")
    return copy


@pytest.mark.parametrize("name", TASKS)
def test_each_seed_scores_its_closed_form_in_the_verifiers_box(name):
    seed = (task_dir(name) / "solution" / "solution.py").read_text(encoding="utf-8")
    score = VerifierScorer(task_dir(name), "python").score(seed)
    assert score.status is ScoreStatus.VALID, score.message
    assert score.raw_score == pytest.approx(CLOSED_FORMS[name], abs=1e-12)
    # task.toml records exactly what the verifier measures.
    assert score.raw_score == task_facts(task_dir(name)).seed_score
    assert score.receipt["rewards"]["raw_score"] == score.raw_score
    assert score.message.startswith("valid: ")


@pytest.mark.parametrize(
    ("program", "status"),
    [
        ("while True:\n    pass\n", "timeout: used more than 1 s of CPU time"),
        ("import time\ntime.sleep(30)\n", "timeout: ran past the 3 s wall clock"),
        ("import threading\nthreading.Thread(target=print).start()\n", "crash:"),
        ("import numpy\nx = numpy.ones(600_000_000)\n", "memory:"),
        ("import sys\nsys.exit(4)\n", "crash: exit status 4"),
        ("print('the answer is')\nprint('{\"h\": [0.5]}')\n", "malformed: stdout is not one JSON"),
        ("print('{\"h\": [NaN]}')\n", "malformed: stdout is not one JSON"),
        ("", "malformed: stdout is empty"),
        ("print('{\"h\": [0.5, 2.0]}')\n", "invalid: h must lie in [0, 1]"),
        (
            "print('{\"heights\": [0.5]}')\n",
            "invalid: the output must be a JSON object with the key 'h'",
        ),
    ],
)
def test_a_candidate_that_fails_scores_zero_never_an_error(tmp_path, program, status):
    # A spinning program gets a wall clock it cannot reach first, even on a loaded machine.
    wall = 120 if status.startswith("timeout: used more than") else 3
    task = _copy("erdos_min_overlap", tmp_path, cpu_seconds=1, wall_seconds=wall)
    score = VerifierScorer(task, "python").score(program)
    assert score.status is ScoreStatus.INVALID
    assert (score.raw_score, score.reward) == (None, 0.0)
    assert score.receipt["rewards"] == {"reward": 0.0}
    assert score.message.startswith(status), score.message
    assert score.message.endswith("(reward 0)")


def test_a_broken_problem_file_is_an_error_not_a_score(tmp_path):
    task = _copy("circle_packing_26", tmp_path)
    (task / "tests" / "problem.json").write_text('{"problem": "circle_packing"}')
    with pytest.raises(ScorerUnavailable, match="needs 'circles', a positive integer"):
        VerifierScorer(task, "python").score("print(1)\n")


def test_a_python_without_numpy_is_an_error_not_a_score():
    with pytest.raises(VerifierError, match="cannot import numpy"):
        check_numpy("/bin/false", grader)


def test_on_the_host_a_missing_program_scores_zero_and_the_result_says_why(tmp_path):
    tests = tmp_path / "tests"
    shutil.copytree(task_dir("circle_packing_32") / "tests", tests)
    out = tmp_path / "out"
    line = run(tests, tmp_path / "workspace" / "solution.py", out)
    assert line == "missing: no submission file (reward 0)"
    assert json.loads((out / "reward.json").read_text()) == {"reward": 0.0}
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "missing" and result["problem"] == "circle_packing"
    # A valid packing afterwards: both files replaced, the run's figures recorded.
    program = tmp_path / "solution.py"
    shutil.copy(task_dir("circle_packing_32") / "solution" / "solution.py", program)
    assert run(tests, program, out).startswith("valid: sum of radii 2.666666666666")
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "valid" and result["run"]["status"] == "ok"
    assert result["reward"] == result["raw_score"] == pytest.approx(32 / 12, abs=1e-12)
    assert result["limits"]["processes"] == 1 and result["submission"]["accepted"]
