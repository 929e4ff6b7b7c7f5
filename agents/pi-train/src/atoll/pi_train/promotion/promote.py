"""`atoll pi train promote`: a checkpoint is promoted only when real Pi, in Docker, says so.

For a training run's `tinker://` sampler checkpoint: the Euler problems must
be ones no run in the checkpoint's chain trained on (atoll.pi_train.training.trained_on;
by default 91-100, which no training command draws from); the rule file is
checked against the run's one rule (atoll.pi_train.promotion.family) and
fixed first (its hash in `promotions/<id>/manifest.json`, with this
promotion's comparison number, written before the first rollout); then the
baseline (the base model, or `--baseline-checkpoint`) and the candidate are
each served with `atoll tinker serve` and evaluated with real Pi by
atoll-euler: the frozen transfer suite (`atoll euler transfer run`) and the
Euler problems (`atoll euler eval`). The decision test takes the problem
(the transfer task) as its unit: an exact paired test over per-problem pass
fractions (atoll.pi_train.promotion.paired_test), Holm-adjusted over the comparisons
the run's rule allows; atoll-euler's Fisher tests on pooled attempts stay
on the record as descriptive figures. The checkpoint is promoted only if
every threshold of the rule holds. The decision and all its inputs are one
record, `promotion.json`, written atomically; a promoted checkpoint is also
named in the run's `promoted.json`. A rerun resumes (each evaluation resumes
by itself) and never re-decides a decided promotion.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_json
from atoll.pi_train.promotion import family as promotion_family
from atoll.pi_train.promotion import paired_test
from atoll.pi_train.promotion.paired_test import Counts

# The inputs and the fixed rule (atoll.pi_train.promotion.plan) and the evaluation of each
# side (atoll.pi_train.promotion.sampling) live beside this module; their names stay
# importable from here, where the command line and the tests have always found them.
from atoll.pi_train.promotion.plan import (
    MANIFEST,
    Evaluation,
    Plan,
    PromoteError,
    Request,
    _now,
    fix_rule,
    plan,
    serving_state,
)
from atoll.pi_train.promotion.plan import _check_attainable as _check_attainable
from atoll.pi_train.promotion.plan import _check_checkpoint as _check_checkpoint
from atoll.pi_train.promotion.plan import _check_problems as _check_problems
from atoll.pi_train.promotion.plan import _expected_euler_rows as _expected_euler_rows
from atoll.pi_train.promotion.plan import _languages as _languages
from atoll.pi_train.promotion.plan import _model as _model
from atoll.pi_train.promotion.plan import _problems as _problems
from atoll.pi_train.promotion.plan import _saved_states as _saved_states
from atoll.pi_train.promotion.plan import _store_digest as _store_digest
from atoll.pi_train.promotion.plan import _system_prompt_sha256 as _system_prompt_sha256
from atoll.pi_train.promotion.plan import _training_config as _training_config
from atoll.pi_train.promotion.plan import _transfer_tasks as _transfer_tasks
from atoll.pi_train.promotion.sampling import KEY_VARIABLE, _euler_rows, _evaluate_side
from atoll.pi_train.promotion.sampling import _atoll as _atoll
from atoll.pi_train.promotion.sampling import _step as _step
from atoll.pi_train.promotion.sampling import _transfer_done as _transfer_done
from atoll.pi_train.training.run import RunInputError, api_key

__all__ = [
    "DESCRIPTIVE",
    "KEY_VARIABLE",
    "MANIFEST",
    "PROMOTED",
    "RECORD",
    "SIDES",
    "Evaluation",
    "Plan",
    "PromoteError",
    "Request",
    "decide",
    "fix_rule",
    "plan",
    "preflight",
    "promote",
    "serving_state",
]

RECORD = "promotion.json"
PROMOTED = "promoted.json"
SIDES = ("baseline", "candidate")


def preflight(say: Callable[[str], None]) -> None:
    """What every evaluation needs, checked before the rule is fixed (nothing written yet).

    The Tinker key (the server the checkpoint is served from), a Docker engine that
    answers and Pi's pinned install: without them a promotion could only fail later,
    after writing its manifest.
    """
    from atoll.pi.rollout import ContainerError, PiUnavailable, connect, ensure_pi

    try:
        api_key()
    except RunInputError as exc:
        raise PromoteError(str(exc)) from None
    try:
        connect().close()
        ensure_pi(say)
    except (ContainerError, PiUnavailable) as exc:
        raise PromoteError(str(exc)) from None


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _euler_comparison(baseline: Path, candidate: Path) -> dict[str, Any]:
    """The per-problem paired test of the two Euler evaluations, after checking they match;
    the pooled counts and Fisher's test beside it, as description only."""
    from atoll.euler import stats

    identities = []
    for directory in (baseline, candidate):
        identity = dict(json.loads((directory / "eval.json").read_text("utf-8"))["identity"])
        identity.pop("model_signature", None)
        settings = dict(identity.pop("settings", {}))
        settings.pop("base_url", None)  # the port each side was served on
        identities.append({**identity, "settings": settings})
    if identities[0] != identities[1]:
        differ = sorted(k for k in identities[0] if identities[0][k] != identities[1].get(k))
        raise PromoteError(
            f"the Euler evaluations are not comparable ({', '.join(differ)})", code=1
        )
    sides: dict[str, dict[str, Any]] = {}
    counts: dict[str, tuple[int, int]] = {}  # each side's passes and attempts
    by_problem: dict[str, dict[str, Counts]] = {}
    for name, directory in (("baseline", baseline), ("candidate", candidate)):
        data = _euler_rows(directory)
        by_problem[name] = paired_test.counts_by_unit(data, "problem")
        passes = sum(1 for r in data if r.get("passed"))
        counts[name] = (passes, len(data))
        sides[name] = {
            "attempts": len(data),
            "passes": passes,
            "pass_fraction": passes / len(data) if data else None,
            "rows_sha256": _sha256(directory / "rows.jsonl"),
            "eval_sha256": _sha256(directory / "eval.json"),
        }
    test = paired_test.paired_test(by_problem["baseline"], by_problem["candidate"])
    (a_passes, a_attempts), (b_passes, b_attempts) = counts["baseline"], counts["candidate"]
    pooled: dict[str, Any] = {"delta": None, "fisher": None}
    if a_attempts and b_attempts:
        fisher = stats.fisher(a_passes, a_attempts, b_passes, b_attempts)
        pooled["delta"] = b_passes / b_attempts - a_passes / a_attempts
        pooled["fisher"] = {
            "odds_ratio": fisher.odds_ratio,
            "p_two_sided": fisher.p_two_sided,
            "p_b_greater": fisher.p_b_greater,
        }
    return {
        **sides,
        "delta": test.delta,
        "test": test.to_json("problem"),
        "descriptive": {
            "note": DESCRIPTIVE,
            "pooled_delta": pooled["delta"],
            "fisher": pooled["fisher"],
        },
    }


DESCRIPTIVE = (
    "attempts pooled across problems as if independent (Fisher's exact test): a description, "
    "not the decision"
)


def _transfer_test(transfer: dict[str, Any]) -> paired_test.PairedResult:
    """The per-task paired test over atoll-euler's per-task counts (A baseline, B candidate)."""
    sides: dict[str, dict[str, Counts]] = {"a": {}, "b": {}}
    for line in transfer["tasks"]:
        for side in sides:
            cell = line[side]
            sides[side][str(line["task"])] = Counts(int(cell["attempts"]), int(cell["passes"]))
    return paired_test.paired_test(sides["a"], sides["b"])


def _sampled_after_rule(made: Plan) -> None:
    """Every row either side scored was written after the rule was fixed (its manifest's time)."""
    from atoll.euler import rows

    fixed = str(made.manifest["rule_fixed_at"])
    for side in SIDES:
        for part in ("transfer", "euler"):
            path = made.directory / side / part / rows.ROWS_FILE
            try:
                found = rows.read(path)
            except rows.RowsError as exc:
                raise PromoteError(f"{path} cannot be read: {exc}", code=1) from None
            early = [r for r in found if str(r.get("created_at") or "") < fixed]
            if early:
                raise PromoteError(
                    f"{path} holds {len(early)} row(s) written before the rule was fixed at "
                    f"{fixed}: this promotion cannot rest on them",
                    code=1,
                )


def _transfer_comparison(baseline: Path, candidate: Path) -> dict[str, Any]:
    from atoll.euler import ManifestError, compare_transfer

    try:
        return compare_transfer(baseline, candidate)
    except ManifestError as exc:
        raise PromoteError(f"the transfer runs are not comparable: {exc}", code=1) from None


def _finite(value: Any) -> Any:
    """The value with every NaN or infinity made null (an odds ratio of 0/0 is undefined)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _finite_record(record: dict[str, Any]) -> dict[str, Any]:
    """A JSON object with every NaN or infinity in it made null (see `_finite`)."""
    return {key: _finite(value) for key, value in record.items()}


def decide(made: Plan) -> dict[str, Any]:
    """The decision from the two sides' completed evaluations, with every input it rests on.

    Called under the run's promotion lock: the Holm family reads the other
    promotions' records.
    """
    base, cand = made.directory / "baseline", made.directory / "candidate"
    transfer = _transfer_comparison(base / "transfer", cand / "transfer")
    euler = _euler_comparison(base / "euler", cand / "euler")
    _sampled_after_rule(made)
    transfer_test = _transfer_test(transfer)
    family = promotion_family.holm_family(
        made.run_dir,
        made.rule,
        made.directory,
        {"transfer": transfer_test.p_greater, "euler": euler["test"]["p_greater"]},
    )
    adjusted = family["p_adjusted"]
    transfer_holds = made.rule.transfer.holds(transfer_test.delta, adjusted["transfer"])
    euler_holds = made.rule.euler.holds(euler["delta"], adjusted["euler"])
    promoted = transfer_holds and euler_holds
    manifests = {
        f"{side}_transfer_manifest_sha256": _sha256(made.directory / side / "transfer" / MANIFEST)
        for side in SIDES
    }
    m = made.rule.checkpoints
    return _finite_record(
        {
            "kind": "atoll-pi-train-promotion-decision",
            "decision": "promote" if promoted else "do not promote",
            "directory": str(made.directory),
            "promoted": promoted,
            "checkpoint": made.manifest["identity"]["checkpoint"],
            "baseline": made.manifest["identity"]["baseline"] or made.base_model,
            "rule": made.rule.to_json(),
            "rule_sha256": made.rule.sha256(),
            "rule_fixed_at": made.manifest["rule_fixed_at"],
            "manifest_sha256": _sha256(made.directory / MANIFEST),
            "identity": made.manifest["identity"],
            "comparison": made.manifest.get("comparison"),
            "statistics": (
                "decided by a one-sided exact paired sign-flip test over per-problem (per "
                f"transfer task) pass fractions, Holm-adjusted over the {m} comparison(s) the "
                f"run's rule allows ({family['made']} made; those not decided count as p = 1); "
                "Fisher's tests on pooled attempts are descriptive only"
            ),
            "holm": family,
            "inputs": manifests,
            "transfer": {
                "holds": transfer_holds,
                "delta": transfer_test.delta,
                "p_holm": adjusted["transfer"],
                "test": transfer_test.to_json("transfer task"),
                "descriptive": {
                    "note": DESCRIPTIVE,
                    "overall": transfer["overall"],
                    "tasks": transfer["tasks"],
                    "atoll_euler_decision": transfer["decision"],
                },
            },
            "euler": {"holds": euler_holds, "p_holm": adjusted["euler"], **euler},
            "decided_at": _now(),
        }
    )


def promote(request: Request, say: Callable[[str], None]) -> dict[str, Any]:
    """Fix the rule, evaluate both sides with real Pi, decide, record; the record."""
    from atoll.euler import writer

    made = plan(request)
    record_path = made.directory / RECORD
    if not record_path.is_file():
        preflight(say)
    try:
        with writer.hold(made.directory, "atoll pi train promote", flag="RUN"):
            if record_path.is_file():
                say(f"{made.directory}: decided already")
                return dict(json.loads(record_path.read_text("utf-8")))
            made = fix_rule(made)
            say(
                f"rule {made.rule.sha256()[:16]} fixed in {made.directory / MANIFEST} "
                f"(comparison {made.manifest.get('comparison')} of {made.rule.checkpoints})"
            )
            for side, checkpoint in (
                ("baseline", request.baseline_checkpoint),
                ("candidate", request.checkpoint),
            ):
                _evaluate_side(made, side, checkpoint, request, say)
            with promotion_family.run_lock(made.run_dir):
                record = decide(made)
                atomic_write_json(record_path, record)
                if record["promoted"]:
                    atomic_write_json(
                        request.run_dir / PROMOTED,
                        {
                            "checkpoint": record["checkpoint"],
                            "promotion": str(record_path),
                            "record_sha256": _sha256(record_path),
                            "decided_at": record["decided_at"],
                        },
                    )
            return record
    except writer.RunDirInUse as exc:
        raise PromoteError(str(exc)) from None
    except promotion_family.FamilyError as exc:
        raise PromoteError(str(exc), code=1) from None
