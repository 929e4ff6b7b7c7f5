"""The seed program a run starts from: the task's baseline, else its reference solution.

A Harbor task ships its reference answer in `solution/` (the oracle installs
it), outside what the learner sees. A task may also ship there a simpler
baseline program (`solution/baseline.<ext>`, as FrontierSmith's diversity
stage writes one); the search then starts from the baseline, so that what it
finds can be measured against the reference instead of starting from it.
Without a baseline it starts from the reference program. Either comes with
its summary (`solution/baseline-summary.txt`, `solution/summary.txt`), so a task needs nothing beyond what
Harbor already expects plus `contract.json`. The seed is scored by the scorer
the run uses, not taken from a stored number, so that its score is comparable
with every child's.
"""

from __future__ import annotations

from pathlib import Path

from atoll.guidance_ttt.contract import TaskContract
from atoll.guidance_ttt.search.scored_program import Entry
from atoll.guidance_ttt.search.step import ScoringService

SEED_DIR = "solution"
SUMMARY_FILE = "summary.txt"
BASELINE_STEM = "baseline"
BASELINE_SUMMARY_FILE = "baseline-summary.txt"
NO_SUMMARY = "The task's reference solution; no summary of its approach was provided."
NO_BASELINE_SUMMARY = "The task's baseline program; no summary of its approach was provided."


class SeedError(ValueError):
    """The task directory holds no usable seed program."""


def read_seed(task_dir: Path, contract: TaskContract, scorer: ScoringService | None) -> Entry:
    """The seed entry; scored with `scorer` when given (a fresh run), unscored otherwise."""
    program_path = seed_path(task_dir, contract)
    baseline = program_path.stem == BASELINE_STEM
    summary_file = BASELINE_SUMMARY_FILE if baseline else SUMMARY_FILE
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
        summary = (program_path.parent / summary_file).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        summary = ""
    verification = None if scorer is None else scorer.score(program)
    return Entry(
        program=program,
        summary=summary or (NO_BASELINE_SUMMARY if baseline else NO_SUMMARY),
        verification=verification,
        metadata={"seed": str(program_path.relative_to(task_dir))},
    )


def seed_path(task_dir: Path, contract: TaskContract) -> Path:
    """`solution/baseline.<ext>` when the task ships a baseline, else `solution/solution.<ext>`."""
    solution = task_dir / SEED_DIR / contract.solution_language.solution_file
    baseline = solution.with_name(BASELINE_STEM + solution.suffix)
    return baseline if baseline.is_file() else solution
