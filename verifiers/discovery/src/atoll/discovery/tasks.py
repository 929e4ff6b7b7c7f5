"""The discovery tasks this distribution ships, where their directories are, and what they carry.

Each task directory lives in tasks/ at the repository root and ships inside
the wheel (under `atoll/discovery/tasks/<name>`). Its `tests/` carries two
files of atoll's own, byte for byte: `verify.py` (this package's verifier) and
`grader.py` (atoll-checker's grader, whose sandbox runs the candidate), so
that a task verifies in a bare image without atoll installed.
`scripts/sync_discovery_tasks.py` writes them again after either changes.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from atoll.core.task_dirs import packaged_task_dir

__all__ = ["CARRIED", "SUMMARIES", "TASKS", "carried_sources", "task_dir"]

# name -> the one-line summary `atoll plugins list` shows.
SUMMARIES = {
    "erdos_min_overlap": "Erdős minimum overlap: a step function whose overlap bound C5 is smallest (min).",
    "autocorrelation_ac1": "First autocorrelation inequality: the smallest bound 2n max(a*a)/(sum a)^2 (min).",
    "autocorrelation_ac2": "Second autocorrelation inequality: the largest ||f*f||_2^2/(||f*f||_1 ||f*f||_inf) (max).",
    "circle_packing_26": "26 disjoint circles in the unit square with the largest sum of radii (max).",
    "circle_packing_32": "32 disjoint circles in the unit square with the largest sum of radii (max).",
}
TASKS = tuple(SUMMARIES)

CARRIED = ("verify.py", "grader.py")


def task_dir(name: str) -> Path:
    """The task's copy packaged in the wheel, or the repository's in an editable install."""
    return packaged_task_dir("atoll.discovery", name, Path(__file__).resolve().parents[5])


def carried_sources() -> dict[str, bytes]:
    """What every task's tests/ must hold byte for byte: the verifier and the grader."""
    from atoll.checker import grader_source

    verifier = resources.files("atoll.discovery").joinpath("verify.py").read_bytes()
    return {"verify.py": verifier, "grader.py": grader_source()}
