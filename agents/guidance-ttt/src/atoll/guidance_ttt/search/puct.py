"""PUCT scores of the selectable nodes at one moment of the search.

    score(i) = Q(i) + c · scale · P(i) · sqrt(1 + T) / (1 + n(i)),  c = 1

Q is the node's own value until it has a visit and a valid child, then the
best child's value ("best_child" mode): a node is judged by what it has been
seen to produce. P is a rank prior (better value, larger share), scale puts the
exploration bonus in the units of the score, and the bonus shrinks with the
node's own visits while growing slowly with the total. Pure arithmetic, so it
can be checked by hand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from atoll.guidance_ttt.search.node import Node

EXPLORATION_C = 1.0
SCALE_FLOOR = 1e-6


@dataclass(slots=True)
class Scored:
    """One candidate's score and the terms that made it (kept for logs and tests)."""

    node: Node
    q: float
    prior: float
    scale: float
    bonus: float
    score: float

    @property
    def order_key(self) -> tuple[float, float, int]:
        """Ties are broken by value, then id, all descending."""
        return (self.score, self.node.sort_value, self.node.id)


def q_value(node: Node) -> float:
    """Own value before the node has a visit and a valid child; then the best child's value."""
    if node.n == 0 or node.m is None:
        return node.sort_value
    return node.m


def value_scale(candidates: Sequence[Node]) -> float:
    """max − min value over the non-root candidates (all of them if only roots), floored."""
    pool = [c for c in candidates if not c.is_root] or list(candidates)
    values = [c.value for c in pool if c.value is not None]
    if not values:
        return SCALE_FLOOR
    return max(max(values) - min(values), SCALE_FLOOR)


def rank_priors(candidates: Sequence[Node]) -> dict[int, float]:
    """Rank k (0 = best value) gets weight N − k, normalised; equal values keep their order.

    As in the reference, the ranking is a stable sort on value alone, so among
    equal values the candidate that comes first ranks first. The archive
    lists its candidates in insertion order, which is ascending id (ids are
    handed out in creation order, and the archive file stores nodes by id):
    the earlier node gets the larger prior.
    """
    count = len(candidates)
    ordered = sorted(candidates, key=_sort_value, reverse=True)
    total = count * (count + 1) / 2
    return {node.id: (count - rank) / total for rank, node in enumerate(ordered)}


def score_candidates(
    candidates: Sequence[Node], total_rollouts: int, c: float = EXPLORATION_C
) -> list[Scored]:
    """Every candidate's PUCT score, best first (ties by value, then id, descending)."""
    if not candidates:
        return []
    scale = value_scale(candidates)
    priors = rank_priors(candidates)
    growth = math.sqrt(1 + total_rollouts)
    scored = []
    for node in candidates:
        prior = priors[node.id]
        bonus = c * scale * prior * growth / (1 + node.n)
        q = q_value(node)
        scored.append(
            Scored(node=node, q=q, prior=prior, scale=scale, bonus=bonus, score=q + bonus)
        )
    scored.sort(key=_order, reverse=True)
    return scored


def _sort_value(node: Node) -> float:
    return node.sort_value


def _order(scored: Scored) -> tuple[float, float, int]:
    return (scored.score, scored.node.sort_value, scored.node.id)
