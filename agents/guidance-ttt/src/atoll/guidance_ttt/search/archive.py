"""The archive of scored programs and the PUCT search over it, in memory.

Everything that changes the archive during a step is one of two events, a
`Selection` (a group's parent) or a `Rollout` (one finished sample), applied
through `apply_selection` / `apply_rollout`. The durable library journals
exactly these events and replays them after a crash, so the same code path
serves a live run and a recovery. Nothing here touches the disk.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from atoll.guidance_ttt.contract import Direction, search_value
from atoll.guidance_ttt.search.node import Node
from atoll.guidance_ttt.search.puct import Scored, score_candidates
from atoll.guidance_ttt.search.scored_program import Entry, Verification, program_digest

CHILDREN_KEPT = 2
MAX_NODES = 1000


class ArchiveError(RuntimeError):
    """An operation the archive's invariants forbid (wrong step, unknown parent, replayed slot)."""


@dataclass(frozen=True)
class Selection:
    """Group `group` of step `step` expands node `node_id`."""

    step: int
    group: int
    node_id: int

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "group": self.group, "node_id": self.node_id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Selection:
        return cls(step=int(data["step"]), group=int(data["group"]), node_id=int(data["node_id"]))


@dataclass(frozen=True)
class Rollout:
    """One finished sample of a group: its guidance (None if rejected), program and verdict."""

    step: int
    group: int
    rollout: int
    parent_id: int
    verification: Verification
    guidance: str | None = None
    program: str | None = None
    summary: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def entry(self) -> Entry:
        return Entry(
            program=self.program,
            summary=self.summary,
            verification=self.verification,
            guidance=self.guidance,
            metadata=self.metadata,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "group": self.group,
            "rollout": self.rollout,
            "parent_id": self.parent_id,
            "verification": self.verification.to_json(),
            "guidance": self.guidance,
            "program": self.program,
            "summary": self.summary,
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Rollout:
        return cls(
            step=int(data["step"]),
            group=int(data["group"]),
            rollout=int(data["rollout"]),
            parent_id=int(data["parent_id"]),
            verification=Verification.from_json(data["verification"]),
            guidance=data.get("guidance"),
            program=data.get("program"),
            summary=str(data.get("summary", "")),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass(frozen=True)
class StepEnd:
    """What the step-end filter did."""

    step: int
    kept: int
    pruned: tuple[int, ...]
    best_id: int | None


class Archive:
    """Nodes, search statistics and the open step's selections and finished rollouts."""

    def __init__(
        self,
        direction: Direction,
        nodes: Iterable[Node],
        *,
        step: int = 0,
        total_rollouts: int = 0,
        next_id: int | None = None,
        selections: dict[int, int] | None = None,
        finished: dict[tuple[int, int], int | None] | None = None,
        max_nodes: int = MAX_NODES,
    ) -> None:
        self.direction = direction
        self.nodes: dict[int, Node] = {node.id: node for node in nodes}
        self.step = step
        self.total_rollouts = total_rollouts
        self.next_id = next_id if next_id is not None else max(self.nodes, default=-1) + 1
        self.selections: dict[int, int] = dict(selections or {})
        self.finished: dict[tuple[int, int], int | None] = dict(finished or {})
        self.max_nodes = max_nodes
        self._by_sha = self._candidate_programs()
        self.best_id = self._find_best()
        # Scores change only with rollouts and step ends; the G selections of a step share them.
        self._version = 0
        self._scores: tuple[tuple[int, int, int], list[Scored]] | None = None

    # ----- construction -------------------------------------------------------------------

    @classmethod
    def seeded(
        cls, seed: Entry, direction: Direction, groups: int, *, max_nodes: int = MAX_NODES
    ) -> Archive:
        """A fresh archive: the seed program cloned into `groups` independent root lineages."""
        if groups < 1:
            raise ArchiveError(f"groups must be at least 1, got {groups}")
        if seed.program is None or not seed.program.strip():
            raise ArchiveError("the seed entry has no program; the search needs one to expand")
        raw = (
            seed.verification.raw_score if seed.verification and seed.verification.scored else None
        )
        value = None if raw is None else search_value(direction, raw)
        digest = program_digest(seed.program)
        roots = [
            Node(
                id=i,
                parent=None,
                timestep=0,
                value=value,
                raw_score=raw,
                entry=seed,
                program_sha256=digest,
            )
            for i in range(groups)
        ]
        return cls(direction, roots, max_nodes=max_nodes)

    # ----- queries ------------------------------------------------------------------------

    def node(self, node_id: int) -> Node:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise ArchiveError(f"no node {node_id} in the archive") from None

    @property
    def best(self) -> Node | None:
        return None if self.best_id is None else self.nodes[self.best_id]

    def ancestors(self, node_id: int) -> Iterator[Node]:
        """The node's parent, its parent's parent, … up to the root."""
        parent = self.node(node_id).parent
        while parent is not None:
            node = self.nodes[parent]
            yield node
            parent = node.parent

    def descendants(self, node_id: int) -> Iterator[Node]:
        stack = list(self.node(node_id).children)
        while stack:
            node = self.nodes[stack.pop()]
            yield node
            stack.extend(node.children)

    def lineage(self, node_id: int) -> set[int]:
        """The node, its ancestors and its descendants."""
        ids = {node_id}
        ids.update(n.id for n in self.ancestors(node_id))
        ids.update(n.id for n in self.descendants(node_id))
        return ids

    def candidates(self, step: int) -> list[Node]:
        """Nodes that may be selected in `step`: candidates with a program, roots or made before it."""
        return [
            node
            for node in self.nodes.values()
            if node.candidate
            and node.entry.program is not None
            and (node.is_root or node.timestep < step + 1)
        ]

    def scores(self, step: int) -> list[Scored]:
        """PUCT scores of this step's candidates, best first."""
        key = (step, self.total_rollouts, self._version)
        if self._scores is None or self._scores[0] != key:
            self._scores = (key, score_candidates(self.candidates(step), self.total_rollouts))
        return list(self._scores[1])

    def choose(self, step: int, group: int) -> Selection:
        """The group's parent for `step` (the recorded one if the group already chose)."""
        self.check_step(step)
        if group < 0:
            raise ArchiveError(f"group must be non-negative, got {group}")
        if group in self.selections:
            return Selection(step, group, self.selections[group])
        scored = self.scores(step)
        if not scored:
            raise ArchiveError("no node with a program can be selected")
        blocked: set[int] = set()
        for other, picked in self.selections.items():
            if other != group:
                blocked |= self.lineage(picked)
        pick = next((s.node for s in scored if s.node.id not in blocked), scored[0].node)
        return Selection(step, group, pick.id)

    def child_of(self, rollout: Rollout) -> int | None:
        """The id the rollout's child node would get, or None if it makes no node.

        A program is a duplicate when a candidate already holds it; a node kept
        only to connect the tree does not block the same program coming back.
        """
        if not rollout.verification.scored or rollout.program is None:
            return None
        if program_digest(rollout.program) in self._by_sha:
            return None
        return self.next_id

    # ----- events -------------------------------------------------------------------------

    def apply_selection(self, selection: Selection) -> None:
        self.check_step(selection.step)
        self.node(selection.node_id)
        known = self.selections.get(selection.group)
        if known is not None and known != selection.node_id:
            raise ArchiveError(
                f"group {selection.group} of step {selection.step} already expands node {known}"
            )
        self.selections[selection.group] = selection.node_id

    def check_rollout(self, rollout: Rollout) -> None:
        """Raise unless `apply_rollout` would accept the rollout; changes nothing."""
        self.check_step(rollout.step)
        picked = self.selections.get(rollout.group)
        if picked is None:
            raise ArchiveError(
                f"group {rollout.group} of step {rollout.step} has no selected parent yet"
            )
        if picked != rollout.parent_id:
            raise ArchiveError(
                f"rollout of group {rollout.group} names parent {rollout.parent_id}, "
                f"but the group expands node {picked}"
            )
        if rollout.rollout < 0:
            raise ArchiveError(f"rollout index must be non-negative, got {rollout.rollout}")
        if (rollout.group, rollout.rollout) in self.finished:
            raise ArchiveError(
                f"rollout {rollout.rollout} of group {rollout.group} in step {rollout.step} "
                "is already recorded"
            )
        self.node(rollout.parent_id)

    def apply_rollout(self, rollout: Rollout) -> int | None:
        """Count the visit, raise the parent's best-child value, add the child; its id or None."""
        self.check_rollout(rollout)
        self._version += 1
        parent = self.nodes[rollout.parent_id]
        parent.n += 1
        for ancestor in self.ancestors(parent.id):
            ancestor.n += 1
        self.total_rollouts += 1
        child_id = self.child_of(rollout)
        verification = rollout.verification
        if verification.scored:
            assert verification.raw_score is not None
            value = search_value(self.direction, verification.raw_score)
            parent.m = value if parent.m is None else max(parent.m, value)
        if child_id is not None:
            assert rollout.program is not None and verification.raw_score is not None
            digest = program_digest(rollout.program)
            child = Node(
                id=child_id,
                parent=parent.id,
                timestep=rollout.step + 1,
                value=search_value(self.direction, verification.raw_score),
                raw_score=verification.raw_score,
                entry=rollout.entry(),
                program_sha256=digest,
            )
            self.nodes[child_id] = child
            self._by_sha[digest] = child_id
            parent.children.append(child_id)
            self.next_id = child_id + 1
            if self._better(child, self.best):
                self.best_id = child_id
        self.finished[(rollout.group, rollout.rollout)] = child_id
        return child_id

    def finish_step(self, step: int) -> StepEnd:
        """The step-end filter: top children per parent, de-duplicated, capped, closed upward.

        What survives the filter stays a candidate; an ancestor kept only so
        that a survivor stays connected to its root is no longer one.
        """
        self.check_step(step)
        self._version += 1
        keep = {node.id for node in self.nodes.values() if node.is_root}
        for node in self.nodes.values():
            children = (self.nodes[c] for c in node.children if self.nodes[c].candidate)
            ranked = sorted(children, key=_value_order, reverse=True)
            keep.update(child.id for child in ranked[:CHILDREN_KEPT])
        seen = {self.nodes[i].program_sha256 for i in keep if self.nodes[i].is_root}
        for node in sorted((self.nodes[i] for i in keep), key=_value_order, reverse=True):
            if node.is_root:
                continue
            if node.program_sha256 in seen:
                keep.discard(node.id)
            seen.add(node.program_sha256)
        capped = sorted(
            (self.nodes[i] for i in keep),
            key=lambda n: (n.is_root, n.sort_value, n.id),
            reverse=True,
        )[: self.max_nodes]
        selected = {node.id for node in capped}
        keep = set(selected)
        for node in capped:
            keep.update(a.id for a in self.ancestors(node.id))
        pruned = tuple(sorted(set(self.nodes) - keep))
        for node_id in pruned:
            del self.nodes[node_id]
        for node in self.nodes.values():
            node.children = [c for c in node.children if c in self.nodes]
            node.candidate = node.id in selected
        self._by_sha = self._candidate_programs()
        self.best_id = self._find_best()
        self.step = step + 1
        self.selections = {}
        self.finished = {}
        return StepEnd(step=step, kept=len(self.nodes), pruned=pruned, best_id=self.best_id)

    # ----- (de)serialisation --------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "direction": self.direction.value,
            "step": self.step,
            "total_rollouts": self.total_rollouts,
            "next_id": self.next_id,
            "best_id": self.best_id,
            "max_nodes": self.max_nodes,
            "selections": {str(g): n for g, n in sorted(self.selections.items())},
            "finished": [[g, r, c] for (g, r), c in sorted(self.finished.items())],
            "nodes": [self.nodes[i].to_json() for i in sorted(self.nodes)],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Archive:
        archive = cls(
            Direction(data["direction"]),
            (Node.from_json(n) for n in data["nodes"]),
            step=int(data["step"]),
            total_rollouts=int(data["total_rollouts"]),
            next_id=int(data["next_id"]),
            selections={int(g): int(n) for g, n in data["selections"].items()},
            finished={
                (int(g), int(r)): (None if c is None else int(c)) for g, r, c in data["finished"]
            },
            max_nodes=int(data.get("max_nodes", MAX_NODES)),
        )
        if data.get("best_id") != archive.best_id:
            raise ArchiveError(
                f"the stored best node {data.get('best_id')} is not the best node "
                f"{archive.best_id}; the archive file is inconsistent"
            )
        return archive

    # ----- helpers ------------------------------------------------------------------------

    def check_step(self, step: int) -> None:
        """Raise unless `step` is the archive's open step."""
        if step != self.step:
            raise ArchiveError(f"the archive is at step {self.step}, not step {step}")

    def _candidate_programs(self) -> dict[str, int]:
        """Program digest -> the first candidate holding it (duplicates are checked against these)."""
        found: dict[str, int] = {}
        for node in sorted(self.nodes.values(), key=lambda n: n.id):
            if node.candidate and node.program_sha256 is not None:
                found.setdefault(node.program_sha256, node.id)
        return found

    def _find_best(self) -> int | None:
        best: Node | None = None
        for node in self.nodes.values():
            if node.candidate and self._better(node, best):
                best = node
        return None if best is None else best.id

    @staticmethod
    def _better(node: Node, best: Node | None) -> bool:
        """Higher value wins; between equal values the earlier node stays best."""
        if node.value is None:
            return False
        if best is None or best.value is None:
            return True
        return node.value > best.value or (node.value == best.value and node.id < best.id)


def _value_order(node: Node) -> tuple[float, int]:
    return (node.sort_value, node.id)
