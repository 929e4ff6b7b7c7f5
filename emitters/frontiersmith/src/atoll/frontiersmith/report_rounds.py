"""The report's rounds (`--rounds`, `--population`): yield and diversity per round, lineage.

Each accepted task's entry in run.json says where it came from (`lineage`:
its round, its parent task and seed, its root seed) and whether the
population kept it; per round, `rounds` counts the seeds, the candidates
tried, the tasks accepted (the round's yield is accepted over tried, errors
included, as the run's is) and their execution diversity, and `population`
lists what was dropped, where its bundle went, and after which round.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from atoll.frontiersmith.lineage import of_outcome
from atoll.frontiersmith.outcome import Status
from atoll.frontiersmith.population import ranked
from atoll.frontiersmith.rounds import dropped_tasks, task_path

__all__ = ["accepted_entry_extras", "dropped_tasks", "rounds_markdown", "rounds_summary"]


def accepted_entry_extras(
    outcome: Mapping[str, Any], dropped: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """What an accepted task's entry adds: its lineage, its population status, its path."""
    name = outcome["task"]["name"]
    extras: dict[str, Any] = {
        "lineage": of_outcome(outcome).to_json(),
        "population": "dropped" if name in dropped else "kept",
        "task": {**outcome["task"], "path": task_path(name, dropped)},
    }
    if name in dropped:
        extras["dropped_after_round"] = dropped[name]["dropped_after_round"]
    return extras


def rounds_summary(
    ordered: Sequence[Mapping[str, Any]],
    seed_ids: Sequence[str],
    records: Sequence[Mapping[str, Any]],
    rounds: int,
) -> list[dict[str, Any]]:
    """Per round: seeds, tried, accepted, yield, diversity, and the population at its close."""
    handed = [len(r["next_seeds"]) for r in records]
    seeds = [len(seed_ids) - sum(handed), *handed]
    rows = []
    for number in range(1, rounds + 1):
        mine = [o for o in ordered if of_outcome(o).round == number]
        accepted = [o for o in mine if o["status"] == Status.ACCEPTED]
        measured = [ranked(o) for o in accepted]
        record = records[number - 1] if number <= len(records) else None
        rows.append(
            {
                "round": number,
                "seeds": seeds[number - 1] if number <= len(seeds) else 0,
                "candidates": len(mine),
                "accepted": len(accepted),
                "rejected": sum(1 for o in mine if o["status"] == Status.REJECTED),
                "errors": sum(1 for o in mine if o["status"] == Status.ERROR),
                "yield": len(accepted) / len(mine) if mine else 0.0,
                "mean_distinct_fraction": _mean([m.distinct_fraction for m in measured]),
                "mean_pair_distance": _mean([m.mean_distance for m in measured]),
                "closed": record is not None,
                "population_after": None if record is None else len(record["population"]),
                "dropped_after": None
                if record is None
                else sum(1 for d in record["dropped"] if d["dropped_after_round"] == number),
            }
        )
    return rows


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def rounds_markdown(summary: Mapping[str, Any]) -> list[str]:
    """The report's "Rounds" and "Lineage" sections (a run of more than one round)."""
    size = summary["population"]["size"]
    lines = [
        "",
        "## Rounds",
        "",
        f"{summary['config'].get('rounds')} rounds; from round 2 on, a round's seeds are the "
        "public statements of the tasks the round before accepted and the population kept. "
        + (
            f"Population: the {size} most diverse tasks of each family (root seed) are kept."
            if size
            else "Population: no cap."
        ),
        "",
        "| round | seeds | tried | accepted | yield | mean distinct pair share (execution) "
        "| mean pair distance | population after | dropped |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary["rounds"]:
        lines.append(
            f"| {r['round']} | {r['seeds']} | {r['candidates']} | {r['accepted']} | "
            f"{r['yield']:.1%} | {_num(r['mean_distinct_fraction'])} | "
            f"{_num(r['mean_pair_distance'])} | {_num(r['population_after'])} | "
            f"{_num(r['dropped_after'])} |"
        )
    lines += [
        "",
        "## Lineage",
        "",
        "| task | round | parent task | family (root seed) | population |",
        "|---|---|---|---|---|",
    ]
    for a in summary["accepted"]:
        lineage, task = a["lineage"], a["task"]
        status = (
            f"dropped after round {a['dropped_after_round']}"
            if a["population"] == "dropped"
            else "kept"
        )
        lines.append(
            f"| [{task['name']}]({task['path']}) | {lineage['round']} | "
            f"{lineage['parent_task'] or '-'} | {lineage['root_seed']} | {status} |"
        )
    return lines


def _num(value: float | int | None) -> str:
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.4f}"
