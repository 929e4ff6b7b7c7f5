"""Reading a bundle strictly: its layout, every mode, its hash, then its values.

Anything a writer would not have produced is refused (see
`atoll.checker.layout.scan`), and so is any content that does not match the
hash task.toml declares.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.checker import CheckerError, Contract, layout
from atoll.checker.layout import LayoutError
from atoll.frontiersmith.bundle.render import split_instruction
from atoll.frontiersmith.bundle.spec import (
    BASELINE_FILE,
    BASELINE_SUMMARY_FILE,
    RECIPE,
    SOLUTION_FILE,
    SOLUTION_SUMMARY_FILE,
    BundleError,
    BundleSpec,
)
from atoll.frontiersmith.bundle.validate import check_harbor_schema

_FROM = re.compile(r"^FROM\s+(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Bundle:
    """A bundle as read back: where it is, its verified hash, and its values."""

    path: Path
    bundle_hash: str
    spec: BundleSpec
    task_toml: dict[str, Any]


def read_bundle(path: Path) -> Bundle:
    """The bundle at `path`; BundleError names the first thing that is wrong with it."""
    path = Path(path)
    try:
        verified = layout.verify(path)
    except LayoutError as exc:
        raise BundleError(f"{path}: {exc}") from None
    except OSError as exc:
        raise BundleError(f"{path}: {exc}") from None
    files = {name: f.data.decode("utf-8", errors="strict") for name, f in _text(verified).items()}
    check_harbor_schema(files[layout.TASK_TOML])
    toml = verified.task_toml
    return Bundle(path, verified.bundle_hash, spec_from_files(path, toml, files), toml)


def spec_from_files(path: Path, toml: dict[str, Any], files: dict[str, str]) -> BundleSpec:
    """The spec a bundle's files were rendered from (the hash is the caller's to check)."""
    try:
        return _spec(toml, files)
    except (KeyError, TypeError, ValueError, CheckerError) as exc:
        raise BundleError(f"{path}: not a FrontierSmith bundle: {exc}") from None


def _text(verified: layout.Verified) -> dict[str, layout.BundleFile]:
    for name, file in verified.files.items():
        try:
            file.data.decode("utf-8")
        except UnicodeDecodeError:
            raise BundleError(f"{name} is not UTF-8 text") from None
    return verified.files


def _spec(toml: dict[str, Any], files: dict[str, str]) -> BundleSpec:
    meta = toml["metadata"]
    if meta.get("recipe") != RECIPE:
        raise ValueError(f"metadata.recipe is {meta.get('recipe')!r}, not {RECIPE!r}")
    task = toml["task"]
    prefix = f"{RECIPE}/"
    if not task["name"].startswith(prefix):
        raise ValueError(f"task name {task['name']!r} does not start with {prefix!r}")
    mutation = meta["mutation"]
    auto = {RECIPE, "optimization", mutation}
    language = layout.language_of(files)
    names = layout.CPP_NAMES if language == "cpp" else {}
    found = _FROM.search(files["environment/Dockerfile"])
    if found is None:
        raise ValueError("the Dockerfile has no FROM line")
    contract = Contract.from_json(json.loads(files["tests/contract.json"]))
    if contract.language != language:
        raise ValueError(
            f"tests/contract.json says {contract.language}, the solution is {language}"
        )
    return BundleSpec(
        name=task["name"][len(prefix) :],
        title=meta["title"],
        summary=task["description"],
        statement=split_instruction(files["instruction.md"], meta["title"]),
        solution=files[names.get(SOLUTION_FILE, SOLUTION_FILE)],
        generator=files["tests/generator.py"],
        scorer=files["tests/scorer.py"],
        feasibility=files["tests/feasibility.py"],
        contract=contract,
        mutation=mutation,
        seed_lineage=dict(meta.get("seed_lineage", {})),
        recipe_version=meta["recipe_version"],
        reference_reward=meta.get("reference_reward"),
        keywords=tuple(k for k in task.get("keywords", []) if k not in auto),
        base_image=found.group(1),
        agent_timeout_sec=float(toml["agent"]["timeout_sec"]),
        baseline=files.get(names.get(BASELINE_FILE, BASELINE_FILE)),
        baseline_summary=files.get(BASELINE_SUMMARY_FILE, ""),
        solution_summary=files.get(SOLUTION_SUMMARY_FILE, ""),
        search_contract=_search_contract(files.get(layout.SEARCH_CONTRACT)),
    )


def _search_contract(text: str | None) -> dict[str, str] | None:
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"{layout.SEARCH_CONTRACT} is not a JSON object")
    return value
