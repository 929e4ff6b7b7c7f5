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
    # The roots tie on value, so the earlier one (0) has the larger prior and goes first.
    assert (first.node_id, second.node_id) == (0, 1)
    assert archive.apply_rollout(rollout(0, 1, 0, 1, 12.0)) == 2
    assert archive.apply_rollout(rollout(0, 1, 1, 1, None)) is None
    assert archive.apply_rollout(rollout(0, 0, 0, 0, 15.0)) == 3
    assert archive.apply_rollout(rollout(0, 0, 1, 0, 9.0)) == 4
    archive.finish_step(0)
    return archive


def test_roots_only_use_the_floor_scale_and_rank_prior() -> None:
    archive = Archive.seeded(entry("int main(){}\n", 10.0), Direction.MAX, groups=2)
    scored = archive.scores(0)
    # Only roots: scale over all candidates = 10 - 10 = 0, floored to 1e-6.
    # Ranks by value, equal values in insertion order: node 0 rank 0 (weight 2), node 1 rank 1
    # (weight 1); sum 3.  T = 0 so sqrt(1 + T) = 1; n = 0.
    assert [s.node.id for s in scored] == [0, 1]
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
    # ranks by value, the tied roots in insertion order (0 before 1): 3, 2, 0, 1, 4
    # -> weights 5, 4, 3, 2, 1; sum 15.  sqrt(1 + T) = sqrt(5).
    root5 = math.sqrt(5)
    expected = {
        3: 15 + 6 * (5 / 15) * root5 / (1 + 0),  # Q = own value (n = 0)      = 19.4721...
        0: 15 + 6 * (3 / 15) * root5 / (1 + 2),  # Q = m(0) = 15 (best child) = 15.8944...
        2: 12 + 6 * (4 / 15) * root5 / (1 + 0),  #                            = 15.5777...
        1: 12 + 6 * (2 / 15) * root5 / (1 + 2),  # Q = m(1) = 12              = 12.5962...
        4: 9 + 6 * (1 / 15) * root5 / (1 + 0),  #                             =  9.8944...
    }
    for node_id, score in expected.items():
        assert by_id[node_id].score == pytest.approx(score, rel=1e-12), node_id
        assert by_id[node_id].scale == 6
    assert [s.node.id for s in archive.scores(1)] == [3, 0, 2, 1, 4]
    assert by_id[3].score == pytest.approx(19.472135955, rel=1e-9)
    assert by_id[0].score == pytest.approx(15.894427191, rel=1e-9)
    assert by_id[1].score == pytest.approx(12.596284794, rel=1e-9)


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


def _roots(pairs: list[tuple[int, float]]) -> list[Node]:
    return [
        Node(
            id=i,
            parent=None,
            timestep=0,
            value=v,
            raw_score=v,
            entry=entry("x", v),
            program_sha256=str(i),
        )
        for i, v in pairs
    ]


def test_prior_ties_keep_candidate_order_and_score_ties_break_by_value_then_id() -> None:
    nodes = _roots([(0, 1.0), (1, 1.0), (2, 1.0)])
    # Equal values keep the order they come in: 0, 1, 2 get weights 3, 2, 1 of 6.
    assert rank_priors(nodes) == pytest.approx({0: 3 / 6, 1: 2 / 6, 2: 1 / 6})
    # Identical values and visits; scores differ only by the prior.
    assert [s.node.id for s in score_candidates(nodes, 0)] == [0, 1, 2]
    # With c = 0 scores tie exactly (all Q = 1), then value ties, then id decides (descending).
    assert [s.node.id for s in score_candidates(nodes, 0, c=0.0)] == [2, 1, 0]
    nodes[0].value = 1.5
    assert [s.node.id for s in score_candidates(nodes, 0, c=0.0)] == [0, 2, 1]


def test_prior_ties_follow_the_order_given_not_the_ids() -> None:
    # A stable sort on value alone (the reference's rank prior): 5 (2.0) ranks first, then the
    # three 1.0s in the order given, 7, 3, 9.  Weights 4, 3, 2, 1 of 10.
    nodes = _roots([(7, 1.0), (5, 2.0), (3, 1.0), (9, 1.0)])
    assert rank_priors(nodes) == pytest.approx({5: 0.4, 7: 0.3, 3: 0.2, 9: 0.1})
    # Scores: all roots, scale = 2 - 1 = 1, T = 3 so sqrt(1 + T) = 2, n = 0:
    # 5: 2 + 0.8 = 2.8; 7: 1 + 0.6 = 1.6; 3: 1 + 0.4 = 1.4; 9: 1 + 0.2 = 1.2.
    scored = score_candidates(nodes, 3)
    assert [(s.node.id, s.score) for s in scored] == [
        (5, pytest.approx(2.8)),
        (7, pytest.approx(1.6)),
        (3, pytest.approx(1.4)),
        (9, pytest.approx(1.2)),
    ]


def test_archive_candidates_come_in_insertion_order() -> None:
    """What the rank prior's ties rely on: insertion (= id) order, also after a reload."""
    archive = _two_step_archive()
    assert [n.id for n in archive.candidates(1)] == [0, 1, 2, 3, 4]
    restored = Archive.from_json(archive.to_json())
    assert [n.id for n in restored.candidates(1)] == [0, 1, 2, 3, 4]
    assert rank_priors(restored.candidates(1)) == rank_priors(archive.candidates(1))


def test_unscored_nodes_rank_last_and_are_left_out_of_the_scale() -> None:
    def node(i: int, v: float | None, parent: int | None = 0) -> Node:
        return Node(i, parent, 1, v, v, entry("x", v), str(i))

    nodes = [node(0, None, None), node(1, 3.0), node(2, None), node(3, 7.0)]
    assert value_scale(nodes) == 4.0
    priors = rank_priors(nodes)
    # 3 (7.0) rank 0, 1 (3.0) rank 1, then the unscored in their order: 0, 2.  Weights 4, 3, 2, 1
    # of 10.
    assert priors == pytest.approx({3: 0.4, 1: 0.3, 0: 0.2, 2: 0.1})
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
    assert archive.choose(0, 0).node_id == 0
    archive.apply_selection(archive.choose(0, 0))
    before = {s.node.id: s.score for s in archive.scores(0)}
    archive.apply_rollout(rollout(0, 0, 0, 0, None))
    after = {s.node.id: s.score for s in archive.scores(0)}
    # T went 0 -> 1 and n(0) 0 -> 1: node 0's bonus is 1e-6 * 2/3 * sqrt(2) / 2, node 1's
    # is 1e-6 * 1/3 * sqrt(2) / 1.
    assert before[0] == pytest.approx(10 + 1e-6 * (2 / 3), abs=1e-13)
    assert after[0] == pytest.approx(10 + 1e-6 * (2 / 3) * math.sqrt(2) / 2, abs=1e-13)
    assert after[1] == pytest.approx(10 + 1e-6 * (1 / 3) * math.sqrt(2), abs=1e-13)
