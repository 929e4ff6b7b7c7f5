"""One case's outcome, as the judge reports it: the unit a judging machine hands back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from atoll.judge.verdict import CaseStatus


@dataclass(frozen=True)
class CaseOutcome:
    number: int  # 1-based, as the test files are named
    status: CaseStatus
    ratio: float
    unbounded: float
    cpu_seconds: float
    wall_seconds: float
    memory_bytes: int
    check_seconds: float
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.number,
            "ok": self.status is CaseStatus.OK,
            "status": self.status.value,
            "time": round(self.cpu_seconds * 1e9),  # ns, as the authority reports
            "wallTime": round(self.wall_seconds * 1e9),
            "memory": self.memory_bytes,  # bytes
            "checkTime": round(self.check_seconds * 1e9),
            "msg": self.message,
            "scoreRatio": self.ratio,
            "scoreRatioUnbounded": self.unbounded,
        }
