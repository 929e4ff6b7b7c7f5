"""A broken checker is an infrastructure error that names the failed check, never a score."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from atoll.checker import SelfCheckFailed, grade_task, grader_source, self_check

GOOD = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'x': 0.75}))\n"

SCORER_HEAD = "import math, random\n\ndef score(instance, output):\n"
SCORER_VALID = (
    "    if not isinstance(output, dict) or set(output) != {'x'}:\n"
    "        return 0.0\n"
    "    x = output['x']\n"
    "    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):\n"
    "        return 0.0\n"
)
VALIDATOR_HEAD = "import math\n\ndef is_feasible(instance, output):\n"
VALIDATOR_VALID = (
    "    if not isinstance(output, dict) or set(output) != {'x'}:\n"
    "        return False\n"
    "    x = output['x']\n"
    "    if isinstance(x, bool) or not isinstance(x, (int, float)):\n"
    "        return False\n"
)

BROKEN = {
    "generator uses the global RNG": (
        "generator.py",
        "import random\n\ndef generate(seed):\n    return [{'case': i, 'hint': random.random()} for i in range(3)]\n",
        "generator is deterministic and bounded at three seeds",
    ),
    "generator depends on hash order": (
        "generator.py",
        "def generate(seed):\n"
        "    names = {f'name-{i}' for i in range(40)}\n"
        "    return [{'case': i, 'order': list(names)} for i in range(3)]\n",
        "generator is deterministic across processes",
    ),
    "generator makes too many instances": (
        "generator.py",
        "def generate(seed):\n    return [{'case': i} for i in range(40)]\n",
        "generator is deterministic and bounded at three seeds",
    ),
    "generator returns no JSON": (
        "generator.py",
        "def generate(seed):\n    return [{'case': float('nan')} for i in range(3)]\n",
        "generator is deterministic and bounded at three seeds",
    ),
    "scorer returns 1.5": (
        "scorer.py",
        SCORER_HEAD + "    return 1.5\n",
        "scorer is in [0, 1]",
    ),
    "scorer returns NaN": (
        "scorer.py",
        SCORER_HEAD + SCORER_VALID + "    return float('nan') if x == 0.5 else 0.0\n",
        "scorer is finite",
    ),
    "scorer returns True": (
        "scorer.py",
        SCORER_HEAD + "    return True\n",
        "scorer returns a number",
    ),
    "scorer rewards an infeasible output": (
        "scorer.py",
        SCORER_HEAD + SCORER_VALID + "    return float(min(x, 1.0)) if x >= 0 else 0.0\n",
        "scorer gives 0 to infeasible outputs",
    ),
    "scorer is random": (
        "scorer.py",
        SCORER_HEAD
        + SCORER_VALID
        + "    return float(x) * random.random() if 0 <= x <= 1 else 0.0\n",
        "scorer is deterministic",
    ),
    "scorer raises on junk": (
        "scorer.py",
        SCORER_HEAD + "    return float(output['x']) if 0 <= output['x'] <= 1 else 0.0\n",
        "scorer runs",
    ),
    "validator rejects a valid zero-score output": (
        "feasibility.py",
        VALIDATOR_HEAD + VALIDATOR_VALID + "    return math.isfinite(x) and 0 < x <= 1\n",
        "validator accepts a valid zero-score output",
    ),
    "validator accepts junk": (
        "feasibility.py",
        VALIDATOR_HEAD + "    return True\n",
        "scorer and validator reject malformed outputs",
    ),
    "validator returns an int": (
        "feasibility.py",
        VALIDATOR_HEAD + "    return 0\n",
        "validator returns a bool",
    ),
    "a module imports a third-party package": (
        "scorer.py",
        "import numpy\n\ndef score(instance, output):\n    return 0.0\n",
        "modules import only the standard library",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_broken_checker_is_named(toy, program, case):
    filename, source, check = BROKEN[case]
    (toy / "tests" / filename).write_text(source)
    with pytest.raises(SelfCheckFailed) as failed:
        grade_task(toy, program(GOOD), out_dir=toy / "out")
    assert failed.value.check == check
    assert not any((toy / "out").iterdir())  # no reward file of any kind
    report = self_check(toy / "tests")
    assert not report.ok and report.failures[-1].name == check


def _examples(toy: Path, examples: list[dict]) -> None:
    contract = json.loads((toy / "tests" / "contract.json").read_text())
    contract["examples"] = examples
    (toy / "tests" / "contract.json").write_text(json.dumps(contract))


INSTANCE = {"case": 0, "hint": 1}
TOO_BIG = {"name": "too big", "instance": INSTANCE, "output": {"x": 2}, "feasible": False}


@pytest.mark.parametrize(
    "feasible",
    [
        [
            {
                "name": "half",
                "instance": INSTANCE,
                "output": {"x": 0.5},
                "feasible": True,
                "score": 0.5,
            }
        ],
        [
            {
                "name": "some",
                "instance": INSTANCE,
                "output": {"x": 0.3},
                "feasible": True,
                "score": None,
            }
        ],
        [{"name": "one", "instance": INSTANCE, "output": {"x": 1}, "feasible": True, "score": 1}],
    ],
    ids=["declared above 0", "score null", "declared 1"],
)
def test_feasible_examples_may_declare_any_score_or_none(toy, program, feasible):
    """A formula without a feasible zero (a ratio to a bound) is a valid contract."""
    _examples(toy, [*feasible, TOO_BIG | {"score": 0}])
    assert self_check(toy / "tests").ok
    assert grade_task(toy, program(GOOD)).reward == 0.75


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        ([TOO_BIG], "no feasible example"),
        (
            [{"name": "half", "instance": INSTANCE, "output": {"x": 0.5}, "feasible": True}],
            "no infeasible example",
        ),
    ],
    ids=["no feasible example", "no infeasible example"],
)
def test_a_contract_needs_a_feasible_and_an_infeasible_example(toy, program, examples, message):
    _examples(toy, examples)
    with pytest.raises(SelfCheckFailed, match=message):
        grade_task(toy, program(GOOD))


def test_the_scorer_is_held_to_a_declared_score_above_zero(toy, program):
    _examples(
        toy,
        [
            {"name": "half", "instance": INSTANCE, "output": {"x": 0.5}, "feasible": True,
             "score": 0.6},
            TOO_BIG,
        ],
    )  # fmt: skip
    with pytest.raises(SelfCheckFailed, match="which scores 0.6") as failed:
        grade_task(toy, program(GOOD))
    assert failed.value.check == "scorer agrees with the examples"


def test_the_verifier_command_exits_non_zero_with_one_line(toy, tmp_path):
    filename, source, check = BROKEN["scorer returns 1.5"]
    (toy / "tests" / filename).write_text(source)
    (toy / "tests" / "grader.py").write_bytes(grader_source())
    submission = tmp_path / "solution.py"
    submission.write_text(GOOD)
    out = toy / "out"
    out.mkdir()
    (out / "reward.txt").write_text("1.0\n")  # left by someone else: must not survive
    done = subprocess.run(
        [
            "/usr/bin/python3",
            "-I",
            str(toy / "tests" / "grader.py"),
            "grade",
            "--tests",
            str(toy / "tests"),
            "--submission",
            str(submission),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"checker error: self-check failed: {check}: "
        + "score returned 1.5 for malformed output null on instance 0"
    ]
    assert list(out.iterdir()) == []
    assert done.stdout == ""


def test_self_check_command(toy):
    (toy / "tests" / "grader.py").write_bytes(grader_source())
    done = subprocess.run(
        [
            "/usr/bin/python3",
            "-I",
            str(Path(toy / "tests" / "grader.py")),
            "self-check",
            "--tests",
            str(toy / "tests"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    checks = json.loads(done.stdout)
    assert all(c["ok"] for c in checks) and len(checks) == 7
