"""The held-out evaluation of a training run: its settings, its records, and how it is read back.

`hidden` and `shell` hold out their families' `eval` namespace (balanced over
families and languages, `--eval-instances` of each); `answer` holds out its
curriculum's regression window, when it has one. The trainer's job carries
the held-out tasks as `eval_tasks`: the cookbook's test-set evaluator samples
each `eval_group_size` times at the iterations `eval_every` divides (before
that iteration's update, so iteration 0 measures the starting policy) and
logs `test/env/...` metrics beside the training ones in `metrics.jsonl`,
pass@k among them (managed/pass_at_k.py). Nothing held out is ever in a
training batch. The summary reads them back through `columns` and
`description`, and says so when a run has no held-out set rather than
showing one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from atoll.pi_train.managed.pass_at_k import metric_name

HELD_OUT_REWARD = "test/env/all/reward/total"
_PASS_AT = re.compile(r"^test/env/all/pass@(\d+)$")


@dataclass(frozen=True)
class HeldOut:
    """`--eval-instances`, `--eval-samples` and `--eval-every` of `hidden` and `shell`."""

    instances: int = 1  # per family x language; 0: no held-out set
    samples: int = 1  # episodes per held-out task: pass@k for k up to this
    every: int = 10  # iterations; 0: never evaluated

    def check(self) -> str | None:
        """One line naming a flag out of range, or None."""
        for name, value, least in (
            ("--eval-instances", self.instances, 0),
            ("--eval-samples", self.samples, 1),
            ("--eval-every", self.every, 0),
        ):
            if value < least:
                return f"{name} must be at least {least} (got {value})"
        return None


def record(options: HeldOut, groups: int) -> dict[str, Any]:
    """The manifest's `evaluation`."""
    return {
        "namespace": "eval",
        "instances_per_family_language": options.instances,
        "samples": options.samples,
        "groups": groups,
        "every": options.every,
        "receives_gradients": False,
    }


def job_fields(public_tasks: list[dict[str, Any]], options: HeldOut) -> dict[str, Any]:
    """The trainer job's evaluation fields (managed/train.py's `_held_out`)."""
    return {
        "eval_tasks": public_tasks,
        "eval_every": options.every,
        "eval_group_size": options.samples,
    }


def pass_at_columns(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(heading, key) of every held-out pass@k the rows hold, k ascending."""
    found = {int(m.group(1)) for row in rows for key in row if (m := _PASS_AT.match(key))}
    return [(f"held-out {metric_name(k)}", f"test/env/all/{metric_name(k)}") for k in sorted(found)]


def columns(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The held-out columns of the summary's table: its reward, then pass@k."""
    return [("held-out reward", HELD_OUT_REWARD), *pass_at_columns(rows)]


def description(manifest: dict[str, Any]) -> tuple[bool, str]:
    """(whether the run has a held-out set, one sentence saying what it is or why none)."""
    evaluation = manifest.get("evaluation")
    if isinstance(evaluation, dict):
        return _namespace(evaluation)
    replay = manifest.get("replay")
    if isinstance(replay, dict):
        window = replay.get("regression_window") or {}
        problems = window.get("problems") or []
        if not problems:
            return False, (
                "This run has no held-out set: its curriculum's regression window is empty "
                "(nothing mastered outside the pools yet)."
            )
        return True, (
            f"Held-out set: the regression window, Euler problems {problems} "
            f"({window.get('group_size', '?')} samples per language x strategy, never a "
            f"gradient), evaluated every {window.get('every_iterations')} iteration(s) from "
            "iteration 0, before that iteration's update."
        )
    if manifest.get("command") == "atoll pi train answer":
        return False, (
            "This run has no held-out set: `answer` holds out only a curriculum's regression "
            "window (`--curriculum`), and this run has no curriculum."
        )
    return False, "This run has no held-out set: its manifest records no held-out evaluation."


def _namespace(evaluation: dict[str, Any]) -> tuple[bool, str]:
    groups, every = int(evaluation.get("groups", 0)), int(evaluation.get("every", 0))
    if groups == 0:
        return False, "This run has no held-out set (`--eval-instances 0`)."
    if every == 0:
        return False, f"This run never evaluated its {groups} held-out groups (`--eval-every 0`)."
    samples = int(evaluation.get("samples", 1))
    return True, (
        f"Held-out set: {groups} groups from the `eval` namespace "
        f"({evaluation.get('instances_per_family_language')} instance(s) per family and "
        f"language, {samples} sample(s) each, never a gradient), evaluated every {every} "
        "iteration(s) from iteration 0, before that iteration's update."
    )
