"""The seed program a run starts from: the task's reference solution, scored by the run's judge.

A Harbor task ships its reference answer in `solution/` (the oracle installs
it); Guidance-TTT starts its search from that same program and its summary
(`solution/summary.txt`), so a task needs nothing beyond what Harbor already
expects plus `contract.json`. The seed is scored by the judge the run uses,
not taken from a stored number, so that its score is comparable with every
child's.
"""

from __future__ import annotations

from pathlib import Path

from atoll.guidance_ttt.contract import TaskContract
from atoll.guidance_ttt.entries import Entry
from atoll.guidance_ttt.step import ScoringService

SEED_DIR = "solution"
SUMMARY_FILE = "summary.txt"
NO_SUMMARY = "The task's reference solution; no summary of its approach was provided."


class SeedError(ValueError):
    """The task directory holds no usable seed program."""


def read_seed(task_dir: Path, contract: TaskContract, scorer: ScoringService | None) -> Entry:
    """The seed entry; scored with `scorer` when given (a fresh run), unscored otherwise."""
    program_path = task_dir / SEED_DIR / contract.solution_language.solution_file
    try:
        program = program_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SeedError(
            f"{program_path}: missing; a Guidance-TTT task needs a seed program there"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SeedError(f"{program_path}: cannot be read ({exc})") from None
    if not program.strip():
        raise SeedError(f"{program_path}: empty; the search needs a seed program to expand")
    try:
        summary = (task_dir / SEED_DIR / SUMMARY_FILE).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        summary = ""
    verification = None if scorer is None else scorer.score(program)
    return Entry(program=program, summary=summary or NO_SUMMARY, verification=verification)
