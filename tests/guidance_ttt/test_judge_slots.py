"""`judge_concurrency = "judge"`: a step scores as many programs at once as the judge says it can."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.judge import small_judge

from atoll.guidance_ttt.config import ConfigError, load_config
from atoll.guidance_ttt.search.judge_slots import judge_slots
from atoll.guidance_ttt.services.scorer import Scorer
from atoll.judge.scorer import JudgeScorer


def test_judge_follows_the_worker_budget_the_judge_reports(tmp_path: Path) -> None:
    config = load_config(None, {"judge_concurrency": "judge"})
    with small_judge(tmp_path) as url:  # a judge of two workers
        scorer = Scorer(JudgeScorer(url, "0", "cpp"))
        try:
            assert judge_slots(config.judge_concurrency, scorer) == 2
        finally:
            scorer.close()
    assert judge_slots(load_config(None, {"judge_concurrency": 3}).judge_concurrency, scorer) == 3


def test_judge_with_a_scorer_that_reports_no_budget_is_one_clear_error() -> None:
    class Grader:  # a scorer with no worker budget to report (as the checker's)
        def close(self) -> None: ...

    with pytest.raises(ConfigError, match=r"needs a scorer that reports its worker budget"):
        judge_slots("judge", Scorer(Grader()))  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [0, "cores"])
def test_judge_concurrency_is_a_positive_number_or_judge(value: object) -> None:
    with pytest.raises(ConfigError, match="judge_concurrency"):
        load_config(None, {"judge_concurrency": value})
