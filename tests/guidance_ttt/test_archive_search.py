"""Archive bookkeeping: root cloning, visits, child creation, visibility and the step-end filter."""

from __future__ import annotations

import pytest
from guidance_builders import entry, rollout

from atoll.guidance_ttt.contract import Direction
from atoll.guidance_ttt.search.archive import Archive, ArchiveError
from atoll.guidance_ttt.search.node import Node
from atoll.guidance_ttt.search.scored_program import Status, Verification, program_digest

SEED = "int main() { return -1; }\n"


def _select_all(archive: Archive, step: int, groups: int) -> list[int]:
    picks = []
    for group in range(groups):
        selection = archive.choose(step, group)
        archive.apply_selection(selection)
        picks.append(selection.node_id)
    return picks


def test_seed_is_cloned_into_independent_root_lineages() -> None:
    archive = Archive.seeded(entry(SEED, 27.8), Direction.MAX, groups=4)
    assert sorted(archive.nodes) == [0, 1, 2, 3]
    assert all(
        n.is_root and n.entry.program == SEED and n.value == 27.8 for n in archive.nodes.values()
    )
    assert sorted(_select_all(archive, 0, 4)) == [0, 1, 2, 3]


def test_every_rollout_counts_visits_up_the_lineage() -> None:
    archive = Archive.seeded(entry(SEED, 1.0), Direction.MAX, groups=1)
    _select_all(archive, 0, 1)
    assert archive.apply_rollout(rollout(0, 0, 0, 0, 2.0)) == 1
    archive.finish_step(0)
    _select_all(archive, 1, 1)
    assert archive.selections == {0: 1}
    archive.apply_rollout(rollout(1, 0, 0, 1, None, status=Status.GUIDANCE_REJECTED, program=None))
    archive.apply_rollout(rollout(1, 0, 1, 1, None, status=Status.PARSE_ERROR))
    archive.apply_rollout(rollout(1, 0, 2, 1, 3.0))
    assert archive.total_rollouts == 4
    assert archive.nodes[1].n == 3
    assert archive.nodes[0].n == 4  # its own rollout plus three through its child
    assert archive.nodes[1].m == 3.0  # only the valid one raised it
    assert archive.nodes[0].m == 2.0  # m is the best *direct* child value


def test_child_only_for_valid_scored_new_program() -> None:
    archive = Archive.seeded(entry(SEED, 1.0), Direction.MAX, groups=1)
    _select_all(archive, 0, 1)
    # Valid, but the very program of the root: no node, still a visit, still raises m.
    assert archive.apply_rollout(rollout(0, 0, 0, 0, 1.0, program=SEED)) is None
    assert archive.nodes[0].m == 1.0
    # Invalid result with a new program: no node.
    assert archive.apply_rollout(rollout(0, 0, 1, 0, None, program="int main(){return 9;}")) is None
    # Valid status but no raw score: no node.
    r = rollout(0, 0, 2, 0, 4.0)
    no_score = type(r)(
        **{**r.__dict__, "verification": type(r.verification)(Status.VALID, None, 0.0)}
    )
    assert archive.apply_rollout(no_score) is None
    # Valid and new: node 1; the same program again: no node.
    assert archive.apply_rollout(rollout(0, 0, 3, 0, 4.0, program="int main(){return 4;}")) == 1
    assert archive.apply_rollout(rollout(0, 0, 4, 0, 4.0, program="int main(){return 4;}")) is None
    assert sorted(archive.nodes) == [0, 1]
    assert archive.total_rollouts == 5 and archive.nodes[0].n == 5
    child = archive.nodes[1]
    assert child.parent == 0 and child.timestep == 1 and child.value == 4.0
    assert child.entry.guidance == "try a different order"
    assert child.program_sha256 == program_digest("int main(){return 4;}")
    assert archive.nodes[0].children == [1]
    assert archive.best_id == 1


def test_children_are_invisible_until_the_next_step() -> None:
    archive = Archive.seeded(entry(SEED, 1.0), Direction.MAX, groups=1)
    _select_all(archive, 0, 1)
    archive.apply_rollout(rollout(0, 0, 0, 0, 50.0))
    assert [n.id for n in archive.candidates(0)] == [0]
    assert sorted(n.id for n in archive.candidates(1)) == [0, 1]
    late = Node(9, 0, 5, 99.0, 99.0, entry("late", 99.0), "late")
    archive.nodes[9] = late
    assert 9 not in {n.id for n in archive.candidates(4)}
    assert 9 in {n.id for n in archive.candidates(5)}
    nocode = Node(10, 0, 1, 99.0, 99.0, entry("x", 99.0), None)
    nocode.entry = type(nocode.entry)(program=None, summary="", verification=None)
    archive.nodes[10] = nocode
    assert 10 not in {n.id for n in archive.candidates(3)}


def test_invariants_are_enforced() -> None:
    archive = Archive.seeded(entry(SEED, 1.0), Direction.MAX, groups=2)
    with pytest.raises(ArchiveError, match="has no selected parent"):
        archive.check_rollout(rollout(0, 0, 0, 0, 1.0))
    with pytest.raises(ArchiveError, match="at step 0, not step 1"):
        archive.choose(1, 0)
    _select_all(archive, 0, 2)
    parent = archive.selections[0]
    with pytest.raises(ArchiveError, match="but the group expands node"):
        archive.apply_rollout(rollout(0, 0, 0, 1 - parent, 1.0))
    archive.apply_rollout(rollout(0, 0, 0, parent, 2.0))
    with pytest.raises(ArchiveError, match="already recorded"):
        archive.apply_rollout(rollout(0, 0, 0, parent, 3.0, program="other"))
    assert archive.total_rollouts == 1
    with pytest.raises(ArchiveError, match="already expands"):
        archive.apply_selection(type(archive.choose(0, 0))(0, 0, 1 - parent))
    with pytest.raises(ArchiveError, match="at step 0, not step 3"):
        archive.finish_step(3)
    with pytest.raises(ArchiveError, match="has no program"):
        Archive.seeded(
            type(entry(SEED, 1.0))(program=None, summary="", verification=None), Direction.MAX, 1
        )


def _tree(max_nodes: int = 1000) -> Archive:
    """Root 0 with children 1..4 (values 1, 5, 3, 5); child 3 has children 5 (8) and 6 (2)."""

    def node(i: int, parent: int | None, value: float, sha: str | None = None) -> Node:
        return Node(
            i,
            parent,
            0 if parent is None else 1,
            value,
            value,
            entry(f"p{i}", value),
            sha or f"s{i}",
        )

    nodes = [node(0, None, 0.0), node(1, 0, 1.0), node(2, 0, 5.0), node(3, 0, 3.0), node(4, 0, 5.0)]
    nodes += [node(5, 3, 8.0), node(6, 3, 2.0)]
    nodes[0].children = [1, 2, 3, 4]
    nodes[3].children = [5, 6]
    return Archive(Direction.MAX, nodes, max_nodes=max_nodes)


def test_step_end_keeps_top_two_children_and_the_ancestor_closure() -> None:
    archive = _tree()
    end = archive.finish_step(0)
    # Root 0 keeps its two best children: 4 and 2 (both 5.0; higher id first).  Node 3 is
    # not among them, but its kept child 5 pulls it back as an ancestor; 1 goes.
    assert sorted(archive.nodes) == [0, 2, 3, 4, 5, 6]
    assert end.pruned == (1,)
    assert archive.nodes[0].children == [2, 3, 4]
    assert end.best_id == 5 and archive.best_id == 5
    assert archive.step == 1 and archive.selections == {} and archive.finished == {}


def test_step_end_deduplicates_programs() -> None:
    archive = _tree()
    # Node 4 runs the same program as node 2: only one of them (the later id of equal value
    # ranks first) survives, so the root's top two are {4, 2} minus the duplicate.
    archive.nodes[2].program_sha256 = archive.nodes[4].program_sha256
    archive.finish_step(0)
    assert 2 not in archive.nodes and 4 in archive.nodes
    assert sorted(archive.nodes) == [0, 3, 4, 5, 6]


def test_step_end_cap_keeps_roots_first_then_values_then_closes_upward() -> None:
    archive = _tree(max_nodes=3)
    archive.finish_step(0)
    # Kept before the cap: 0, 2, 4, 5, 6 (and not 3).  Cap 3: root 0, then 5 (8.0), then 4
    # (5.0, id 4 > 2).  Closure adds 3, the parent of 5, so the archive may exceed the cap.
    assert sorted(archive.nodes) == [0, 3, 4, 5]
    assert archive.nodes[3].children == [5]
    assert archive.best_id == 5


def test_best_node_is_recomputed_after_pruning() -> None:
    archive = Archive.seeded(entry(SEED, 1.0), Direction.MAX, groups=1)
    _select_all(archive, 0, 1)
    for index, raw in enumerate([2.0, 9.0, 4.0]):
        archive.apply_rollout(rollout(0, 0, index, 0, raw))
    assert archive.best_id == 2
    archive.max_nodes = 1
    archive.finish_step(0)
    assert sorted(archive.nodes) == [0]
    assert archive.best_id == 0


def test_json_round_trip_preserves_state() -> None:
    archive = Archive.seeded(entry(SEED, 1.0), Direction.MIN, groups=2)
    _select_all(archive, 0, 2)
    archive.apply_rollout(rollout(0, 0, 0, archive.selections[0], 0.5))
    copy = Archive.from_json(archive.to_json())
    assert copy.to_json() == archive.to_json()
    assert copy.child_of(rollout(0, 1, 0, 0, 0.2)) == archive.child_of(rollout(0, 1, 0, 0, 0.2))


@pytest.mark.parametrize("raw", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_scores_are_refused_at_the_source(raw: float) -> None:
    with pytest.raises(ValueError, match="raw score must be a finite number"):
        Verification(Status.VALID, raw, 0.5)
    with pytest.raises(ValueError, match="reward must be a finite number"):
        Verification(Status.VALID, 1.0, raw)


def _valued_tree(values: dict[int, tuple[int | None, float]]) -> Archive:
    """An archive at step 0 whose nodes have these (parent, value) pairs and their children."""
    nodes = {
        node_id: Node(
            id=node_id,
            parent=parent,
            timestep=0 if parent is None else 1,
            value=value,
            raw_score=value,
            entry=entry(f"int main() {{ return {node_id}; }}\n", value),
            program_sha256=program_digest(f"int main() {{ return {node_id}; }}\n"),
        )
        for node_id, (parent, value) in values.items()
    }
    for node in nodes.values():
        if node.parent is not None:
            nodes[node.parent].children.append(node.id)
    return Archive(Direction.MAX, nodes.values())


def test_an_ancestor_kept_only_to_connect_a_survivor_is_no_longer_a_candidate() -> None:
    # A root with children valued 12, 20, 21, and a child (13) under the 12.
    archive = _valued_tree(
        {0: (None, 10.0), 1: (0, 12.0), 2: (0, 20.0), 3: (0, 21.0), 4: (1, 13.0)}
    )
    end = archive.finish_step(0)
    # 12 is out of its parent's top 2 but stays, so that 13 stays connected to the root.
    assert end.pruned == () and sorted(archive.nodes) == [0, 1, 2, 3, 4]
    assert [n.id for n in archive.nodes.values() if not n.candidate] == [1]
    candidates = {n.id for n in archive.candidates(1)}
    assert candidates == {0, 2, 3, 4}
    scored = archive.scores(1)
    assert {s.node.id for s in scored} == candidates
    assert scored[0].scale == 21.0 - 13.0  # the 12 no longer sets the scale's minimum
    assert sorted(s.prior for s in scored) == [0.1, 0.2, 0.3, 0.4]  # ranks over 4, not 5
    assert all(archive.choose(1, g).node_id != 1 for g in range(5))
    # It stays a non-candidate through a save and load, and through the next filter.
    restored = Archive.from_json(archive.to_json())
    assert not restored.nodes[1].candidate and restored.nodes[4].candidate
    _select_all(restored, 1, 1)
    parent = restored.selections[0]
    # Its program is no candidate's any more: rediscovered, it is a new node.
    again = rollout(1, 0, 0, parent, 12.0, program=restored.nodes[1].entry.program)
    assert restored.apply_rollout(again) == 5
    restored.finish_step(1)
    assert not restored.nodes[1].candidate


def test_a_demoted_ancestor_is_never_the_best_and_its_program_may_come_back() -> None:
    # 1 (the best value) runs the root's very program, so the filter drops it as a duplicate;
    # its child 2 survives and keeps it in the tree, as a non-candidate.
    archive = _valued_tree({0: (None, 10.0), 1: (0, 40.0), 2: (1, 15.0)})
    archive.nodes[1].program_sha256 = archive.nodes[0].program_sha256
    archive.finish_step(0)
    assert sorted(archive.nodes) == [0, 1, 2] and not archive.nodes[1].candidate
    assert archive.best_id == 2  # not the 40: it is no candidate
    assert Archive.from_json(archive.to_json()).best_id == 2
