"""The `checker` scorer: a search's candidates graded by the task's own test.sh in atoll's sandbox.

It must agree with the verifier exactly (same reward, same per-case scores),
keep the per-case record as the candidate's receipt, treat a program that
produced nothing usable as an invalid candidate (reward 0), and treat a broken
task or a cancelled grading as an infrastructure failure, never a score.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from atoll.checker import grade_task
from atoll.checker.scorer import CheckerScorer, open_checker_scorer
from atoll.core.scoring import ScorerSetup, ScorerUnavailable, ScoreStatus, open_scorer
from atoll.judge.compiler import COMPILE_LIMITS, FLAGS

pytestmark = pytest.mark.slow

EMPTY_PLAN = "import json\nprint(json.dumps({'beacons': []}))\n"


@pytest.fixture
def example(repo: Path, tmp_path: Path) -> Path:
    task = tmp_path / "frontiersmith-example"
    shutil.copytree(repo / "tasks" / "frontiersmith-example", task)
    return task


def test_the_reference_scores_exactly_what_the_verifier_reports(example, tmp_path):
    reference = example / "solution" / "solution.py"
    verifier = grade_task(example, reference)
    with open_scorer("checker", ScorerSetup(language="python", task_dir=example)) as scorer:
        score = scorer.score(reference.read_text())
    assert score.status is ScoreStatus.VALID
    assert score.raw_score == score.reward == verifier.reward
    assert score.receipt["case_scores"] == verifier.scores
    assert score.receipt["statuses"] == ["ok"] * len(verifier.cases)
    assert score.receipt["bundle_hash"].startswith("sha256:")
    assert f"{len(verifier.cases)} cases: {len(verifier.cases)} ok" in score.message


def test_a_feasible_empty_plan_is_a_valid_candidate_of_score_zero(example):
    score = CheckerScorer(example).score(EMPTY_PLAN)
    assert (score.status, score.raw_score, score.reward) == (ScoreStatus.VALID, 0.0, 0.0)
    assert set(score.receipt["statuses"]) == {"ok"}


def test_a_program_that_never_runs_is_invalid_with_reward_zero(example):
    score = CheckerScorer(example).score("def broken(:\n")
    assert (score.status, score.raw_score, score.reward) == (ScoreStatus.INVALID, None, 0.0)
    assert set(score.receipt["statuses"]) == {"crash"}
    assert "crash" in score.message and "SyntaxError" in score.message


def test_a_task_whose_grader_fails_its_self_check_is_unavailable_not_zero(example):
    (example / "tests" / "scorer.py").write_text(
        "def score(instance, output):\n    return 2.0\n", encoding="utf-8"
    )
    with pytest.raises(ScorerUnavailable, match="self-check failed"):
        CheckerScorer(example).score(EMPTY_PLAN)


def test_closing_the_scorer_stops_a_grading_in_flight(example):
    scorer = CheckerScorer(example)
    slow = "import time\ntime.sleep(4)\n"  # 4 s per instance: a minute for the whole grading
    threading.Timer(2.0, scorer.close).start()
    started = time.monotonic()
    with pytest.raises(ScorerUnavailable):
        scorer.score(slow)
    assert time.monotonic() - started < 20
    with pytest.raises(ScorerUnavailable, match="closed"):
        scorer.score(EMPTY_PLAN)


def test_the_search_contract_must_name_the_language_the_grader_takes(example):
    with (
        pytest.raises(ValueError, match="takes python programs"),
        open_checker_scorer(ScorerSetup(language="cpp", task_dir=example)),
    ):
        pass
    with (
        pytest.raises(ValueError, match="task's directory"),
        open_checker_scorer(ScorerSetup(language="python")),
    ):
        pass


CPP_EMPTY_PLAN = '#include <cstdio>\nint main() { std::puts("{\\"beacons\\": []}"); }\n'


@pytest.fixture
def cpp_example(example: Path) -> Path:
    """The example graded as a C++ task: its contract says cpp, its test.sh hands in solution.cpp."""
    contract_path = example / "tests" / "contract.json"
    contract = json.loads(contract_path.read_text())
    names = ("cpu_seconds", "wall_seconds", "memory_bytes", "processes", "open_files")
    limits = {name: getattr(COMPILE_LIMITS, name) for name in names}
    compile_ = {"flags": list(FLAGS), "limits": limits}
    contract_path.write_text(json.dumps(contract | {"language": "cpp", "compile": compile_}))
    script = example / "tests" / "test.sh"
    script.write_text(script.read_text().replace("solution.py", "solution.cpp"))
    return example


def test_a_cpp_candidate_is_compiled_and_graded_by_the_tasks_grader(cpp_example):
    with open_scorer("checker", ScorerSetup(language="cpp", task_dir=cpp_example)) as scorer:
        valid = scorer.score(CPP_EMPTY_PLAN)
        broken = scorer.score("int main() { return missing; }\n")
    assert (valid.status, valid.raw_score) == (ScoreStatus.VALID, 0.0)
    assert set(valid.receipt["statuses"]) == {"ok"}
    assert (broken.status, broken.reward) == (ScoreStatus.INVALID, 0.0)
    assert set(broken.receipt["statuses"]) == {"crash"}
    assert "compilation failed" in broken.message and "missing" in broken.message
