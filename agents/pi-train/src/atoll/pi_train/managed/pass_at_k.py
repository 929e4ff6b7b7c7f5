"""pass@k of a held-out group, for the trainer's evaluation (standard library only).

The cookbook's test-set evaluator reports mean rewards; whether a task is
solved at all in k tries is another question, and the one a held-out curve
should answer. Each held-out task is sampled n times (a group); with c of
them solved, the unbiased estimator 1 - C(n - c, k) / C(n, k) gives pass@k
for every k <= n. The trainer attaches it to each trajectory of the group
(`pass@K` metrics), so the cookbook's mean over trajectories is the mean
over tasks (every held-out group has the same n) and is logged as
`test/env/all/pass@K`, and per tag.

Run by the managed interpreter beside train.py, and imported by the 3.12 side
(the metric names, the tests), so it imports nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# The per-step metric that says an episode solved its task, by mode: every hidden case
# passed, all four shell parts with no audit hit, the exact Euler answer.
SOLVED = {"hidden": "all_cases", "shell": "conjunction", "answer": "correct"}


def metric_name(k: int) -> str:
    return f"pass@{k}"


def ks(n: int) -> list[int]:
    """The k reported for n samples: 1, 2, 4, ... below n, and n itself."""
    found, k = [], 1
    while k < n:
        found.append(k)
        k *= 2
    return [*found, n] if n >= 1 else []


def estimate(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c solved (1 - C(n-c, k) / C(n, k))."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c})")
    if n - c < k:
        return 1.0
    missed = 1.0
    for i in range(n - c + 1, n + 1):
        missed *= 1.0 - k / i
    return 1.0 - missed


def solved(step_metrics: Sequence[Mapping[str, float]], key: str) -> bool:
    """Whether an episode solved its task: the last step reporting `key` says 1."""
    for metrics in reversed(step_metrics):
        if key in metrics:
            return float(metrics[key]) >= 1.0
    return False


def group_metrics(outcomes: Sequence[bool]) -> dict[str, float]:
    """{pass@k: estimate} for one held-out group's outcomes (one per sample)."""
    n, c = len(outcomes), sum(1 for o in outcomes if o)
    return {metric_name(k): estimate(n, c, k) for k in ks(n)}
