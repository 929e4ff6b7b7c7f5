"""The promotion's inputs and its fixed rule: everything checked before a model is served.

Split from atoll.pi_train.promotion.promote so that what a promotion takes (the request,
the evaluation both sides share) and what it refuses (checkpoints, problems
trained on, a rule no outcome could meet) read apart from sampling and
deciding: `plan` checks every input and names the promotion by its identity,
`fix_rule` writes the manifest that fixes the rule before the first rollout.
Its names stay importable from atoll.pi_train.promotion.promote.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_json, canonical_json
from atoll.pi_train.promotion import family as promotion_family
from atoll.pi_train.promotion import paired_test, reserved
from atoll.pi_train.promotion import rule as promotion_rule
from atoll.pi_train.promotion.rule import Rule

MANIFEST = "manifest.json"


class PromoteError(Exception):
    """A promotion that cannot start (code 2) or could not finish (code 1)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Evaluation:
    """How both sides are evaluated: the same for baseline and candidate, by construction."""

    store: str
    problems: str
    languages: str
    samples: int
    transfer_samples: int
    max_turns: int
    timeout: float
    max_tokens: int | None
    system_prompt: str | None = None  # a file whose text replaces Pi's system prompt


@dataclass(frozen=True)
class Request:
    run_dir: Path
    checkpoint: str
    rule_file: Path
    evaluation: Evaluation
    tinker_url: str
    base_model: str | None = None
    renderer: str | None = None
    baseline_checkpoint: str | None = None
    # Rollouts at a time in each evaluation. Not part of the evaluation's identity: it
    # changes how long a side takes, never what is measured (atoll-euler's own rule).
    workers: int = 1


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _training_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    if not path.is_file():
        return {}
    try:
        config = json.loads(path.read_text("utf-8")).get("config") or {}
    except (OSError, ValueError, AttributeError) as exc:
        raise PromoteError(f"{path} cannot be read: {exc}") from None
    return dict(config) if isinstance(config, dict) else {}


def _model(request: Request) -> tuple[str, str]:
    """The base model and renderer: the training run's, unless it has none (then the flags')."""
    config = _training_config(request.run_dir)
    chosen = {}
    for key, flag, given in (
        ("base_model", "--base-model", request.base_model),
        ("renderer", "--renderer", request.renderer),
    ):
        trained = config.get(key)
        if given is not None and trained is not None and given != trained:
            raise PromoteError(
                f"{flag} {given} differs from the training run's {trained}; leave it out"
            )
        value = given if given is not None else trained
        if value is None:
            raise PromoteError(f"{flag} is needed: {request.run_dir} holds no training manifest")
        chosen[key] = str(value)
    return chosen["base_model"], chosen["renderer"]


def _saved_states(run_dir: Path) -> dict[str, str | None]:
    """The run's sampler checkpoints, each with the training state saved with it."""
    saved = run_dir / "checkpoints.jsonl"
    if not saved.is_file():
        return {}
    states: dict[str, str | None] = {}
    for line in saved.read_text("utf-8").splitlines():
        with contextlib.suppress(ValueError, AttributeError):
            row = json.loads(line)
            if isinstance(row.get("sampler_path"), str):
                states[row["sampler_path"]] = row.get("state_path")
    return states


def serving_state(run_dir: Path, checkpoint: str | None, tinker_url: str) -> str | None:
    """The training state to serve `checkpoint` from, on SkyRL tx only; None elsewhere.

    SkyRL tx (a Tinker server on loopback: this machine's or one's own GPUs) unloads a
    finished run's model, so its sampler checkpoint is served by reloading the state saved
    beside it. Hosted Tinker samples a sampler checkpoint directly: reloading the state
    there would open a training client and save the weights again for nothing.
    """
    from urllib.parse import urlsplit

    from atoll.core.sandbox.fusion import is_loopback_host

    if checkpoint is None or not is_loopback_host(urlsplit(tinker_url).hostname or ""):
        return None
    return _saved_states(run_dir).get(checkpoint)


def _check_checkpoint(run_dir: Path, checkpoint: str, flag: str) -> None:
    if not checkpoint.startswith("tinker://"):
        raise PromoteError(f"{flag} must be a tinker:// sampler checkpoint (got {checkpoint!r})")
    states = _saved_states(run_dir)
    if flag == "--checkpoint" and states and checkpoint not in states:
        raise PromoteError(
            f"{checkpoint} is not a sampler checkpoint of {run_dir} (see its checkpoints.jsonl)"
        )


def _store_digest(path: str) -> str:
    from atoll.euler import Store, StoreError

    try:
        return str(Store(Path(path)).digest)
    except StoreError as exc:
        raise PromoteError(str(exc)) from None


def _system_prompt_sha256(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise PromoteError(f"--system-prompt {path}: {exc.strerror}") from None


def _problems(evaluation: Evaluation) -> list[int]:
    from atoll.euler import parse_problems

    try:
        return parse_problems(evaluation.problems)
    except ValueError as exc:
        raise PromoteError(f"--problems: {exc}") from None


def _expected_euler_rows(evaluation: Evaluation) -> int:
    return len(_problems(evaluation)) * len(_languages(evaluation)) * evaluation.samples


def _check_problems(run_dir: Path, evaluation: Evaluation) -> None:
    """The store has every promotion problem, and no run in the chain trained on any of them."""
    from atoll.euler import Store, StoreError
    from atoll.pi_train.training import trained_on

    problems = _problems(evaluation)
    try:
        store = Store(Path(evaluation.store))
        for number in problems:
            why = store.missing(number)
            if why is not None:
                raise PromoteError(f"--problems: {why} ({store.root})")
    except StoreError as exc:
        raise PromoteError(str(exc)) from None
    chain = trained_on.chain_problems(run_dir, store)
    if chain.unrecorded:
        raise PromoteError(
            f"cannot show the promotion problems disjoint from what {run_dir} trained on: "
            f"{chain.unrecorded[0]}"
        )
    overlap: dict[str, list[int]] = {}
    for number in problems:
        for where in chain.trained.get(number, [])[:1]:
            overlap.setdefault(where, []).append(number)
    if overlap:
        named = "; ".join(f"{reserved.numbers_text(ns)} by {w}" for w, ns in overlap.items())
        raise PromoteError(
            f"--problems {evaluation.problems} includes problems trained on ({named}): promotion "
            f"problems must be ones no run in the chain trained on (the default, "
            f"{reserved.PROMOTION_RANGE}, is reserved for promotion)"
        )


def _transfer_tasks() -> int:
    """The frozen transfer suite's task count: one task per shell family (tested there)."""
    from atoll.pi_train.shell.families import SUITE_POINTS

    return len(SUITE_POINTS)


def _check_attainable(rule: Rule, rule_file: Path, problems: int) -> None:
    """Refuse a section whose alpha no outcome could meet (every rollout would be for nothing)."""
    for section, threshold, units, unit in (
        ("euler", rule.euler, problems, "problem(s)"),
        ("transfer", rule.transfer, _transfer_tasks(), "transfer task(s)"),
    ):
        least = min(1.0, rule.checkpoints * paired_test.smallest_p(units))
        if threshold.alpha < least:
            raise PromoteError(
                f"{rule_file}: {section}.alpha {threshold.alpha} can never hold: over {units} "
                f"{unit} the paired test's smallest p-value is "
                f"{paired_test.smallest_p(units):.4g}, {least:.4g} after Holm over "
                f"{rule.checkpoints} checkpoint(s); raise alpha, evaluate more problems or "
                "allow fewer checkpoints"
            )


def _languages(evaluation: Evaluation) -> tuple[str, ...]:
    """--languages as atoll-euler reads them: known names only (the image is checked later)."""
    from atoll.euler import LanguageError, parse_languages

    try:
        return parse_languages(evaluation.languages)
    except LanguageError as exc:
        raise PromoteError(f"--languages: {exc}") from None


@dataclass(frozen=True)
class Plan:
    run_dir: Path
    directory: Path
    manifest: dict[str, Any]
    rule: Rule
    base_model: str
    renderer: str


def plan(request: Request) -> Plan:
    """Check every input and fix the rule: the promotion's manifest, before any rollout."""
    rule = promotion_rule.load(request.rule_file)
    base_model, renderer = _model(request)
    _check_checkpoint(request.run_dir, request.checkpoint, "--checkpoint")
    if request.baseline_checkpoint is not None:
        _check_checkpoint(request.run_dir, request.baseline_checkpoint, "--baseline-checkpoint")
    evaluation = request.evaluation
    _expected_euler_rows(evaluation)
    _check_attainable(rule, request.rule_file, len(_problems(evaluation)))
    _check_problems(request.run_dir, evaluation)
    identity = {
        "checkpoint": request.checkpoint,
        "baseline": request.baseline_checkpoint,
        "base_model": base_model,
        "renderer": renderer,
        "rule_sha256": rule.sha256(),
        "evaluation": {
            **asdict(evaluation),
            "store_digest": _store_digest(evaluation.store),
            "system_prompt_sha256": _system_prompt_sha256(evaluation.system_prompt),
        },
    }
    directory = (
        request.run_dir / "promotions" / hashlib.sha256(canonical_json(identity)).hexdigest()[:12]
    )
    try:
        promotion_family.check(request.run_dir, rule, directory)
    except promotion_family.FamilyError as exc:
        raise PromoteError(str(exc)) from None
    manifest = {
        "kind": "atoll-pi-train-promotion",
        "identity": identity,
        "rule": rule.to_json(),
        "rule_sha256": rule.sha256(),
        "rule_file": str(request.rule_file),
        "rule_file_sha256": hashlib.sha256(request.rule_file.read_bytes()).hexdigest(),
        "rule_fixed_at": _now(),
    }
    return Plan(request.run_dir, directory, manifest, rule, base_model, renderer)


def fix_rule(made: Plan) -> Plan:
    """Write the manifest (the rule, its hash, this comparison's number) unless a run of this
    identity did already; the run's rule is fixed with the first promotion of the run.

    Called under the promotion's writer lock, before any server starts. A
    resumed promotion keeps the manifest, and the time, it was first fixed at.
    """
    path = made.directory / MANIFEST
    source = Path(str(made.manifest["rule_file"]))
    try:
        with promotion_family.run_lock(made.run_dir):
            comparison = promotion_family.fix(made.run_dir, made.rule, source, made.directory)
            if path.is_file():
                kept = json.loads(path.read_text("utf-8"))
                if kept.get("rule_sha256") != made.rule.sha256():
                    raise PromoteError(
                        f"{path} fixed another rule; this promotion cannot change it"
                    )
                return Plan(
                    made.run_dir, made.directory, kept, made.rule, made.base_model, made.renderer
                )
            manifest = {**made.manifest, "comparison": comparison}
            atomic_write_json(path, manifest, make_parents=True)
    except promotion_family.FamilyError as exc:
        raise PromoteError(str(exc)) from None
    return Plan(made.run_dir, made.directory, manifest, made.rule, made.base_model, made.renderer)
