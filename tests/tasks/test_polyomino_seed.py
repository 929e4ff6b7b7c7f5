"""The seed's recorded result is still what the judge says about the seed.

If the judge's semantics or the problem data change, this fails, and the
recorded result (which the search starts from) must be re-made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from atoll.judge.embedded import JudgeSetup

pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow
def test_recorded_seed_result_matches_the_judge(
    task_dir: Path, recorded: dict[str, Any], judge_state: Path
) -> None:
    source = (task_dir / "solution" / "solution.cpp").read_bytes()
    result = JudgeSetup(state_dir=judge_state).engine().judge(recorded["judge_problem_id"], source)
    assert result["status"] == "done"
    assert all(case["ok"] for case in result["cases"])
    assert result["score"] == pytest.approx(recorded["score"], abs=1e-9)
    assert result["scoreUnbounded"] == pytest.approx(recorded["raw_score"], abs=1e-9)
    ratios = [case["scoreRatio"] for case in result["cases"]]
    assert ratios == pytest.approx(recorded["ratios"], abs=1e-9)
