"""One promotion rule per training run, and the comparisons made under it (Holm's family).

A rule chosen after seeing one checkpoint's numbers can be fitted to them,
and a run promoted often enough promotes some checkpoint by chance. So:

- the first `atoll pi train promote` of a run fixes its rule in
  `RUN/promotion_rule.json` (written atomically: the rule, its hash, the
  time); every later promotion of the run must bring the same rule (the same
  hash, whatever the file's spelling) or is refused: a new run is the honest
  way to change it;
- the rule's `checkpoints` is how many promotions the run may make: each
  promotion takes the next comparison number when its manifest is written,
  and once all are taken another promotion is refused;
- deciding a promotion Holm-adjusts each section's p-value over those m
  comparisons: the decided ones with the p-values their records hold, this
  one with its own, and every comparison not decided yet at p = 1. Holm's
  adjusted p-values never fall when another p-value rises, so no later
  comparison can overturn a decision made this way.

Run-level steps (fixing the rule, taking a comparison number, deciding)
happen under one lock on the run's promotions, so two promotions of one run
cannot take the same number or decide on each other's half-written state.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from atoll.core import run_lock as locks
from atoll.core.durable import atomic_write_json
from atoll.pi_train.promotion.paired_test import holm
from atoll.pi_train.promotion.rule import SECTIONS, Rule

RULE_FILE = "promotion_rule.json"
PROMOTIONS = "promotions"
MANIFEST = "manifest.json"
RECORD = "promotion.json"
LOCK_FILE = ".family.lock"
LOCK_WAIT_S = 600.0


class FamilyError(Exception):
    """A promotion the run's rule or its comparisons do not allow; one line saying why."""


def run_lock(run_dir: Path) -> locks.Lock:
    """The run's promotion lock, for the short run-level steps.

    A promotion that has waited `LOCK_WAIT_S` for another is refused, naming it.
    """
    return locks.wait(
        run_dir / PROMOTIONS / LOCK_FILE,
        timeout=LOCK_WAIT_S,
        what=f"the promotion lock of {run_dir}",
        advice="rerun once it ends",
        error=FamilyError,
    )


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def fixed_rule(run_dir: Path) -> dict[str, Any] | None:
    """The run's fixed rule record, or None before its first promotion."""
    return _read(run_dir / RULE_FILE)


def promotions(run_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every promotion of the run whose manifest was written, by comparison number."""
    folder = run_dir / PROMOTIONS
    if not folder.is_dir():
        return []
    found = []
    for directory in sorted(folder.iterdir()):
        manifest = _read(directory / MANIFEST) if directory.is_dir() else None
        if manifest is not None:
            found.append((directory, manifest))
    return sorted(found, key=lambda item: (item[1].get("comparison") or 0, item[0].name))


def check(run_dir: Path, rule: Rule, directory: Path) -> None:
    """Refuse a rule other than the run's, and a new promotion once every comparison is taken.

    Read-only: `plan` calls it before anything is written; `fix` calls it again
    under the lock.
    """
    fixed = fixed_rule(run_dir)
    earlier = promotions(run_dir)
    if fixed is None:
        if earlier:
            names = ", ".join(d.name for d, _ in earlier)
            raise FamilyError(
                f"{run_dir} holds promotions from before one rule per run was fixed ({names}); "
                "they decided by the pooled test: promote a new run"
            )
        return
    if fixed.get("rule_sha256") != rule.sha256():
        raise FamilyError(
            f"{run_dir} fixed another promotion rule (sha256 {str(fixed.get('rule_sha256'))[:16]}, "
            f"{fixed.get('fixed_at')}, in {run_dir / RULE_FILE}): one rule per training run; "
            "a new run is the way to change it"
        )
    if (directory / MANIFEST).is_file():
        return  # a promotion resumed: it holds its comparison already
    taken = [d.name for d, m in earlier if m.get("comparison")]
    if len(taken) >= rule.checkpoints:
        raise FamilyError(
            f"the rule of {run_dir} allows {rule.checkpoints} promotion(s) and all are taken "
            f"({', '.join(taken)}): a new run is the way to compare more checkpoints"
        )


def fix(run_dir: Path, rule: Rule, rule_file: Path, directory: Path) -> int:
    """Under the run lock: fix the run's rule if it is the first promotion; this one's number."""
    check(run_dir, rule, directory)
    kept = _read(directory / MANIFEST)
    if kept is not None and kept.get("comparison"):
        return int(kept["comparison"])
    if fixed_rule(run_dir) is None:
        atomic_write_json(
            run_dir / RULE_FILE,
            {
                "kind": "atoll-pi-train-promotion-rule",
                "rule": rule.to_json(),
                "rule_sha256": rule.sha256(),
                "rule_file": str(rule_file),
                "fixed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        )
    return 1 + sum(1 for _, m in promotions(run_dir) if m.get("comparison"))


def holm_family(
    run_dir: Path, rule: Rule, directory: Path, own: dict[str, float | None]
) -> dict[str, Any]:
    """Each section's Holm adjustment over the rule's m comparisons, this promotion's `own` p-values
    (a missing one counts as 1) among them; the family as the record shows it."""
    m = rule.checkpoints
    members: list[dict[str, Any]] = []
    for other, manifest in promotions(run_dir):
        if not manifest.get("comparison") or other == directory:
            continue
        record = _read(other / RECORD)
        p_values: dict[str, float | None] = {}
        for section in SECTIONS:
            value = ((record or {}).get(section) or {}).get("test", {}).get("p_greater")
            p_values[section] = float(value) if isinstance(value, int | float) else None
        members.append(
            {
                "promotion": other.name,
                "comparison": manifest["comparison"],
                "checkpoint": (manifest.get("identity") or {}).get("checkpoint"),
                "decided": record is not None,
                "p_greater": p_values,
            }
        )
    mine = _read(directory / MANIFEST) or {}
    members.append(
        {
            "promotion": directory.name,
            "comparison": mine.get("comparison"),
            "checkpoint": (mine.get("identity") or {}).get("checkpoint"),
            "decided": True,
            "p_greater": dict(own),
            "this": True,
        }
    )
    adjusted: dict[str, float] = {}
    for section in SECTIONS:
        values = [
            1.0 if x["p_greater"][section] is None else float(x["p_greater"][section])
            for x in members
        ]
        values += [1.0] * max(0, m - len(values))  # comparisons not made yet
        adjusted[section] = holm(values)[len(members) - 1]
    return {
        "method": "Holm step-down over the comparisons the rule allows this run",
        "m": m,
        "made": len(members),
        "not_decided_count_as": 1.0,
        "members": members,
        "p_adjusted": adjusted,
    }
