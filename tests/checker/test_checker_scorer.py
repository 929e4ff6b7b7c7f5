"""The `checker` scorer: a search's candidates graded by the task's own test.sh in atoll's sandbox.

It must agree with the verifier exactly (same reward, same per-case scores),
keep the per-case record as the candidate's receipt, treat a program that
produced nothing usable as an invalid candidate (reward 0), and treat a broken
task or a cancelled grading as an infrastructure failure, never a score.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from atoll.checker import grade_task, layout
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


def unsigned(task: Path) -> Path:
    """The task with its bundle hash taken out: a hand-written task, graded as it is."""
    toml = task / "task.toml"
    lines = toml.read_text(encoding="utf-8").splitlines(keepends=True)
    toml.write_text("".join(x for x in lines if not x.startswith("bundle_hash")), encoding="utf-8")
    return task


def test_a_task_whose_grader_fails_its_self_check_is_unavailable_not_zero(example):
    unsigned(example)
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


def test_a_changed_bundle_is_refused_before_any_grading_and_an_intact_one_is_verified(example):
    intact = CheckerScorer(example)
    assert intact.bundle_hash == layout.verify(example).bundle_hash
    (example / "tests" / "scorer.py").write_text(
        (example / "tests" / "scorer.py").read_text() + "\n# changed\n", encoding="utf-8"
    )
    with pytest.raises(ValueError, match="does not match its hash") as refused:
        CheckerScorer(example)
    assert "\n" not in str(refused.value)
    assert CheckerScorer(unsigned(example)).bundle_hash is None  # hand-written: graded as it is


def test_the_verifier_timeout_reaches_the_box(example):
    toml = unsigned(example) / "task.toml"
    toml.write_text(
        toml.read_text().replace("timeout_sec = 276.0", "timeout_sec = 1.0", 1), encoding="utf-8"
    )
    scorer = CheckerScorer(example)
    assert scorer.phase.timeout_s == 1.0
    started = time.monotonic()
    with pytest.raises(ScorerUnavailable, match="wrote no scores"):
        scorer.score("import time\ntime.sleep(3)\n")
    assert time.monotonic() - started < 15


def test_the_box_memory_limit_reaches_the_box(example):
    toml = unsigned(example) / "task.toml"
    toml.write_text(toml.read_text().replace("memory_mb = 2048", "memory_mb = 8", 1), "utf-8")
    with pytest.raises(ScorerUnavailable):
        CheckerScorer(example).score(EMPTY_PLAN)


def test_a_work_dir_that_cannot_be_made_is_unavailable_and_a_new_one_is_made(example, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.raises(ScorerUnavailable, match="grader failed"):
        CheckerScorer(example, work_dir=blocked / "checker").score(EMPTY_PLAN)
    fresh = tmp_path / "state" / "checker"
    assert CheckerScorer(example, work_dir=fresh).score(EMPTY_PLAN).status is ScoreStatus.VALID
    assert [p.name for p in fresh.iterdir()] == []  # its grading's root is gone


def test_gradings_wait_for_a_cpu_so_no_more_run_than_the_host_has(example, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    toml = unsigned(example) / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 1", "cpus = 2", 1), encoding="utf-8")
    scorer = CheckerScorer(example)
    assert scorer.phase.concurrency == 1
    running, most = 0, 0
    lock = threading.Lock()
    grade = scorer.grade

    def counted(program: str):
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        try:
            return grade(program)
        finally:
            with lock:
                running -= 1

    monkeypatch.setattr(scorer, "grade", counted)
    threads = [threading.Thread(target=scorer.score, args=(EMPTY_PLAN,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1


CPP_EMPTY_PLAN = '#include <cstdio>\nint main() { std::puts("{\\"beacons\\": []}"); }\n'


@pytest.fixture
def cpp_example(example: Path) -> Path:
    """The example graded as a C++ task: its contract says cpp, its test.sh hands in solution.cpp."""
    example = unsigned(example)  # its grader is edited below: no longer the signed bundle
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
