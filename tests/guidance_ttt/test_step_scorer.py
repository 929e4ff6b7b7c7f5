"""The scorer against the real embedded FrontierCS judge: results, zero rewards and a judge that is down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.guidance_run import judge_scorer
from support.judge import JUDGE_PROGRAMS, small_judge
from support.ports import free_port

from atoll.guidance_ttt.contract import Direction, Language, TaskContract
from atoll.guidance_ttt.search.archive import Archive, Rollout, Selection
from atoll.guidance_ttt.search.scored_program import Entry, Status
from atoll.guidance_ttt.services.scorer import JudgeDown, judge_url, verification_of
from atoll.judge.client import outcome_from_result
from atoll.judge.scorer import score_of

CONTRACT = TaskContract(
    solution_language=Language.CPP,
    mechanism_constraint="Finish within the time limit.",
    objective="Pack the polyominoes into the smallest square.",
    raw_score_label="judge score",
    score_direction=Direction.MAX,
    solution_contract="a complete C++17 program reading stdin and writing stdout",
    judge_problem_id="0",
)

WRONG_OUTPUT = '#include <cstdio>\nint main() { std::puts("1 1"); return 0; }\n'


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with small_judge(tmp_path_factory.mktemp("judge")) as url:
        yield url


def test_valid_program_gets_its_score(judge):
    scorer = judge_scorer(judge, CONTRACT, deadline_s=120, poll_interval_s=0.05)
    result = scorer.score((JUDGE_PROGRAMS / "shelf.cpp").read_text())
    assert result.status is Status.VALID
    assert result.raw_score is not None and result.raw_score > 0
    assert 0 < result.reward <= 100


def test_a_compile_error_is_a_normal_zero_result(judge):
    scorer = judge_scorer(judge, CONTRACT, deadline_s=120, poll_interval_s=0.05)
    broken = scorer.score((JUDGE_PROGRAMS / "broken.cpp").read_text())
    assert broken.status is Status.COMPILE_ERROR
    assert broken.reward == 0 and broken.raw_score is None
    assert "compile" in broken.message


def test_a_program_the_judge_scored_zero_is_a_valid_candidate_of_value_zero(judge):
    scorer = judge_scorer(judge, CONTRACT, deadline_s=120, poll_interval_s=0.05)
    wrong = scorer.score(WRONG_OUTPUT)
    assert (wrong.status, wrong.raw_score, wrong.reward) == (Status.VALID, 0.0, 0.0)
    # It becomes a node and raises its parent's best-child value, as any finished verdict does.
    seed = Entry(program="int main(){}", summary="s", verification=wrong)
    archive = Archive.seeded(seed, Direction.MAX, 1)
    archive.apply_selection(Selection(0, 0, 0))
    child = archive.apply_rollout(Rollout(0, 0, 0, 0, wrong, "g", WRONG_OUTPUT, "wrong"))
    assert child is not None and archive.node(child).value == 0.0
    assert archive.node(0).m == 0.0


def test_the_receipt_names_the_submission_and_each_cases_result():
    cases = [
        {"case": 1, "ok": True, "status": "ok", "scoreRatio": 0.75, "msg": "Ratio: 0.75"},
        {"case": 2, "ok": False, "status": "wall_time_limit", "scoreRatio": 0.0, "msg": ""},
    ]
    body = {"status": "done", "passed": False, "score": 37.5, "cases": cases}
    verification = verification_of(score_of(outcome_from_result(7, body)))
    assert verification.receipt == {
        "scorer": "frontiercs-judge",
        "submission_id": 7,
        "case_scores": [0.75, 0.0],
        "statuses": ["ok", "wall_time_limit"],
    }
    invalid = score_of(outcome_from_result(8, {"status": "error", "error": "compile error: x"}))
    assert invalid.receipt == {"scorer": "frontiercs-judge", "submission_id": 8}


def test_the_raw_score_is_the_bounded_score_not_the_unbounded_one():
    body = {"status": "done", "passed": False, "score": 50.0, "scoreUnbounded": 130.0, "cases": []}
    verification = verification_of(score_of(outcome_from_result(7, body)))
    assert (verification.raw_score, verification.reward) == (50.0, 50.0)


def test_judge_that_is_down_stops_the_step_instead_of_scoring_zero():
    scorer = judge_scorer(f"http://127.0.0.1:{free_port()}", CONTRACT, deadline_s=5)
    with pytest.raises(JudgeDown, match="step stopped"):
        scorer.score(WRONG_OUTPUT)
    with pytest.raises(JudgeDown, match="/health"):
        scorer.check()


def test_judge_url_prefers_argument_then_environment(monkeypatch):
    monkeypatch.setenv("FRONTIERCS_JUDGE_URL", "http://judge.example:8081/")
    with judge_url() as url:
        assert url == "http://judge.example:8081"
    with judge_url("http://other:1") as url:
        assert url == "http://other:1"


def test_without_a_url_an_embedded_judge_runs_for_the_duration(monkeypatch, tmp_path):
    monkeypatch.delenv("FRONTIERCS_JUDGE_URL", raising=False)
    with judge_url(state_dir=tmp_path / "judge-state") as url:
        scorer = judge_scorer(url, CONTRACT)
        scorer.check()
    with pytest.raises(JudgeDown):
        scorer.check()
