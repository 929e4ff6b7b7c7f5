"""Where a task comes from across rounds (`--rounds`), and how a task becomes a seed.

Round 1 mutates the run's seed problems. From round 2 on, the seeds are the
tasks the previous round accepted (and its population kept), each read back
from its exported bundle: only its public statement and title, the text a
learner reads in `instruction.md`. The bundle's tests, scorer, reference and
baseline programs and the instances its generator makes never reach a seed,
so no later prompt can carry them.

A task's family, for `--population`, is its root seed: the round-1 seed it
descends from, through however many rounds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.frontiersmith.bundle import read_bundle
from atoll.frontiersmith.seeds import TASK_NAME_CHARS, Seed

TITLE_CHARS = 200  # a seed's title, as the seed schema bounds it


@dataclass(frozen=True)
class Lineage:
    """A seed's round, and for a seed of round 2 or later the task it is the statement of."""

    round: int
    root_seed: str  # the round-1 seed the line starts from: the task's family
    parent_task: str | None = None  # the task (its name) this seed is the public statement of
    parent_seed: str | None = None  # the seed that task came from

    @property
    def derived(self) -> bool:
        return self.round > 1

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "parent_task": self.parent_task,
            "parent_seed": self.parent_seed,
            "root_seed": self.root_seed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Lineage:
        return cls(
            round=int(data["round"]),
            root_seed=str(data["root_seed"]),
            parent_task=data.get("parent_task"),
            parent_seed=data.get("parent_seed"),
        )

    def bundle_keys(self) -> dict[str, str | int]:
        """What a derived task's `metadata.seed_lineage` adds (none for round 1: its bundle is
        the one a single-round run writes)."""
        if not self.derived:
            return {}
        assert self.parent_task is not None and self.parent_seed is not None
        return {
            "round": self.round,
            "parent_task": self.parent_task,
            "parent_seed": self.parent_seed,
            "root_seed": self.root_seed,
        }


def original(seed: Seed) -> Lineage:
    """A seed of the run's own set: round 1, its own family."""
    return Lineage(round=1, root_seed=seed.id)


def of_outcome(outcome: Mapping[str, Any]) -> Lineage:
    """The lineage an outcome records (an outcome from before rounds existed is round 1)."""
    recorded = outcome.get("lineage")
    if recorded:
        return Lineage.from_json(recorded)
    return Lineage(round=1, root_seed=str(outcome["seed_id"]))


def child_id(parent_task: str, round_number: int, taken: Collection[str]) -> str:
    """The id (and task name) of the seed that task `parent_task` becomes in `round_number`:
    `PARENT-rN`, or, when that is too long for a task name or already taken, the parent's
    name shortened with a digest of the whole, so that every task of a run keeps its own name."""
    suffix = f"-r{round_number}"
    plain = parent_task + suffix
    if len(plain) <= TASK_NAME_CHARS and plain not in taken:
        return plain
    digest = hashlib.sha256(f"{parent_task}\0{round_number}".encode()).hexdigest()[:8]
    tail = f"-{digest}{suffix}"
    named = parent_task[: TASK_NAME_CHARS - len(tail)].rstrip("-_") + tail
    if named in taken:
        raise ValueError(f"task {parent_task!r} cannot be given a round-{round_number} name")
    return named


def derive_seed(
    task_dir: Path,
    outcome: Mapping[str, Any],
    round_number: int,
    taken: Collection[str],
) -> tuple[Seed, Lineage]:
    """The seed of round `round_number` made of an accepted task's public formulation.

    The bundle is read back (its hash checked) and only its title and public
    statement are kept: the problem a learner is given, nothing of its checker.
    """
    bundle = read_bundle(task_dir)
    spec = bundle.spec
    parent = of_outcome(outcome)
    seed_id = child_id(spec.name, round_number, taken)
    seed = Seed(
        id=seed_id,
        title=spec.title[:TITLE_CHARS],
        problem=spec.statement,
        source=f"the public statement of task {spec.name}, accepted in round {parent.round}",
        license=str(spec.seed_lineage.get("seed_license") or "see the root seed"),
        family=str(outcome["family"]),
    )
    lineage = Lineage(
        round=round_number,
        root_seed=parent.root_seed,
        parent_task=spec.name,
        parent_seed=str(outcome["seed_id"]),
    )
    return seed, lineage
