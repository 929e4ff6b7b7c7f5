"""Execution evidence against a task's own code, handed back to construction as repair evidence.

The grader checks the task's generator, scorer and validator before it
grades (a failure: no reward, the failed check named on its stderr), and
holds the scorer and the validator to their contract on every output it
judges (a failure there scores the case 0 with status `judge_error`, the
reason in the case's detail and on stderr: a submission never makes its
own grading an error). When either shows inside a trial (the scorer raises
on a sample's real output, the validator returns something that is not a
bool), that is a finding about the candidate, exactly as a failed
self-check during construction is, so it must not be read as an
infrastructure error (retried on every resume, failing the same way each
time): the failed check, the verifier's output, the failing instance and
every program's per-case scores go back to construction as repair
evidence, within the candidate's repair budget. Only failures of the
infrastructure itself (the engine, the image build, a provider) stay errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from atoll.frontiersmith.taskcode import Finding, finding
from atoll.frontiersmith.trials import TrialOutcome

INSTANCE_CHARS = 1500  # of the failing instance's JSON, in the evidence
LOG_CHARS = 1500  # of the verifier's output
FAILURES_SHOWN = 3
_CASE = re.compile(r"the output of case (\d+)\b")


@dataclass(frozen=True)
class CodeFailure:
    """One check of the task's own code that failed in a trial."""

    label: str  # the trial: baseline, sample-1, empty-answer, reference, ...
    check: str  # the grader's name for the check
    detail: str
    case: int | None  # the graded case whose output it failed on, when it names one
    log: str  # the end of the verifier's output

    def to_json(self) -> dict[str, Any]:
        return {"trial": self.label, "check": self.check, "detail": self.detail, "case": self.case}


class CheckerFailed(Exception):
    """The task's own code failed in execution: evidence for construction, never an error."""

    def __init__(
        self, failures: Sequence[CodeFailure], outcomes: Mapping[str, TrialOutcome]
    ) -> None:
        self.failures = list(failures)
        self.outcomes = dict(outcomes)
        shown = "; ".join(f"{f.label}: {f.check}: {f.detail}" for f in self.failures[:2])
        super().__init__(f"the task's own code failed in execution ({shown})")


def code_failures(outcomes: Mapping[str, TrialOutcome]) -> list[CodeFailure]:
    """Every trial in which the grader found the task's own code failing."""
    found = []
    for label, outcome in outcomes.items():
        for index in outcome.judge_errors:  # graded 0, the grader's reason in the case's detail
            check, _, detail = outcome.cases[index].detail.partition(": ")
            found.append(CodeFailure(label, check, detail, index, outcome.log_tail))
        if outcome.checker_failure:  # no reward: a check of the task's code failed
            check, _, detail = outcome.checker_failure.partition(": ")
            case = _CASE.search(detail)
            found.append(
                CodeFailure(
                    label, check, detail, int(case.group(1)) if case else None, outcome.log_tail
                )
            )
    return found


def raise_on_code_failures(outcomes: Mapping[str, TrialOutcome]) -> None:
    """CheckerFailed when any trial shows the task's own code failing."""
    failures = code_failures(outcomes)
    if failures:
        raise CheckerFailed(failures, outcomes)


def repair_findings(failed: CheckerFailed, instances: Sequence[Any]) -> list[Finding]:
    """One finding per failed check, naming the files it implicates, with the evidence:
    the trial, the failing instance, the verifier's output and every program's scores."""
    by_check: dict[str, list[CodeFailure]] = {}
    for failure in failed.failures:
        by_check.setdefault(failure.check, []).append(failure)
    scores = score_vectors(failed.outcomes)
    found = []
    for check, failures in by_check.items():
        parts = [_one(f, instances) for f in failures[:FAILURES_SHOWN]]
        log = failures[0].log.strip()[-LOG_CHARS:]
        if log:
            parts.append(f"the verifier's output (end):\n{log}")
        parts.append(f"every program's per-case scores in execution:\n{scores}")
        implicated = finding(check, failures[0].detail).files
        found.append(Finding(check, "\n".join(parts), implicated))
    return found


def _one(failure: CodeFailure, instances: Sequence[Any]) -> str:
    text = f"in execution, on the real output of the {failure.label} program: {failure.detail}"
    if failure.case is not None and 0 <= failure.case < len(instances):
        instance = json.dumps(instances[failure.case], sort_keys=True)
        if len(instance) > INSTANCE_CHARS:
            instance = instance[:INSTANCE_CHARS] + " ...(cut)"
        text += f"\nthe failing instance (case {failure.case}): {instance}"
    return text


def score_vectors(outcomes: Mapping[str, TrialOutcome]) -> str:
    """Each trial's per-case scores and statuses, or why it has none, one line each."""
    lines = []
    for label, outcome in outcomes.items():
        if outcome.ok:
            scores = ", ".join(f"{s:.4g}" for s in outcome.scores)
            statuses = ", ".join(c.status for c in outcome.cases)
            lines.append(
                f"- {label}: reward {outcome.reward:.4g}, scores [{scores}], statuses [{statuses}]"
            )
        else:
            why = outcome.checker_failure or outcome.error or "no reward"
            lines.append(f"- {label}: no reward ({why[:300]})")
    return "\n".join(lines)
