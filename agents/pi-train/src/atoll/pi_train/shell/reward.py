"""The reward of one `atoll pi train shell` trajectory: the gate's conditions, each recorded.

Four components and their conjunction, each logged per trajectory:

- `mutation`: the policy wrote or edited the program file with a tool;
- `execution`: a run of that program, after a mutation, exited 0;
- `exact_output`: such a run's last non-empty stdout line is the answer
  (compared as atoll-euler's gate compares: exact after trimming, a
  typographic minus and thousands separators read as in the gate);
- `answer`: the final response states the answer;
- `conjunction`: all four, and no path-audit hit.

Reward = `CONJUNCTION_WEIGHT` x conjunction + `COMPONENT_WEIGHT` x each
component: the conjunction dominates, the small component terms give a
group something to rank before anyone solves a task. A trajectory the path
audit caught scores 0 whatever it did, as in the Docker evaluation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from atoll.pi_train.euler_source import equals, final_nonempty_line, stated_in
from atoll.pi_train.shell.episode import Episode

CONJUNCTION_WEIGHT = 1.0
COMPONENT_WEIGHT = 0.1
COMPONENTS = ("mutation", "execution", "exact_output", "answer")


@dataclass(frozen=True)
class ShellOutcome:
    mutation: bool
    execution: bool
    exact_output: bool
    answer: bool
    conjunction: bool
    disqualified: bool
    reward: float

    def metrics(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def score(episode: Episode, response: str, expected: str) -> ShellOutcome:
    """The outcome of `episode` whose final response is `response`, for the answer `expected`."""
    runs = [e for e in episode.executions if e.after_mutation > 0]
    succeeded = [e for e in runs if e.exit_code == 0]
    exact = any(equals(final_nonempty_line(e.stdout), expected) for e in succeeded)
    parts = {
        "mutation": episode.mutations > 0,
        "execution": bool(succeeded),
        "exact_output": exact,
        "answer": stated_in(response, expected),
    }
    disqualified = bool(episode.audit_hits)
    conjunction = all(parts.values()) and not disqualified
    reward = 0.0
    if not disqualified:
        reward = CONJUNCTION_WEIGHT * conjunction + COMPONENT_WEIGHT * sum(parts.values())
    return ShellOutcome(**parts, conjunction=conjunction, disqualified=disqualified, reward=reward)


def weights() -> dict[str, Any]:
    """The reward's definition, for the run manifest."""
    return {
        "conjunction": CONJUNCTION_WEIGHT,
        **{name: COMPONENT_WEIGHT for name in COMPONENTS},
        "disqualified": 0.0,
    }
