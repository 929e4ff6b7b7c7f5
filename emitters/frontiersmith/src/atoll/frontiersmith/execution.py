"""Execution: fresh Harbor trials decide whether a constructed candidate becomes a task.

For each candidate: a staging bundle (the real bundle writer, the real
grader in tests/) is run as fresh Harbor trials for a no-op (Harbor's `nop`
agent: no submission at all), an empty answer (a program that prints `{}`,
graded by the real grader, so a scorer that rewards an empty answer is
caught: the no-op alone never reaches the scorer), a silent answer (a
program that prints nothing), the baseline and every
sample; the best feasible sample becomes the reference, the final bundle is
written with it, and Harbor's own oracle runs that exact bundle once more.
Acceptance is the design's rule, checked on the per-case scores each trial's
verifier wrote:

- the no-op, the empty answer and the silent answer score exactly 0;
- the baseline, and at least two samples, are feasible on every case (a
  valid output that scores 0 counts);
- the feasible samples behave differently, measured as repo2rlenv does: for
  each pair, the mean over the cases of the distance between their scores; a
  pair is distinct when that is at least `--min-score-spread`, and at least
  `--min-execution-diversity` of the pairs must be;
- the reference beats the baseline and scores above 0;
- the oracle's run of the final bundle repeats the reference's per-case
  scores exactly.

A trial in which the grader finds the task's own code failing (its scorer
raises on a sample's real output, say) is evidence against the candidate,
not an error: `CheckerFailed` takes it back to construction as repair
evidence (`atoll.frontiersmith.evidence`). A trial that errs otherwise (no
reward, a broken environment) is retried once; an error is never read as a
low score. A trial with a case
that timed out is run again once alone (no other trial of the run at the
same time): a timeout under load is not evidence against a task. Cases that
time out even alone count as infeasible, and a rejection they cause says so
(`timed_out_alone`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_text
from atoll.frontiersmith.config import RunConfig
from atoll.frontiersmith.evidence import raise_on_code_failures
from atoll.frontiersmith.outcome import InfrastructureError, Reason, Rejected
from atoll.frontiersmith.trials import NOOP, ORACLE, HarborTrials, TrialOutcome

Progress = Callable[[str], None]
TRIAL_RETRIES = 1
EMPTY_ANSWER = "empty-answer"
# A submission that answers every instance with an empty object: it must score exactly 0.
EMPTY_ANSWER_PROGRAM = "import sys\n\nsys.stdin.read()\nprint('{}')\n"
SILENT_ANSWER = "silent-answer"
# A submission that reads the instance and prints nothing: it must score exactly 0 too.
SILENT_ANSWER_PROGRAM = "import sys\n\nsys.stdin.read()\n"
# The same two answers as C++ programs, for a C++ task (its grader takes only C++).
CPP_EMPTY_ANSWER_PROGRAM = (
    "#include <iostream>\n#include <iterator>\n#include <string>\n\nint main() {\n"
    "    std::string instance((std::istreambuf_iterator<char>(std::cin)), "
    "std::istreambuf_iterator<char>());\n"
    '    std::cout << "{}" << std::endl;\n    return 0;\n}\n'
)
CPP_SILENT_ANSWER_PROGRAM = (
    "#include <iostream>\n#include <iterator>\n#include <string>\n\nint main() {\n"
    "    std::string instance((std::istreambuf_iterator<char>(std::cin)), "
    "std::istreambuf_iterator<char>());\n"
    "    return 0;\n}\n"
)
ZERO_ANSWERS = {
    "python": {EMPTY_ANSWER: EMPTY_ANSWER_PROGRAM, SILENT_ANSWER: SILENT_ANSWER_PROGRAM},
    "cpp": {EMPTY_ANSWER: CPP_EMPTY_ANSWER_PROGRAM, SILENT_ANSWER: CPP_SILENT_ANSWER_PROGRAM},
}
SOURCE_NAMES = {"python": "solution.py", "cpp": "solution.cpp"}


@dataclass(frozen=True)
class Diversity:
    """How differently the feasible samples score: each pair's mean per-case distance."""

    pairs: list[tuple[int, int, float]]  # (sample i, sample j, mean |score_i - score_j|)
    min_score_spread: float  # a pair at least this far apart is distinct
    min_execution_diversity: float  # the share of pairs that must be distinct

    @property
    def distinct_fraction(self) -> float:
        if not self.pairs:
            return 0.0
        return sum(d >= self.min_score_spread for _, _, d in self.pairs) / len(self.pairs)

    @property
    def ok(self) -> bool:
        return bool(self.pairs) and self.distinct_fraction >= self.min_execution_diversity

    def to_json(self) -> dict[str, Any]:
        return {
            "pairs": [{"samples": [i, j], "mean_distance": d} for i, j, d in self.pairs],
            "distinct_fraction": self.distinct_fraction,
            "min_score_spread": self.min_score_spread,
            "min_execution_diversity": self.min_execution_diversity,
        }


@dataclass(frozen=True)
class Execution:
    """The trials' evidence, and which sample is the reference."""

    trials: dict[str, TrialOutcome]
    reference_index: int
    reference_reward: float
    diversity: Diversity

    def to_json(self) -> dict[str, Any]:
        return {
            "trials": {label: t.to_json() for label, t in self.trials.items()},
            "reference_sample": self.reference_index,
            "reference_reward": self.reference_reward,
            "baseline_reward": self.trials["baseline"].reward,
            "execution_diversity": self.diversity.to_json(),
        }


def solution_dir(
    root: Path, label: str, program: str, solve_sh: bytes, language: str = "python"
) -> Path:
    """A directory the program agent submits: solution.py (solution.cpp) and the bundle's
    own solve.sh."""
    directory = root / label
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / SOURCE_NAMES[language]
    atomic_write_text(source, program)
    source.chmod(0o644)
    (directory / "solve.sh").write_bytes(solve_sh)
    (directory / "solve.sh").chmod(0o755)
    return directory


async def trial(
    runner: HarborTrials,
    task_dir: Path,
    trials_dir: Path,
    label: str,
    owner: str,
    *,
    solution: Path | None = None,
    agent: str | None = None,
) -> TrialOutcome:
    """A trial, retried once on an infrastructure error; still failing is an error, not a score.

    A trial in which a case timed out is run again once alone; the second
    run's scores stand, and the outcome names the cases that timed out first.
    A trial whose verifier found the task's own code failing is returned as
    it is (its `checker_failure` says why): evidence, not an error to retry.
    """
    for attempt in range(TRIAL_RETRIES + 1):
        outcome = await runner.run(
            task_dir, trials_dir, label, solution_dir=solution, agent=agent, owner=owner
        )
        if outcome.ok and outcome.timed_out:
            first = outcome.timed_out
            outcome = await runner.run(
                task_dir,
                trials_dir,
                f"{label}-alone",
                solution_dir=solution,
                agent=agent,
                owner=owner,
                alone=True,
            )
            outcome = dataclasses.replace(outcome, label=label, timed_out_under_load=first)
        if outcome.ok or outcome.checker_failure:
            return outcome
        if attempt == TRIAL_RETRIES:
            raise InfrastructureError(
                "execution",
                Reason.EXECUTION_ERROR,
                f"the {label} trial failed twice ({outcome.error})",
            )
    raise AssertionError("unreachable")


async def run_programs(
    runner: HarborTrials,
    staging: Path,
    work: Path,
    owner: str,
    programs: dict[str, str],
    progress: Progress,
    language: str = "python",
) -> dict[str, TrialOutcome]:
    """The no-op, the empty answer and every program, each a fresh trial of the staging bundle.

    CheckerFailed when the task's own code failed in any of them.
    """
    solve_sh = (staging / "solution" / "solve.sh").read_bytes()
    trials_dir = work / "trials"
    programs = {**ZERO_ANSWERS[language], **programs}
    progress(f"execution: {len(programs) + 1} trials")
    labels = [NOOP, *programs]
    outcomes = await asyncio.gather(
        trial(runner, staging, trials_dir, NOOP, owner, agent=NOOP),
        *(
            trial(
                runner,
                staging,
                trials_dir,
                label,
                owner,
                solution=solution_dir(work / "programs", label, code, solve_sh, language),
            )
            for label, code in programs.items()
        ),
        return_exceptions=True,
    )
    done = {
        label: o for label, o in zip(labels, outcomes, strict=True) if isinstance(o, TrialOutcome)
    }
    raise_on_code_failures(done)  # evidence about the task first: its repair runs them all again
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return done


def choose_reference(
    outcomes: dict[str, TrialOutcome], samples: int, config: RunConfig
) -> tuple[int, Diversity]:
    """Apply the acceptance rules to the program trials; (reference sample, the samples'
    diversity) or Rejected."""
    for label, what in (
        (NOOP, "the no-op (no submission)"),
        (EMPTY_ANSWER, "an empty answer"),
        (SILENT_ANSWER, "a submission that prints nothing"),
    ):
        if label in outcomes and outcomes[label].reward != 0.0:
            raise Rejected(
                "execution",
                Reason.NOOP_NOT_ZERO,
                f"{what} scored {outcomes[label].reward!r}, not exactly 0",
            )
    baseline = outcomes["baseline"]
    if not baseline.feasible_everywhere:
        bad = [i for i, c in enumerate(baseline.cases) if not c.feasible]
        raise Rejected(
            "execution",
            _insufficient([baseline]),
            f"the baseline is infeasible on cases {bad[:8]}" + _timeouts_note([baseline]),
        )
    feasible = [i for i in range(samples) if outcomes[f"sample-{i}"].feasible_everywhere]
    if len(feasible) < 2:
        failed = [outcomes[f"sample-{i}"] for i in range(samples) if i not in feasible]
        raise Rejected(
            "execution",
            _insufficient(failed),
            f"{len(feasible)} of {samples} samples are feasible on every case; 2 needed"
            + _timeouts_note(failed),
        )
    diversity = execution_diversity(
        {i: outcomes[f"sample-{i}"].scores for i in feasible},
        config.min_score_spread,
        config.min_execution_diversity,
    )
    if not diversity.ok:
        distances = ", ".join(f"{i}-{j}: {d:.6g}" for i, j, d in diversity.pairs)
        raise Rejected(
            "execution",
            Reason.LOW_EXECUTION_DIVERSITY_OR_IMPROVEMENT,
            f"{diversity.distinct_fraction:.2f} of feasible sample pairs have a mean per-case "
            f"score distance of at least {config.min_score_spread:g}; at least "
            f"{config.min_execution_diversity:g} needed (mean distances {distances})",
            execution_diversity=diversity.to_json(),
        )
    best = max(feasible, key=lambda i: (outcomes[f"sample-{i}"].reward or 0.0, -i))
    reward = outcomes[f"sample-{best}"].reward or 0.0
    if reward <= (baseline.reward or 0.0) or reward <= 0.0:
        raise Rejected(
            "execution",
            Reason.LOW_EXECUTION_DIVERSITY_OR_IMPROVEMENT,
            f"the best sample ({reward:.6g}) does not beat the baseline "
            f"({baseline.reward:.6g}) with a score above 0",
        )
    return best, diversity


def _insufficient(failed: list[TrialOutcome]) -> Reason:
    """Too few feasible programs; `timed_out_alone` when cases timed out even run alone."""
    if any(o.timed_out for o in failed):
        return Reason.TIMED_OUT_ALONE
    return Reason.INSUFFICIENT_SUCCESSFUL_PROGRAMS


def _timeouts_note(failed: list[TrialOutcome]) -> str:
    timed = {o.label: o.timed_out for o in failed if o.timed_out}
    if not timed:
        return ""
    listed = "; ".join(f"{label} cases {cases[:8]}" for label, cases in timed.items())
    return f" (timed out even when run again alone: {listed})"


def execution_diversity(
    per_sample: dict[int, list[float]], min_score_spread: float, min_execution_diversity: float
) -> Diversity:
    """Every pair of samples' mean per-case score distance (repo2rlenv's measure)."""
    indices = sorted(per_sample)
    pairs = []
    for a, i in enumerate(indices):
        for j in indices[a + 1 :]:
            left, right = per_sample[i], per_sample[j]
            if not left or len(left) != len(right):
                raise ValueError(f"samples {i} and {j} were graded on different cases")
            distance = math.fsum(abs(x - y) for x, y in zip(left, right, strict=True))
            pairs.append((i, j, distance / len(left)))
    return Diversity(pairs, min_score_spread, min_execution_diversity)


async def repeat_reference(
    runner: HarborTrials,
    final: Path,
    work: Path,
    owner: str,
    reference: TrialOutcome,
) -> TrialOutcome:
    """Harbor's oracle on the final bundle must repeat the reference's per-case scores."""
    repeated = await trial(runner, final, work / "trials", "reference", owner, agent=ORACLE)
    raise_on_code_failures({"reference": repeated})
    if repeated.scores != reference.scores or repeated.reward != reference.reward:
        raise Rejected(
            "execution",
            Reason.REFERENCE_NOT_REPEATABLE,
            f"the reference scored {reference.scores} and then {repeated.scores}",
        )
    return repeated
