"""The `verifier` scorer: a candidate's score is what the task's own Harbor verifier writes.

A toy task whose tests/test.sh turns the program's output into the reward
file stands for any verifier: the scorer must read `reward` and `raw_score`
as Harbor reads them, hand the program in under the language's file name,
keep the verifier's last line as the message, and treat a verifier that
writes no usable reward file as an infrastructure failure, never a score.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from atoll.checker.verifier_scorer import VerifierScorer
from atoll.core.scoring import ScorerSetup, ScorerUnavailable, ScoreStatus, open_scorer

pytestmark = pytest.mark.slow

# The toy verifier: runs the program (whatever its file is called) and keeps its stdout as
# the reward file, then says what it did on its last line.
TEST_SH = """#!/bin/sh
set -eu
program=$(ls /workspace)
python3 "/workspace/$program" > /logs/verifier/out.json
[ -s /logs/verifier/out.json ] || { echo "nothing printed" >&2; exit 3; }
mv /logs/verifier/out.json /logs/verifier/reward.json
echo "verified $program"
"""


def prints(text: str) -> str:
    return f"print({text!r})\n"


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    task = tmp_path / "toy"
    (task / "tests").mkdir(parents=True)
    (task / "tests" / "test.sh").write_text(TEST_SH, encoding="utf-8")
    (task / "task.toml").write_text(
        "[verifier]\ntimeout_sec = 60.0\n[environment]\ncpus = 1\nmemory_mb = 1024\n",
        encoding="utf-8",
    )
    return task


def test_a_reward_with_a_raw_score_is_a_valid_candidate_with_both(toy):
    program = prints('{"reward": 2.5, "raw_score": 0.4}')
    with open_scorer("verifier", ScorerSetup(language="python", task_dir=toy)) as scorer:
        score = scorer.score(program)
    assert score.status is ScoreStatus.VALID
    assert (score.raw_score, score.reward) == (0.4, 2.5)
    assert score.message == "verified solution.py"
    assert score.receipt["scorer"] == "verifier"
    assert score.receipt["rewards"] == {"reward": 2.5, "raw_score": 0.4}
    assert score.receipt["submission_sha256"] == hashlib.sha256(program.encode()).hexdigest()
    assert len(score.receipt["tests_sha256"]) == 64


def test_a_bare_reward_is_the_raw_score_and_zero_is_invalid(toy):
    scorer = VerifierScorer(toy, "python")
    bare = scorer.score(prints('{"reward": 0.75}'))
    assert bare.status is ScoreStatus.VALID and bare.raw_score == bare.reward == 0.75
    zero = scorer.score(prints('{"reward": 0}'))
    assert zero.status is ScoreStatus.INVALID
    assert zero.raw_score is None and zero.reward == 0.0


def test_the_program_is_handed_in_under_its_languages_file_name(toy):
    score = VerifierScorer(toy, "cpp").score(prints('{"reward": 1.0}'))
    assert score.message == "verified solution.cpp"
    with pytest.raises(ValueError, match="python or cpp"):
        VerifierScorer(toy, "rust")


@pytest.mark.parametrize(
    ("program", "why"),
    [
        ("", "wrote no reward.json: nothing printed"),
        (prints('{"reward": "high"}'), "is not {'reward': number"),
        (prints('{"reward": 1.0, "raw_score": NaN}'), "is not {'reward': number"),
        (prints('{"raw_score": 1.0}'), "is not {'reward': number"),
        (prints("[1.0]"), "is not {'reward': number"),
        (prints("a reward of 1"), "cannot be read"),
    ],
)
def test_a_verifier_without_a_usable_reward_file_is_unavailable_not_a_score(toy, program, why):
    with pytest.raises(ScorerUnavailable, match=why.replace("{", r"\{").replace("[", r"\[")):
        VerifierScorer(toy, "python").score(program)


def test_a_task_without_a_verifier_script_is_refused_in_one_line(tmp_path):
    with pytest.raises(ValueError) as refused:
        VerifierScorer(tmp_path, "python")
    assert "test.sh: missing" in str(refused.value) and "\n" not in str(refused.value)


def test_a_closed_scorer_scores_nothing(toy):
    scorer = VerifierScorer(toy, "python")
    scorer.close()
    with pytest.raises(ScorerUnavailable, match="closed"):
        scorer.score(prints('{"reward": 1.0}'))
