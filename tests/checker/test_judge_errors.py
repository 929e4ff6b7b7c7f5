"""A submission can never make its own grading an infrastructure error.

Whatever the task's scorer or validator does on a submission's parsed output
(raise, exit, run past its time, return something outside its contract),
that case scores 0 with status `judge_error` and the reason in its detail
and on the grader's stderr; the other cases are graded as usual and the
reward is written. The task's own self-check (before any submission runs)
still stops the grading as an error. Construction's fuzz, run with the
self-check, shows beforehand that the scorer and the validator return a
verdict on malformed outputs derived from each feasible example.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from atoll.checker import JUDGE_ERROR, grade_task, grader_source, self_check
from atoll.checker import grader as grader_module
from atoll.checker.grader import FUZZ_DEPTH, FUZZ_HUGE, fuzzed_outputs

# 0.75 on the first instance, 0.5 on the others: the task's code fails only on the first output.
PROGRAM = (
    "import json, sys\ninstance = json.load(sys.stdin)\n"
    "print(json.dumps({'x': 0.75 if instance['case'] == 0 else 0.5}))\n"
)
SCORER = (
    "import math, sys, time\n\n"
    "def score(instance, output):\n"
    "    if not isinstance(output, dict) or set(output) != {'x'}:\n"
    "        return 0.0\n"
    "    x = output['x']\n"
    "    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):\n"
    "        return 0.0\n"
    "    if x == 0.75:\n"
    "        ON_075\n"
    "    return float(x) if 0 <= x <= 1 else 0.0\n"
)
VALIDATOR = (
    "import math\n\n"
    "def is_feasible(instance, output):\n"
    "    if not isinstance(output, dict) or set(output) != {'x'}:\n"
    "        return False\n"
    "    x = output['x']\n"
    "    if isinstance(x, bool) or not isinstance(x, (int, float)):\n"
    "        return False\n"
    "    if x == 0.75:\n"
    "        ON_075\n"
    "    return math.isfinite(x) and 0 <= x <= 1\n"
)
FAILING = {
    "scorer raises": ("scorer.py", "raise ValueError('no score for 0.75')", "scorer runs"),
    "scorer exits": ("scorer.py", "sys.exit(3)", "scorer runs"),
    "scorer out of range": ("scorer.py", "return 2.0", "scorer is in [0, 1]"),
    "scorer not finite": ("scorer.py", "return float('nan')", "scorer is finite"),
    "scorer past its time": ("scorer.py", "time.sleep(30)", "scorer runs"),
    "validator raises": ("feasibility.py", "raise KeyError('x')", "validator runs"),
    "validator returns None": ("feasibility.py", "return None", "validator returns a bool"),
}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_the_case_scores_0_with_the_reason(toy, program, monkeypatch, case) -> None:
    filename, line, check = FAILING[case]
    source = (SCORER if filename == "scorer.py" else VALIDATOR).replace("ON_075", line)
    (toy / "tests" / filename).write_text(source)
    monkeypatch.setattr(grader_module, "JUDGE_SECONDS", 1.0)  # "past its time" in a second
    assert self_check(toy / "tests").ok  # the task passes every check before grading
    report = grade_task(toy, program(PROGRAM), out_dir=toy / "out")
    first, *others = report.cases
    assert (first.status, first.score, first.feasible) == (JUDGE_ERROR, 0.0, False)
    assert first.detail.startswith(f"{check}: ") and "for the output of case 0" in first.detail
    assert first.detail.endswith('the output: {"x": 0.75}')
    assert [(c.status, c.score) for c in others] == [("ok", 0.5), ("ok", 0.5)]
    assert report.reward == pytest.approx(1 / 3)
    assert json.loads((toy / "out" / "reward.json").read_text()) == {"reward": report.reward}


def test_the_grader_logs_it_and_exits_0(toy, tmp_path) -> None:
    (toy / "tests" / "scorer.py").write_text(
        SCORER.replace("ON_075", "raise ValueError('no score for 0.75')")
    )
    (toy / "tests" / "grader.py").write_bytes(grader_source())
    submission = tmp_path / "solution.py"
    submission.write_text(PROGRAM)
    done = subprocess.run(
        ["/usr/bin/python3", "-I", str(toy / "tests" / "grader.py"), "grade",
         "--tests", str(toy / "tests"), "--submission", str(submission), "--out", str(toy / "out")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "grader: case 0 scores 0: scorer runs: ValueError: no score for 0.75 for the output of "
        'case 0; the output: {"x": 0.75}'
    ]
    scores = json.loads((toy / "out" / "scores.json").read_text())
    assert scores["counts"][JUDGE_ERROR] == 1 and scores["grader_version"] == "2"


def test_a_failed_self_check_still_stops_the_grading(toy, program) -> None:
    """The task's code failing on the grader's own inputs, before any submission ran."""
    (toy / "tests" / "scorer.py").write_text(SCORER.replace("ON_075", "pass").replace(
        "    if not isinstance(output, dict) or set(output) != {'x'}:\n        return 0.0\n", ""
    ))  # fmt: skip
    with pytest.raises(grader_module.SelfCheckFailed) as failed:
        grade_task(toy, program(PROGRAM), out_dir=toy / "out")
    assert failed.value.check == "scorer runs"
    assert not any((toy / "out").iterdir())


FEASIBLE = {"take": [0, 2], "cost": 3.5, "plan": {"a": 1}}


def test_fuzzed_outputs_cover_every_kind_and_leave_the_example_alone() -> None:
    original = json.loads(json.dumps(FEASIBLE))
    fuzzed = fuzzed_outputs(FEASIBLE)
    assert original == FEASIBLE
    changes = "\n".join(change for change, _ in fuzzed)
    for kind in (
        'the output["take"] := null',  # wrong types
        'the output["cost"] := "x"',
        'the output["plan"] := []',
        'the output["take"][0] := true',
        'the output without "take"',  # missing and extra keys
        'the output["plan"] without "a"',
        "the output with an extra key",
        'the output["take"] := []',  # empty, longer and huge lists
        'the output["take"] one element longer',
        f'the output["take"] of {FUZZ_HUGE} elements',
        'the output["cost"] := NaN',  # NaN and infinities
        'the output["take"][1] := Infinity',
        'the output["cost"] := -Infinity',
        'the output["take"][0] := -1',  # negative and out-of-range values
        'the output["cost"] := 1000000000000000000',
        'the output["cost"] := 1e+308',
        f'the output["plan"] nested {FUZZ_DEPTH} lists deep',  # deep nesting
    ):
        assert kind in changes, kind
    by_change = dict(fuzzed)
    assert by_change['the output without "take"'] == {"cost": 3.5, "plan": {"a": 1}}
    assert len(by_change[f'the output["take"] of {FUZZ_HUGE} elements']["take"]) == FUZZ_HUGE
    same = json.dumps(FEASIBLE, sort_keys=True)
    assert all(json.dumps(output, sort_keys=True) != same for output in by_change.values())


@pytest.mark.parametrize(
    ("scorer", "check", "change"),
    [
        (
            SCORER.replace(
                "    if isinstance(x, bool) or not isinstance(x, (int, float)) or not "
                "math.isfinite(x):\n        return 0.0\n",
                "",
            ).replace("ON_075", "pass"),
            "scorer runs",
            'the output["x"] := null',
        ),
        (
            SCORER.replace(
                " or not math.isfinite(x):\n        return 0.0\n",
                ":\n        return 0.0\n    if not math.isfinite(x):\n        return 1.0\n",
            ).replace("ON_075", "pass"),
            "scorer gives 0 to infeasible outputs",
            'the output["x"] := NaN',
        ),
    ],
    ids=["raises on a mistyped field", "rewards NaN"],
)
def test_the_fuzz_finds_what_the_self_check_alone_does_not(toy, scorer, check, change) -> None:
    (toy / "tests" / "scorer.py").write_text(scorer)
    assert self_check(toy / "tests").ok
    report = self_check(toy / "tests", fuzz=True)
    failed = report.failures[-1]
    assert failed.name == check
    assert f"the fuzzed output of example 'zero' with {change}" in failed.detail


EXAMPLE = Path(__file__).parents[2] / "tasks" / "frontiersmith-example"


def test_sound_tasks_pass_the_fuzz(toy) -> None:
    for tests in (toy / "tests", EXAMPLE / "tests"):
        report = self_check(tests, fuzz=True)
        assert report.ok, report.failures
        assert report.checks[-1].name == "scorer and validator judge fuzzed outputs"


def test_self_check_command_with_fuzz(toy) -> None:
    (toy / "tests" / "grader.py").write_bytes(grader_source())
    done = subprocess.run(
        ["/usr/bin/python3", "-I", str(toy / "tests" / "grader.py"), "self-check",
         "--tests", str(toy / "tests"), "--json", "--fuzz"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    checks = json.loads(done.stdout)
    assert all(c["ok"] for c in checks) and len(checks) == 8
