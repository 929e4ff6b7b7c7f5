"""A task's published records and score direction, read from its task.toml.

Each discovery task lists, under `[[metadata.records]]`, the results it is
compared with (`value`, `by`, `source`: the repository and file that state
it), best known first, and says in `[metadata]` which way is better
(`score_direction`) and what the raw score is (`raw_score_label`). Any other
task may carry the same fields; one without records simply has none to
compare with.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Record", "RecordsError", "TaskFacts", "gap", "task_facts"]


class RecordsError(ValueError):
    """A task.toml whose records or direction cannot be read; the message says what to fix."""


@dataclass(frozen=True)
class Record:
    """One published result: its value, who got it, and where it is stated."""

    value: float
    by: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "by": self.by, "source": self.source}


@dataclass(frozen=True)
class TaskFacts:
    """What the suite needs to know of a task to compare a search with its records."""

    direction: str  # "max" or "min"
    raw_score_label: str
    seed_score: float | None
    records: tuple[Record, ...]


def task_facts(task_dir: Path) -> TaskFacts:
    """The direction, label, recorded seed score and records in `task_dir`/task.toml."""
    path = task_dir / "task.toml"
    try:
        metadata = tomllib.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RecordsError(f"{path}: cannot be read ({exc})") from None
    direction = metadata.get("score_direction", "max")
    if direction not in ("max", "min"):
        raise RecordsError(f"{path}: metadata.score_direction must be 'max' or 'min'")
    records = []
    for index, entry in enumerate(metadata.get("records", [])):
        try:
            value = float(entry["value"])
            by, source = str(entry["by"]), str(entry["source"])
        except (KeyError, TypeError, ValueError):
            raise RecordsError(
                f"{path}: metadata.records[{index}] needs a number 'value', 'by' and 'source'"
            ) from None
        if not math.isfinite(value):
            raise RecordsError(f"{path}: metadata.records[{index}].value is not finite")
        records.append(Record(value, by, source))
    seed = metadata.get("seed_score")
    return TaskFacts(
        direction=direction,
        raw_score_label=str(metadata.get("raw_score_label", "score")),
        seed_score=float(seed) if isinstance(seed, int | float) else None,
        records=tuple(records),
    )


def gap(direction: str, best: float, record: float) -> float:
    """How far `best` is short of `record` in the task's direction (negative: it beats it)."""
    return record - best if direction == "max" else best - record
