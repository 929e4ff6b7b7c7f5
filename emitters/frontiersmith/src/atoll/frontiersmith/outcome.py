"""What became of one seed: accepted, rejected for a coded reason, or stopped by an error.

A rejection is a finding about the candidate (its formulation, its
programs, its tests). An error is a finding about the infrastructure (the
provider, Harbor, the grader) and is never evidence about the task: it is
reported apart, and a resumed run tries the seed again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

# The stages in order, as the funnel counts them (a seed "reached" a stage if it started it).
FUNNEL = (
    "mutate",
    "filter",
    "programs",
    "divergence",
    "construction",
    "execution",
    "rollout",
    "export",
)


class Status(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    ERROR = "error"


class Reason(StrEnum):
    ACCEPTED = "accepted"
    # rejections: findings about the candidate
    FORMULATION_REJECTED = "formulation_rejected"
    LOW_SEMANTIC_DIVERGENCE = "low_semantic_divergence"
    INSUFFICIENT_SUCCESSFUL_PROGRAMS = "insufficient_successful_programs"
    # too few feasible programs, because cases timed out even when their trial ran again alone
    TIMED_OUT_ALONE = "timed_out_alone"
    LOW_EXECUTION_DIVERSITY_OR_IMPROVEMENT = "low_execution_diversity_or_improvement"
    REFERENCE_NOT_REPEATABLE = "reference_not_repeatable"
    NOOP_NOT_ZERO = "noop_not_zero"
    # the task's checker still disagrees with the worked example its instruction publishes
    EXAMPLE_DISAGREES_WITH_CHECKER = "example_disagrees_with_checker"
    INFRASTRUCTURE_REPAIR_EXHAUSTED = "infrastructure_repair_exhausted"
    INVALID_MODEL_OUTPUT = "invalid_model_output"
    # errors: findings about the infrastructure, retried on resume
    PROVIDER_REJECTED = "provider_rejected"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    REQUEST_UNCERTAIN = "request_uncertain"  # an answer lost after sending: reconcile, resume
    EXECUTION_ERROR = "execution_error"
    EXPORT_ERROR = "export_error"


ERRORS = frozenset(
    {
        Reason.PROVIDER_REJECTED,
        Reason.PROVIDER_UNAVAILABLE,
        Reason.REQUEST_UNCERTAIN,
        Reason.EXECUTION_ERROR,
        Reason.EXPORT_ERROR,
    }
)


class Rejected(Exception):
    """A candidate fails an acceptance rule: the seed ends with this reason."""

    def __init__(self, stage: str, reason: Reason, detail: str, **evidence: Any) -> None:
        self.stage = stage
        self.reason = reason
        self.detail = detail
        self.evidence = evidence
        super().__init__(f"{stage}: {reason}: {detail}")


class InfrastructureError(Exception):
    """Something outside the candidate failed: the seed ends as an error, not a rejection."""

    def __init__(self, stage: str, reason: Reason, detail: str) -> None:
        self.stage = stage
        self.reason = reason
        self.detail = detail
        super().__init__(f"{stage}: {reason}: {detail}")


@dataclass
class Tally:
    """What one seed used: model requests, invalid answers, repairs, money and time."""

    requests: int = 0
    replayed: int = 0
    invalid_outputs: int = 0
    repairs: int = 0
    cost_micro: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0
    worker_seconds: float = 0.0
    trials: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)  # wall time spent in each stage

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Outcome:
    seed_id: str
    family: str
    status: Status
    reason: Reason
    stage: str
    detail: str
    reached: list[str]
    tally: Tally
    wall_seconds: float
    evidence: dict[str, Any] = field(default_factory=dict)
    task: dict[str, Any] | None = None
    rollout: dict[str, Any] | None = None
    # the seed's round and, from round 2 on, the task it came from (`lineage.Lineage`)
    lineage: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        data["reason"] = str(self.reason)
        return data
