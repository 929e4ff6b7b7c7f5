"""The `verifier` scorer: a search's candidates scored by the task's own Harbor verifier.

For a hand-made task whose verifier computes its score itself (no judge, no
emitted bundle), the verifier is the only authority on a program's score, so
each candidate is handed to it exactly as a trial would hand it in: the task's
`tests/test.sh` runs in the verifier's box (`verifier_box`), and the score is
read back from the `reward.json` it writes, as Harbor reads it.

The reward file says how the candidate fared: `{"reward": R, "raw_score": S}`
is a valid candidate whose raw score is S (the number the task's raw-score
label names) and whose reward is R; a file without `raw_score` is a valid
candidate with raw score R when R > 0, and an invalid one (reward 0) when R is
0. A verifier that writes no reward file, or one that is not such an object,
is `ScorerUnavailable`: the task or the machine is broken, never the program.
The candidate's message is the verifier's last line of output.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from atoll.checker.verifier_box import VerifierBox, last_line, owned
from atoll.core.digests import tree_sha256
from atoll.core.sandbox import SandboxResult
from atoll.core.scoring import CandidateScore, ScorerSetup, ScorerUnavailable, ScoreStatus

__all__ = ["SCORER_NAME", "SUBMISSIONS", "VerifierScorer", "open_verifier_scorer", "score_of"]

SCORER_NAME = "verifier"
REWARD_FILE = "reward.json"
SUBMISSIONS = {"python": "solution.py", "cpp": "solution.cpp"}
MESSAGE_CHARS = 300


class VerifierScorer:
    """Scores programs with one task's verifier, one fresh box per program."""

    def __init__(self, task_dir: Path, language: str, *, work_dir: Path | None = None) -> None:
        if language not in SUBMISSIONS:
            raise ValueError(
                f"the verifier scorer takes {' or '.join(SUBMISSIONS)} programs, not {language!r}"
            )
        self.box = VerifierBox(
            Path(task_dir), SUBMISSIONS[language], scorer=SCORER_NAME, work_dir=work_dir
        )
        self.tests_sha256 = tree_sha256(self.box.tests_dir)

    def check(self) -> None:
        self.box.check()

    def close(self) -> None:
        self.box.close()

    def score(self, program: str) -> CandidateScore:
        """The verifier's verdict on one program, its reward file kept in the receipt."""
        with self.box.slots:
            rewards, line = self.box.run(program, _read_rewards)
        receipt = {
            "scorer": SCORER_NAME,
            "tests_sha256": self.tests_sha256,
            "submission_sha256": hashlib.sha256(program.encode("utf-8")).hexdigest(),
            "rewards": rewards,
        }
        return score_of(rewards, line, receipt)


def _read_rewards(logs: Path, result: SandboxResult) -> tuple[dict[str, Any], str]:
    """The verifier's reward file, checked, and its last line of output."""
    path = logs / REWARD_FILE
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ScorerUnavailable(
            f"the task's verifier wrote no {REWARD_FILE}: {last_line(result)}"
        ) from None
    except (OSError, ValueError) as exc:
        raise ScorerUnavailable(f"the task's {REWARD_FILE} cannot be read: {exc}") from None
    if (
        not isinstance(data, dict)
        or not _finite(data.get("reward"))
        or ("raw_score" in data and not _finite(data["raw_score"]))
    ):
        raise ScorerUnavailable(
            f"the task's {REWARD_FILE} is not {{'reward': number[, 'raw_score': number]}}: "
            f"{json.dumps(data)[:MESSAGE_CHARS]}"
        )
    output = (result.stdout or result.stderr).decode("utf-8", "replace").strip()
    line = output.splitlines()[-1] if output else ""
    return data, line[:MESSAGE_CHARS]


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def score_of(rewards: dict[str, Any], message: str, receipt: dict[str, Any]) -> CandidateScore:
    """A reward file as a candidate score (see the module's docstring)."""
    reward = float(rewards["reward"])
    raw = rewards.get("raw_score")
    if raw is not None:
        return CandidateScore(ScoreStatus.VALID, float(raw), reward, message, receipt)
    if reward > 0:
        return CandidateScore(ScoreStatus.VALID, reward, reward, message, receipt)
    return CandidateScore(ScoreStatus.INVALID, None, 0.0, message, receipt)


@contextmanager
def open_verifier_scorer(setup: ScorerSetup) -> Iterator[VerifierScorer]:
    """The verifier scorer of the task in `setup.task_dir`, for programs in `setup.language`."""
    if setup.task_dir is None:
        raise ValueError("the verifier scorer needs the task's directory (its tests/ verify)")
    work_dir = None if setup.state_dir is None else setup.state_dir / SCORER_NAME
    scorer = VerifierScorer(setup.task_dir, setup.language, work_dir=work_dir)
    with owned(work_dir, SCORER_NAME):
        try:
            scorer.check()
            yield scorer
        finally:
            scorer.close()
