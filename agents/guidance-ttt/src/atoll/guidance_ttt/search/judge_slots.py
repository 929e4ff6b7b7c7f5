"""How many programs a step scores at once: a number, or what the judge says it can take.

With `judge_concurrency = "judge"` the search asks the judge for its worker
budget once, when the run starts: a judge on a Ray cluster reports its judge
nodes' units together, so the search keeps as many programs in flight as the
cluster judges at once, not a number fitted to one machine.
"""

from __future__ import annotations

from typing import Literal

from atoll.core.scoring import ReportsWorkers
from atoll.guidance_ttt.config import ConfigError


def judge_slots(setting: int | Literal["judge"], scorer: object) -> int:
    """`setting`, or the worker budget `scorer` reports when it is "judge"."""
    if isinstance(setting, int):
        return setting
    candidates = getattr(scorer, "candidates", scorer)  # the run's Scorer wraps the plugin's
    workers = candidates.workers() if isinstance(candidates, ReportsWorkers) else None
    if workers is None:
        raise ConfigError(
            "judge_concurrency = 'judge' needs a scorer that reports its worker budget (a "
            "judge whose GET /health says `workers`); set judge_concurrency to a number"
        )
    return workers
