"""What one scored program is: its verifier result and the archive entry that carries it.

These records are shared by the prompts (which show the verifier result), the
archive (which keeps entries) and the later step loop (which fills them from
the executor and the judge), so they live apart from all three. They convert
to and from plain JSON so that the archive's files stay readable.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """The outcome of one candidate. Only `valid` results with a raw score enter the archive."""

    VALID = "valid"
    INVALID = "invalid"
    COMPILE_ERROR = "compile_error"
    # Kept so that archives written before the judge's finished verdicts were all `valid` load.
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    PARSE_ERROR = "parse_error"
    GUIDANCE_REJECTED = "guidance_rejected"
    GUIDANCE_FAILED = "guidance_failed"


@dataclass(frozen=True)
class Verification:
    """A verifier's verdict on one program: status, raw score, reward, message and receipt.

    The receipt is what the task's scorer shows for its verdict (the checker's
    per-case scores, the judge's submission id); empty for verdicts no scorer gave.
    """

    status: Status
    raw_score: float | None
    reward: float
    message: str = ""
    receipt: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # NaN or infinity would break ordering and cannot be stored as JSON.
        if self.raw_score is not None and not math.isfinite(self.raw_score):
            raise ValueError(f"a raw score must be a finite number, got {self.raw_score!r}")
        if not math.isfinite(self.reward):
            raise ValueError(f"a reward must be a finite number, got {self.reward!r}")

    @property
    def scored(self) -> bool:
        """Valid and carrying a raw score: the only results that can become archive nodes."""
        return self.status is Status.VALID and self.raw_score is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "raw_score": self.raw_score,
            "reward": self.reward,
            "message": self.message,
            **({"receipt": self.receipt} if self.receipt else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verification:
        raw = data["raw_score"]
        return cls(
            status=Status(data["status"]),
            raw_score=None if raw is None else float(raw),
            reward=float(data["reward"]),
            message=str(data.get("message", "")),
            receipt=dict(data.get("receipt") or {}),
        )


@dataclass(frozen=True)
class Entry:
    """The content of an archive node: how it was made and what it scored."""

    program: str | None
    summary: str
    verification: Verification | None
    guidance: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def program_sha256(self) -> str | None:
        return program_digest(self.program) if self.program is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "summary": self.summary,
            "verification": None if self.verification is None else self.verification.to_json(),
            "guidance": self.guidance,
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        verification = data.get("verification")
        return cls(
            program=data.get("program"),
            summary=str(data.get("summary", "")),
            verification=None if verification is None else Verification.from_json(verification),
            guidance=data.get("guidance"),
            metadata=dict(data.get("metadata") or {}),
        )


def program_digest(program: str) -> str:
    """The sha256 that identifies a program in the archive (exact bytes, UTF-8)."""
    return hashlib.sha256(program.encode("utf-8")).hexdigest()
