"""One archive node: a scored program, its place in the tree and its search statistics.

Kept separate from the archive so that PUCT scoring can be written and tested
as plain arithmetic over nodes, with no persistence in sight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from atoll.guidance_ttt.search.scored_program import Entry


@dataclass
class Node:
    """A program in the archive.

    `value` is the raw score, negated when the task minimizes, so larger is
    always better (None: never scored; it ranks below everything). `n` counts
    rollouts from this node or any descendant; `m` is the best value among its
    valid children (None: no valid child yet). `timestep` is the step after
    which the node became visible (roots: 0; a child made in step s: s + 1).
    `candidate` is False for a node the step-end filter kept only so that the
    candidates below it stay connected to their root: it is never selected,
    and counts neither for the value scale, the rank prior nor the best node.
    """

    id: int
    parent: int | None
    timestep: int
    value: float | None
    raw_score: float | None
    entry: Entry
    program_sha256: str | None
    n: int = 0
    m: float | None = None
    children: list[int] = field(default_factory=list)
    candidate: bool = True

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @property
    def sort_value(self) -> float:
        """The value for ordering: an unscored node ranks below every scored one."""
        return -math.inf if self.value is None else self.value

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent": self.parent,
            "timestep": self.timestep,
            "value": self.value,
            "raw_score": self.raw_score,
            "n": self.n,
            "m": self.m,
            "children": list(self.children),
            "program_sha256": self.program_sha256,
            "candidate": self.candidate,
            "entry": self.entry.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Node:
        return cls(
            id=int(data["id"]),
            parent=None if data["parent"] is None else int(data["parent"]),
            timestep=int(data["timestep"]),
            value=None if data["value"] is None else float(data["value"]),
            raw_score=None if data["raw_score"] is None else float(data["raw_score"]),
            entry=Entry.from_json(data["entry"]),
            program_sha256=data.get("program_sha256"),
            n=int(data["n"]),
            m=None if data["m"] is None else float(data["m"]),
            children=[int(c) for c in data["children"]],
            candidate=bool(data.get("candidate", True)),
        )
