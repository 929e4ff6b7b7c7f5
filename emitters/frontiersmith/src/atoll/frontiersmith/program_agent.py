"""A Harbor agent that submits a given program the way the oracle submits the reference.

The execution stage must run every candidate program (the baseline, each
sample) as a fresh Harbor trial, through the same path the emitted task's
oracle takes: upload a solution directory, run its `solve.sh`, let the
task's verifier grade `/workspace/solution.py`. Harbor's oracle always
takes the task's own `solution/`; this agent is the oracle with the
solution directory passed in (`--ak solution_dir=DIR`, or `kwargs` in a
trial config), so one task directory serves every program.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harbor.agents.oracle import OracleAgent
from harbor.models.trial.paths import TrialPaths


class ProgramAgent(OracleAgent):
    """The oracle, submitting `solution_dir` (holding `solve.sh`) instead of the task's solution."""

    def __init__(self, logs_dir: Path, solution_dir: str, task_dir: str, **kwargs: Any) -> None:
        kwargs.pop("trial_paths", None)
        super().__init__(
            logs_dir=logs_dir,
            task_dir=Path(task_dir),
            trial_paths=TrialPaths(trial_dir=Path(logs_dir).parent),
            **kwargs,
        )
        self._solution_dir = Path(solution_dir)

    @staticmethod
    def name() -> str:
        return "frontiersmith-program"

    def _resolve_solution_paths(self) -> tuple[Path, Path]:
        return self._solution_dir, self._solution_dir / "solve.sh"
