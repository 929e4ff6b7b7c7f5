"""Builders shared by the Guidance-TTT core tests: a task directory, entries and rollouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atoll.guidance_ttt.search.archive import Rollout
from atoll.guidance_ttt.search.scored_program import Entry, Status, Verification

CONTRACT: dict[str, Any] = {
    "solution_language": "cpp",
    "mechanism_constraint": "Every mechanism must finish within the 10 second time limit.",
    "objective": "Pack as many polyomino cells as possible into the grid.",
    "raw_score_label": "packing density",
    "score_direction": "max",
    "solution_contract": "a complete C++17 program reading stdin, writing stdout",
    "judge_problem_id": "0",
}

STATEMENT = "Place the given polyominoes on an N by N grid without overlap.\nMaximise coverage."


def write_task(
    directory: Path, contract: dict[str, Any] | None = None, statement: str = STATEMENT
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "instruction.md").write_text(statement + "\n", encoding="utf-8")
    (directory / "contract.json").write_text(json.dumps(contract or CONTRACT), encoding="utf-8")
    return directory


def valid(raw: float, message: str = "ok") -> Verification:
    return Verification(Status.VALID, raw, reward=raw / 100.0, message=message)


def failed(status: Status = Status.COMPILE_ERROR, message: str = "error") -> Verification:
    return Verification(status, None, reward=0.0, message=message)


def entry(program: str, raw: float | None, summary: str = "a greedy packer") -> Entry:
    verification = valid(raw) if raw is not None else failed()
    return Entry(program=program, summary=summary, verification=verification)


def rollout(
    step: int,
    group: int,
    index: int,
    parent: int,
    raw: float | None,
    program: str | None = None,
    status: Status | None = None,
) -> Rollout:
    verification = valid(raw) if raw is not None else failed(status or Status.COMPILE_ERROR)
    if program is None:
        program = f"int main() {{ return {step * 1000 + group * 100 + index}; }}\n"
    return Rollout(
        step=step,
        group=group,
        rollout=index,
        parent_id=parent,
        verification=verification,
        guidance="try a different order",
        program=program,
        summary=f"variant {step}/{group}/{index}",
    )
