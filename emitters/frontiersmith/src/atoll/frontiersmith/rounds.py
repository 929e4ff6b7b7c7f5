"""`--rounds N`: accepted tasks feed the next round's seeds; `--population K` keeps the best.

Round 1 runs the run's seeds as a single-round run does. When a round ends
normally (every seed tried, or `--target` tasks accepted in it), it closes:
the population is chosen (`population.select`, over every task accepted so
far), the tasks it drops are moved from `DIR/tasks/` to `DIR/dropped/`, and
the tasks this round accepted that the population kept become the next
round's seeds, each made of its public statement alone (`lineage.derive_seed`).
The record of that (`runs/RUN_ID/rounds/round-N.json`) is written before any
bundle moves, so a resume finds the same decision: a closed round's next
seeds are read back, never derived again, and a moved bundle is not moved
twice.

A round that stops otherwise (budget, provider, interrupt) stays open: the
resume continues it, replaying every answered request from the ledger, and
runs no seed a round already finished. A seed of a closed round that ended in
an infrastructure error is tried again on resume, as in a single round; a task
it then yields counts in its round and joins the population at the next
close, but seeds no round (its round's successors were fixed at its close).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_json, fsync_dir
from atoll.frontiersmith.bundle import BundleError
from atoll.frontiersmith.config import RunConfig
from atoll.frontiersmith.lineage import Lineage, derive_seed
from atoll.frontiersmith.outcome import Status
from atoll.frontiersmith.population import Ranked, select
from atoll.frontiersmith.runs import RunDir, RunError
from atoll.frontiersmith.seeds import Seed, task_name

RECORD_LISTS = ("population", "dropped", "next_seeds")  # what a round's record must hold


class Rounds:
    """A run's closed rounds, as recorded in `runs/RUN_ID/rounds/`."""

    def __init__(self, run: RunDir, config: RunConfig) -> None:
        self.run = run
        self.config = config

    def path(self, number: int) -> Path:
        return self.run.rounds_dir / f"round-{number}.json"

    def record(self, number: int) -> dict[str, Any] | None:
        """Round `number`'s record, or None while it is open."""
        path = self.path(number)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunError(f"the record of round {number} ({path}) cannot be read: {exc}") from None
        if (
            not isinstance(data, dict)
            or data.get("round") != number
            or not all(isinstance(data.get(k), list) for k in RECORD_LISTS)
        ):
            raise RunError(f"{path} is not the record of round {number}")
        return data

    def records(self) -> list[dict[str, Any]]:
        """The closed rounds' records, in order."""
        found = []
        for number in range(1, self.config.rounds + 1):
            record = self.record(number)
            if record is None:
                break
            found.append(record)
        return found

    def next_seeds(self, number: int) -> list[tuple[Seed, Lineage]]:
        """The seeds closed round `number` handed to round `number + 1`."""
        record = self.record(number)
        if record is None:
            raise RunError(f"round {number} is not closed: round {number + 1} has no seeds yet")
        return [
            (Seed(**entry["seed"]), Lineage.from_json(entry["lineage"]))
            for entry in record["next_seeds"]
        ]

    def seed_ids(self, first: Sequence[Seed]) -> list[str]:
        """Every seed the run has had, round by round (the later rounds' as far as known)."""
        ids = [s.id for s in first]
        for record in self.records():
            ids += [entry["seed"]["id"] for entry in record["next_seeds"]]
        return ids

    def dropped(self) -> dict[str, dict[str, Any]]:
        """The tasks the population dropped, by name, each with the round it was dropped after."""
        return dropped_tasks(self.records())

    def close(
        self,
        number: int,
        round_seeds: Sequence[str],
        journal: Mapping[str, Mapping[str, Any]],
        first: Sequence[Seed],
    ) -> dict[str, Any]:
        """Close round `number` (again, on a resume: the same decision, late tasks folded in).

        RunError when an accepted task's bundle cannot be read back or moved.
        """
        accepted = [o for o in journal.values() if o["status"] == Status.ACCEPTED]
        kept, dropped = select(accepted, self.config.population)
        previous = self.record(number)
        earlier = self.dropped()
        if previous is not None:
            next_seeds = previous["next_seeds"]
        elif number < self.config.rounds:
            order = {seed_id: i for i, seed_id in enumerate(round_seeds)}
            parents = sorted(
                (k for k in kept if k.seed_id in order and k.round == number),
                key=lambda k: order[k.seed_id],
            )
            next_seeds = self._derive(number + 1, parents, journal, first)
        else:
            next_seeds = []
        record = {
            "round": number,
            "population_size": self.config.population or None,
            "population": [k.to_json() for k in kept],
            "dropped": [
                d.to_json()
                | {
                    "dropped_after_round": earlier.get(d.task, {}).get(
                        "dropped_after_round", number
                    )
                }
                for d in dropped
            ],
            "next_seeds": next_seeds,
        }
        if previous is None or {**previous, "closed_at": 0} != {**record, "closed_at": 0}:
            atomic_write_json(
                self.path(number), record | {"closed_at": time.time()}, make_parents=True
            )
        self._move_dropped(dropped)
        return record

    def _derive(
        self,
        number: int,
        parents: Sequence[Ranked],
        journal: Mapping[str, Mapping[str, Any]],
        first: Sequence[Seed],
    ) -> list[dict[str, Any]]:
        """Round `number`'s seeds: each parent task's public statement, a name of its own."""
        taken = {task_name(s) for s in first} | set(self.seed_ids(first))
        taken |= {str(o["task"]["name"]) for o in journal.values() if o.get("task")}
        derived = []
        for parent in parents:
            outcome = journal[parent.seed_id]
            task_dir = self.run.out / outcome["task"]["path"]
            try:
                seed, lineage = derive_seed(task_dir, outcome, number, taken)
            except BundleError as exc:
                raise RunError(
                    f"round {number - 1} cannot close: task {parent.task}'s bundle cannot be "
                    f"read back ({exc})"
                ) from None
            taken.add(seed.id)
            derived.append({"seed": seed.to_json(), "lineage": lineage.to_json()})
        return derived

    def _move_dropped(self, dropped: Sequence[Ranked]) -> None:
        """Move each dropped task's bundle to `DIR/dropped/` (once; a resume finds it there)."""
        for entry in dropped:
            source = self.run.tasks_dir / entry.task
            target = self.run.dropped_dir / entry.task
            if target.exists():
                if source.exists():
                    raise RunError(f"task {entry.task} is both in {source} and in {target}")
                continue
            if not source.is_dir():
                raise RunError(
                    f"task {entry.task}, dropped from the population, is not in {source}"
                )
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.rename(source, target)
                fsync_dir(target.parent)
                fsync_dir(source.parent)
            except OSError as exc:
                raise RunError(f"task {entry.task} cannot be moved to {target}: {exc}") from None


def dropped_tasks(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The tasks closed rounds' records say the population dropped, by name (the first record
    that says so: the round it was dropped after)."""
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        for entry in record["dropped"]:
            found.setdefault(entry["task"], dict(entry))
    return found


def task_path(name: str, dropped: Mapping[str, Any]) -> str:
    """Where an accepted task's bundle is, relative to `--out`."""
    return f"dropped/{name}" if name in dropped else f"tasks/{name}"
