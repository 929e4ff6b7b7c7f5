"""What a training run trained on, and what it started from: the record promotion checks.

A promotion is honest only on problems the checkpoint never trained on,
through any run in its chain. Every training command writes two fields into
its `manifest.json` (atomically, with the rest of the manifest):

- `trained_on`: the Euler problems that received gradients (`answer`'s
  problems; `hidden`'s families stand for Euler problems 1 and 2, whose
  mathematics they parameterise, so they count as those problems), the
  family instances (family, split, generator, index ranges), a digest of the
  hidden case sets, and what was only evaluated (no gradient): the
  regression window, the held-out instances;
- `started_from`: `null` for a base model, else the `--load-checkpoint` state
  with a copy of the earlier run's own `trained_on` and `started_from`
  (so the chain survives that directory being moved or deleted), or, when
  the state was named by its `tinker://` path and no directory says what
  trained it, `unrecorded` with the reason.

Runs written before these fields existed are read by `run_record`, which
derives the same record from what their manifest holds where it can (the
task set's digest must then match a recomputed task list) and otherwise
says, in one line, why it cannot.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
TRAINED_ON = "trained_on"
STARTED_FROM = "started_from"

# The Euler problem each hidden-variant family parameterises (atoll.pi_train.hidden.families).
HIDDEN_FAMILY_PROBLEMS = {"multiples": 1, "recurrence": 2}


def _ranges(indices: Iterable[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for n in sorted(set(indices)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return runs


def family_instances(items: Iterable[tuple[str, str, int]], generator: str) -> dict[str, Any]:
    """{family: {split, generator, indices: [[first, last], ...]}} from (family, split, index)."""
    by_family: dict[str, tuple[str, set[int]]] = {}
    for family, split, index in items:
        by_family.setdefault(family, (split, set()))[1].add(index)
    return {
        family: {"split": split, "generator": generator, "indices": _ranges(indices)}
        for family, (split, indices) in sorted(by_family.items())
    }


def record(
    *,
    euler_problems: Iterable[int] = (),
    families: dict[str, Any] | None = None,
    hidden_case_sets: dict[str, Any] | None = None,
    evaluated_problems: Iterable[int] = (),
    evaluated_families: dict[str, Any] | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """One run's own `trained_on` (its ancestors are in `started_from`)."""
    found: dict[str, Any] = {
        "format": FORMAT,
        "euler_problems": sorted(set(euler_problems)),
        "family_instances": families or {},
        "hidden_case_sets": hidden_case_sets,
        "evaluated_only": {
            "euler_problems": sorted(set(evaluated_problems)),
            "family_instances": evaluated_families or {},
        },
    }
    if note:
        found["note"] = note
    return found


def case_sets_digest(instance_digests: Iterable[str]) -> dict[str, Any]:
    """The hidden case sets trained on, as one sha256 over their instance digests, in order."""
    digests = list(dict.fromkeys(instance_digests))
    joined = "\n".join(digests).encode()
    return {"count": len(digests), "sha256": hashlib.sha256(joined).hexdigest()}


def hidden_record(tasks: Iterable[Any], held_out: Iterable[Any] = ()) -> dict[str, Any]:
    """`hidden`'s record from its HiddenTask lists (training groups, held-out groups)."""
    from atoll.pi_train.hidden.families import GENERATOR_VERSION

    listed = list(tasks)
    instances = [t.instance for t in listed]
    evaluated = [t.instance for t in held_out]
    return record(
        euler_problems=(HIDDEN_FAMILY_PROBLEMS[i.family] for i in instances),
        families=family_instances(
            ((i.family, i.split, i.index) for i in instances), GENERATOR_VERSION
        ),
        hidden_case_sets=case_sets_digest(i.digest() for i in instances),
        evaluated_families=family_instances(
            ((i.family, i.split, i.index) for i in evaluated), GENERATOR_VERSION
        ),
        note="hidden-variant families count as the Euler problems they parameterise",
    )


def answer_record(training: Iterable[Any], evaluated: Iterable[Any] = ()) -> dict[str, Any]:
    """`answer`'s record from its AnswerTask lists (training groups, regression window)."""
    return record(
        euler_problems=(t.number for t in training),
        evaluated_problems=(t.number for t in evaluated),
    )


def shell_record(training: Iterable[Any], held_out: Iterable[Any]) -> dict[str, Any]:
    """`shell`'s record from its ShellTask lists: generated file tasks, no Euler problem."""
    from atoll.pi_train.shell.families import GENERATOR_VERSION

    def items(tasks: Iterable[Any]) -> list[tuple[str, str, int]]:
        return [(t.instance.family, t.instance.split, t.instance.index) for t in tasks]

    return record(
        families=family_instances(items(training), GENERATOR_VERSION),
        evaluated_families=family_instances(items(held_out), GENERATOR_VERSION),
    )


def bootstrap_record(corpus_sha256: str) -> dict[str, Any]:
    """The bootstrap's record: its corpus holds no Euler problem (its guard checks that)."""
    return record(note=f"supervised tool-protocol corpus {corpus_sha256}, no Euler content")


# --- where a run started from -------------------------------------------------------------


def started_from(value: str | None, state: str | None, store: Any = None) -> dict[str, Any] | None:
    """The `started_from` of a run launched with `--load-checkpoint value` (resolved to `state`).

    A run directory is read now (`run_record`) and copied in; a bare `tinker://`
    state cannot be traced to what trained it, and says so.
    """
    if value is None or state is None:
        return None
    path = Path(value)
    if not value.startswith("tinker://") and path.is_dir():
        found = run_record(path, store)
        return {
            "state": state,
            "run_dir": str(path.resolve()),
            "command": found.command,
            TRAINED_ON: found.trained_on,
            STARTED_FROM: found.started_from,
            **({"unrecorded": found.unrecorded} if found.unrecorded else {}),
        }
    return {
        "state": state,
        "run_dir": None,
        "command": None,
        TRAINED_ON: None,
        STARTED_FROM: None,
        "unrecorded": (
            f"it started from {state}, named by its tinker:// path: no run directory says "
            "what trained it (start from the run directory instead)"
        ),
    }


def keep_known(new: dict[str, Any] | None, old: Any) -> dict[str, Any] | None:
    """A resumed run keeps the lineage it recorded when the same state is now named less fully."""
    if (
        isinstance(new, dict)
        and new.get("unrecorded")
        and isinstance(old, dict)
        and old.get("state") == new.get("state")
        and not old.get("unrecorded")
    ):
        return old
    return new


# --- reading a run directory ----------------------------------------------------------------


@dataclass(frozen=True)
class RunRecord:
    """A run's own record and lineage; `unrecorded` says why either cannot be known."""

    command: str | None
    trained_on: dict[str, Any] | None
    started_from: dict[str, Any] | None
    unrecorded: str | None = None
    derived: bool = False


def _manifest(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir / "manifest.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def run_record(run_dir: Path, store: Any = None) -> RunRecord:
    """What `run_dir` trained on and started from: recorded, or derived for an older run."""
    manifest = _manifest(run_dir)
    if manifest is None:
        return RunRecord(None, None, None, f"{run_dir} holds no readable training manifest")
    command = manifest.get("command")
    if TRAINED_ON in manifest:
        return RunRecord(command, manifest[TRAINED_ON], manifest.get(STARTED_FROM))
    return derive(run_dir, manifest, store)


def derive(run_dir: Path, manifest: dict[str, Any], store: Any = None) -> RunRecord:
    """The record of a run written before runs recorded it, from what its manifest holds."""
    command = str(manifest.get("command"))
    config = manifest.get("config") or {}
    lineage: dict[str, Any] | None = None
    loaded = config.get("load_checkpoint")
    if loaded:
        lineage = {
            "state": loaded,
            "run_dir": None,
            "command": None,
            TRAINED_ON: None,
            STARTED_FROM: None,
            "unrecorded": (
                f"{run_dir} started from {loaded} before runs recorded where they started "
                "from; what trained that state is not known"
            ),
        }
    try:
        own = _derive_own(run_dir, command, config, manifest, store)
    except _Underivable as exc:
        return RunRecord(command, None, lineage, str(exc), derived=True)
    return RunRecord(command, own, lineage, derived=True)


class _Underivable(Exception):
    pass


def _groups(config: dict[str, Any]) -> int:
    try:
        return int(config["groups_per_batch"]) * int(config["iterations"])
    except (KeyError, TypeError, ValueError):
        raise _Underivable("its manifest lacks groups_per_batch or iterations") from None


def _derive_own(
    run_dir: Path, command: str, config: dict[str, Any], manifest: dict[str, Any], store: Any
) -> dict[str, Any]:
    from atoll.pi_train.training import tasks

    old = f"{run_dir} was trained before runs recorded what they trained on"
    task_set = manifest.get("task_set") or {}
    if command == "atoll pi bootstrap train":
        return bootstrap_record(str(task_set.get("digest")))
    if command == "atoll pi train shell":
        return record(note="derived: generated file tasks, no Euler problem")
    if command == "atoll pi train hidden":
        languages = tuple(config.get("languages") or ())
        try:
            listed = tasks.hidden_tasks(languages, _groups(config))
        except tasks.TaskSetError as exc:
            raise _Underivable(f"{old}, and its tasks cannot be listed again ({exc})") from None
        if tasks.digest(listed) != task_set.get("digest"):
            raise _Underivable(f"{old}, and its task set cannot be listed again")
        return hidden_record(listed)
    if command == "atoll pi train answer":
        replay = manifest.get("replay")
        if isinstance(replay, dict):
            pools = (replay.get("mix") or {}).get("pools") or {}
            window = (replay.get("regression_window") or {}).get("problems") or []
            problems = [int(n) for pool in pools.values() for n in pool]
            return record(euler_problems=problems, evaluated_problems=window)
        return _derive_answer(old, config, task_set, store)
    raise _Underivable(f"{run_dir} holds a run of {command!r}, which records no training set")


def _derive_answer(
    old: str, config: dict[str, Any], task_set: dict[str, Any], store: Any
) -> dict[str, Any]:
    from atoll.pi_train.training import tasks

    trained_store = task_set.get("store")
    if store is None or store.digest != trained_store:
        raise _Underivable(
            f"{old}; its problems follow from its Euler store (digest {str(trained_store)[:16]}), "
            "so give that store with --store"
        )
    languages = tuple(config.get("languages") or ())
    count = _groups(config)
    # Before problems 91-100 were reserved, numerical order took every problem of the store.
    for leave_out in (False, True):
        try:
            listed = tasks.answer_tasks(store, languages, count, leave_out_reserved=leave_out)
        except tasks.TaskSetError:
            continue
        if tasks.digest(listed) == task_set.get("digest"):
            return answer_record(listed)
    raise _Underivable(f"{old}, and its task set cannot be listed again from that store")


# --- the problems a whole chain trained on ------------------------------------------------


@dataclass
class ChainProblems:
    """Every Euler problem a run and its ancestors trained on, and which run did."""

    trained: dict[int, list[str]] = field(default_factory=dict)  # problem -> runs
    unrecorded: list[str] = field(default_factory=list)


def chain_problems(run_dir: Path, store: Any = None) -> ChainProblems:
    """The Euler problems `run_dir` and every run it was started from trained on."""
    found = ChainProblems()
    top = run_record(run_dir, store)
    _walk(str(run_dir), top.command, top.trained_on, top.started_from, top.unrecorded, store, found)
    return found


def _walk(
    where: str,
    command: str | None,
    own: dict[str, Any] | None,
    lineage: Any,
    unrecorded: str | None,
    store: Any,
    found: ChainProblems,
    depth: int = 0,
) -> None:
    if own is None and unrecorded:
        found.unrecorded.append(unrecorded)
    elif isinstance(own, dict):
        for n in own.get("euler_problems") or []:
            found.trained.setdefault(int(n), []).append(f"{command or 'a run'} in {where}")
    if not isinstance(lineage, dict) or depth > 64:
        return
    parent_own = lineage.get(TRAINED_ON)
    parent_lineage = lineage.get(STARTED_FROM)
    parent_command = lineage.get("command")
    reason = lineage.get("unrecorded")
    parent_dir = lineage.get("run_dir")
    if parent_own is None and parent_dir and Path(parent_dir).is_dir():
        # Not copied when the run started (an older parent needing a store): read it now.
        again = run_record(Path(parent_dir), store)
        parent_command, parent_own, parent_lineage = (
            again.command,
            again.trained_on,
            again.started_from,
        )
        reason = again.unrecorded
    if parent_own is None and not reason:
        reason = f"{where} started from {lineage.get('state')}, whose training is not recorded"
    _walk(
        parent_dir or str(lineage.get("state")),
        parent_command,
        parent_own,
        parent_lineage,
        reason,
        store,
        found,
        depth + 1,
    )
