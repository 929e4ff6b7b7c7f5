"""Seed problems: the closed-ended problems FrontierSmith turns into open-ended tasks.

A seed is one JSON object with exactly the fields `id`, `title`, `problem`,
`source`, `license` and `family` (the JSON Schema is `seed_sets/seed.schema.json`).
Two sets ship with the package, both written for atoll and under its
licence: `textbook` (20 classic problems in our own words) and `domains`
(200 problems over 20 domains, ten each). A user's own set is a file in the
same shape: a JSON list, or JSON Lines (one object a line).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

SHIPPED_SETS = ("textbook", "domains")
TASK_NAME_CHARS = 63


class SeedError(ValueError):
    """A seed set that cannot be used: unknown name, unreadable file, or an invalid seed."""


@dataclass(frozen=True)
class Seed:
    id: str
    title: str
    problem: str
    source: str
    license: str
    family: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


@cache
def seed_schema() -> dict[str, Any]:
    text = (
        resources.files("atoll.frontiersmith").joinpath("seed_sets", "seed.schema.json").read_text()
    )
    schema: dict[str, Any] = json.loads(text)  # the packaged schema: one JSON object
    return schema


def load_seeds(name_or_path: str) -> list[Seed]:
    """A shipped set by name, or a user's JSON list / JSONL file; every seed validated."""
    if name_or_path in SHIPPED_SETS:
        shipped = resources.files("atoll.frontiersmith").joinpath(
            "seed_sets", f"{name_or_path}.json"
        )
        return parse_seeds(shipped.read_text(encoding="utf-8"), f"the {name_or_path} seed set")
    path = Path(name_or_path)
    if not path.is_file():
        raise SeedError(
            f"unknown seed set {name_or_path!r}: name one of {', '.join(SHIPPED_SETS)} "
            "or a JSON / JSONL file of seeds"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SeedError(f"cannot read the seed file {path}: {exc}") from None
    return parse_seeds(text, str(path))


def parse_seeds(text: str, where: str) -> list[Seed]:
    """Seeds from a JSON list or from JSON Lines, checked against the schema and for unique ids."""
    records = _records(text, where)
    if not records:
        raise SeedError(f"{where} holds no seeds")
    validator = jsonschema.Draft202012Validator(seed_schema())
    seeds: list[Seed] = []
    seen: set[str] = set()
    for number, record in enumerate(records, 1):
        error = jsonschema.exceptions.best_match(validator.iter_errors(record))
        if error is not None:
            at = "/".join(str(p) for p in error.absolute_path) or "the object"
            raise SeedError(f"{where}: seed {number} is invalid at {at}: {error.message}")
        if record["id"] in seen:
            raise SeedError(f"{where}: seed id {record['id']!r} appears twice")
        seen.add(record["id"])
        seeds.append(Seed(**record))
    _distinct_task_names(seeds, where)
    return seeds


def task_name(seed: Seed) -> str:
    """The emitted task's directory and Harbor name: the seed id, made a bundle name
    (lowercase letters, digits, `-` and `_`, at most 63 characters)."""
    name = re.sub(r"[^a-z0-9_-]", "-", seed.id.lower()).strip("-_")
    return (name or "task")[:TASK_NAME_CHARS]


def _distinct_task_names(seeds: list[Seed], where: str) -> None:
    """Two seeds whose tasks would share one bundle name are refused before anything runs: the
    second task could neither be written beside the first nor be told apart from it."""
    owners: dict[str, str] = {}
    for seed in seeds:
        name = task_name(seed)
        if name in owners:
            raise SeedError(
                f"{where}: seed ids {owners[name]!r} and {seed.id!r} both become the task name "
                f"{name!r} (a task name keeps lowercase letters, digits, '-' and '_', at most "
                f"{TASK_NAME_CHARS} characters); give one of them another id"
            )
        owners[name] = seed.id


def _records(text: str, where: str) -> list[Any]:
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise SeedError(f"{where} is not valid JSON: {exc}") from None
        return list(data)
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise SeedError(f"{where}: line {number} is not valid JSON: {exc.msg}") from None
    return records
