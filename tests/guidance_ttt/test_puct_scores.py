"""PUCT scores checked against arithmetic written out by hand."""

from __future__ import annotations

import math

import pytest
from guidance_builders import entry, rollout

from atoll.guidance_ttt.contract import Direction
from atoll.guidance_ttt.search.archive import Archive
from atoll.guidance_ttt.search.node import Node
from atoll.guidance_ttt.search.puct import (
    SCALE_FLOOR,
    q_value,
    rank_priors,
    score_candidates,
    value_scale,
)


def _two_step_archive() -> Archive:
    """Roots 0 and 1 (value 10); step 0 gives root 1 child 2 (12), root 0 children 3 (15), 4 (9)."""
    archive = Archive.seeded(entry("int main(){}\n", 10.0), Direction.MAX, groups=2)
    first = archive.choose(0, 0)
    archive.apply_selection(first)
    second = archive.choose(0, 1)
    archive.apply_selection(second)
    assert (first.node_id, second.node_id) == (1, 0)
    assert archive.apply_rollout(rollout(0, 0, 0, 1, 12.0)) == 2
    assert archive.apply_rollout(rollout(0, 0, 1, 1, None)) is None
    assert archive.apply_rollout(rollout(0, 1, 0, 0, 15.0)) == 3
    assert archive.apply_rollout(rollout(0, 1, 1, 0, 9.0)) == 4
    archive.finish_step(0)
    return archive


def test_roots_only_use_the_floor_scale_and_rank_prior() -> None:
    archive = Archive.seeded(entry("int main(){}\n", 10.0), Direction.MAX, groups=2)
    scored = archive.scores(0)
    # Only roots: scale over all candidates = 10 - 10 = 0, floored to 1e-6.
    # Ranks by (value, id) descending: node 1 rank 0 (weight 2), node 0 rank 1 (weight 1); sum 3.
    # T = 0 so sqrt(1 + T) = 1; n = 0.
    assert [s.node.id for s in scored] == [1, 0]
    assert scored[0].scale == SCALE_FLOOR
    assert scored[0].prior == pytest.approx(2 / 3)
    assert scored[1].prior == pytest.approx(1 / 3)
    assert scored[0].score == pytest.approx(10 + 1e-6 * (2 / 3) * 1 / 1, abs=1e-12)
    assert scored[1].score == pytest.approx(10 + 1e-6 * (1 / 3) * 1 / 1, abs=1e-12)


def test_scores_after_one_step_match_hand_arithmetic() -> None:
    archive = _two_step_archive()
    assert archive.total_rollouts == 4
    by_id = {s.node.id: s for s in archive.scores(1)}
    # Values: 0:10, 1:10, 2:12, 3:15, 4:9.  n: roots 2 each, children 0.  m: root0 15, root1 12.
    # scale over non-root candidates {12, 15, 9} = 15 - 9 = 6.
    # ranks (value, id desc): 3, 2, 1, 0, 4 -> weights 5, 4, 3, 2, 1; sum 15.
    # sqrt(1 + T) = sqrt(5).
    root5 = math.sqrt(5)
    expected = {
        3: 15 + 6 * (5 / 15) * root5 / (1 + 0),  # Q = own value (n = 0)      = 19.4721...
        0: 15 + 6 * (2 / 15) * root5 / (1 + 2),  # Q = m(0) = 15 (best child) = 15.5962...
        2: 12 + 6 * (4 / 15) * root5 / (1 + 0),  #                            = 15.5777...
        1: 12 + 6 * (3 / 15) * root5 / (1 + 2),  # Q = m(1) = 12              = 12.8944...
        4: 9 + 6 * (1 / 15) * root5 / (1 + 0),  #                             =  9.8944...
    }
    for node_id, score in expected.items():
        assert by_id[node_id].score == pytest.approx(score, rel=1e-12), node_id
        assert by_id[node_id].scale == 6
    assert [s.node.id for s in archive.scores(1)] == [3, 0, 2, 1, 4]
    assert by_id[3].score == pytest.approx(19.472135955, rel=1e-9)
    assert by_id[0].score == pytest.approx(15.596284794, rel=1e-9)


def test_selection_blocks_lineages_and_falls_back_to_the_best() -> None:
    archive = _two_step_archive()
    picks = []
    for group in range(4):
        selection = archive.choose(1, group)
        archive.apply_selection(selection)
        picks.append(selection.node_id)
    # Order 3, 0, 2, 1, 4.  Group 0 takes 3; group 1 skips 0 (ancestor of 3) and takes 2;
    # group 2 skips 1 (ancestor of 2) and takes 4 (a sibling of 3, not in its lineage);
    # group 3 finds every candidate blocked and takes the best one, 3.
    assert picks == [3, 2, 4, 3]
    # Re-asking returns the recorded pick, even though other groups chose since.
    assert archive.choose(1, 1).node_id == 2


def test_q_is_best_child_value_even_below_own_value() -> None:
    archive = Archive.seeded(entry("int main(){}\n", 20.0), Direction.MAX, groups=1)
    archive.apply_selection(archive.choose(0, 0))
    archive.apply_rollout(rollout(0, 0, 0, 0, None))
    root = archive.nodes[0]
    assert root.n == 1 and root.m is None
    assert q_value(root) == 20.0  # visited, but no valid child: own value
    archive.apply_rollout(rollout(0, 0, 1, 0, 5.0))
    assert root.m == 5.0
    assert q_value(root) == 5.0  # best_child mode
    archive.apply_rollout(rollout(0, 0, 2, 0, 7.0))
    assert q_value(root) == 7.0


def test_ties_break_by_value_then_id() -> None:
    nodes = [
        Node(
            id=i,
            parent=None,
            timestep=0,
            value=v,
            raw_score=v,
            entry=entry("x", v),
            program_sha256=str(i),
        )
        for i, v in [(0, 1.0), (1, 1.0), (2, 1.0)]
    ]
    # Identical values and visits; scores differ only by the prior, which ranks by id.
    assert [s.node.id for s in score_candidates(nodes, 0)] == [2, 1, 0]
    # With c = 0 scores tie exactly (all Q = 1), then value ties, then id decides.
    assert [s.node.id for s in score_candidates(nodes, 0, c=0.0)] == [2, 1, 0]
    nodes[0].value = 1.5
    assert [s.node.id for s in score_candidates(nodes, 0, c=0.0)] == [0, 2, 1]


def test_unscored_nodes_rank_last_and_are_left_out_of_the_scale() -> None:
    def node(i: int, v: float | None, parent: int | None = 0) -> Node:
        return Node(i, parent, 1, v, v, entry("x", v), str(i))

    nodes = [node(0, None, None), node(1, 3.0), node(2, None), node(3, 7.0)]
    assert value_scale(nodes) == 4.0
    priors = rank_priors(nodes)
    # 3 (7.0) rank 0, 1 (3.0) rank 1, then the unscored by id: 2, 0.  Weights 4, 3, 2, 1 of 10.
    assert priors == pytest.approx({3: 0.4, 1: 0.3, 2: 0.2, 0: 0.1})
    scored = score_candidates(nodes, 3)
    assert [s.node.id for s in scored][:2] == [3, 1]
    assert all(s.score == -math.inf for s in scored[2:])


def test_minimizing_task_prefers_lower_raw_scores() -> None:
    archive = Archive.seeded(entry("int main(){}\n", 10177.4), Direction.MIN, groups=1)
    assert archive.nodes[0].value == -10177.4
    archive.apply_selection(archive.choose(0, 0))
    archive.apply_rollout(rollout(0, 0, 0, 0, 1110.85))
    archive.apply_rollout(rollout(0, 0, 1, 0, 20000.0))
    assert archive.nodes[1].value == -1110.85 and archive.nodes[1].raw_score == 1110.85
    assert archive.nodes[0].m == -1110.85
    assert archive.best_id == 1
    archive.finish_step(0)
    assert archive.scores(1)[0].node.id == 1


def test_scores_follow_every_rollout() -> None:
    archive = Archive.seeded(entry("int main(){}\n", 10.0), Direction.MAX, groups=2)
    archive.apply_selection(archive.choose(0, 0))
    before = {s.node.id: s.score for s in archive.scores(0)}
    archive.apply_rollout(rollout(0, 0, 0, 1, None))
    after = {s.node.id: s.score for s in archive.scores(0)}
    # T went 0 -> 1 and n(1) 0 -> 1: node 1's bonus is 1e-6 * 2/3 * sqrt(2) / 2, node 0's
    # is 1e-6 * 1/3 * sqrt(2) / 1.
    assert before[1] == pytest.approx(10 + 1e-6 * (2 / 3), abs=1e-13)
    assert after[1] == pytest.approx(10 + 1e-6 * (2 / 3) * math.sqrt(2) / 2, abs=1e-13)
    assert after[0] == pytest.approx(10 + 1e-6 * (1 / 3) * math.sqrt(2), abs=1e-13)
