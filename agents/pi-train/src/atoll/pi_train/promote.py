"""`atoll pi train promote`: a checkpoint is promoted only when real Pi, in Docker, says so.

For a training run's `tinker://` sampler checkpoint: the Euler problems must
be ones no run in the checkpoint's chain trained on (atoll.pi_train.trained_on;
by default 91-100, which no training command draws from); the rule file is
checked against the run's one rule (atoll.pi_train.promotion_family) and
fixed first (its hash in `promotions/<id>/manifest.json`, with this
promotion's comparison number, written before the first rollout); then the
baseline (the base model, or `--baseline-checkpoint`) and the candidate are
each served with `atoll tinker serve` and evaluated with real Pi by
atoll-euler: the frozen transfer suite (`atoll euler transfer run`) and the
Euler problems (`atoll euler eval`). The decision test takes the problem
(the transfer task) as its unit: an exact paired test over per-problem pass
fractions (atoll.pi_train.paired_test), Holm-adjusted over the comparisons
the run's rule allows; atoll-euler's Fisher tests on pooled attempts stay
on the record as descriptive figures. The checkpoint is promoted only if
every threshold of the rule holds. The decision and all its inputs are one
record, `promotion.json`, written atomically; a promoted checkpoint is also
named in the run's `promoted.json`. A rerun resumes (each evaluation resumes
by itself) and never re-decides a decided promotion.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_json, canonical_json
from atoll.pi_train import paired_test, promotion_family, promotion_rule, reserved, serve
from atoll.pi_train.paired_test import Counts
from atoll.pi_train.promotion_rule import Rule
from atoll.pi_train.run import RunInputError, api_key

MANIFEST = "manifest.json"
RECORD = "promotion.json"
PROMOTED = "promoted.json"
KEY_VARIABLE = "ATOLL_PROMOTE_KEY"  # the served endpoint's bearer token, in memory only
SIDES = ("baseline", "candidate")


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
    from atoll.pi_train import trained_on

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
    from atoll.pi_train.shell_families import SUITE_POINTS

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


def _atoll() -> list[str]:
    beside = Path(sys.executable).parent / "atoll"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("atoll")
    if found is None:
        raise PromoteError("the `atoll` command is not on PATH", code=1)
    return [found]


def _step(argv: list[str], log: Path, key: str) -> None:
    """One `atoll euler ...` command, its output in `log`; a failure is the promotion's error."""
    env = {**os.environ, KEY_VARIABLE: key}
    with log.open("ab") as sink:
        done = subprocess.Popen(
            [*_atoll(), *argv], env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink
        )
        try:
            done.wait()
        finally:
            if done.poll() is None:  # interrupted: let it stop its rollouts and containers
                done.terminate()
                try:
                    done.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    done.kill()
                    done.wait()
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-8:])
        raise PromoteError(
            f"`atoll {' '.join(argv[:3])}` failed (exit {done.returncode}); see {log}:\n{tail}",
            code=2 if done.returncode == 2 else 1,
        )


def _transfer_done(directory: Path) -> bool:
    try:
        return bool(json.loads((directory / MANIFEST).read_text())["status"] == "completed")
    except (OSError, ValueError, KeyError):
        return False


def _euler_rows(directory: Path) -> list[dict[str, Any]]:
    from atoll.euler import rows

    try:
        run_id = json.loads((directory / "eval.json").read_text("utf-8"))["run_id"]
    except (OSError, ValueError, KeyError):
        return []
    try:
        found = rows.read(directory / rows.ROWS_FILE)
    except rows.RowsError:
        return []
    return [
        r
        for r in rows.latest_per_attempt(found)
        if r.get("run_id") == run_id and r.get("status") == "scored"
    ]


def _evaluate_side(
    made: Plan, side: str, checkpoint: str | None, request: Request, say: Callable[[str], None]
) -> None:
    from atoll.pi_train.local_server import free_port

    evaluation, tinker_url = request.evaluation, request.tinker_url
    side_dir = made.directory / side
    transfer_dir, euler_dir = side_dir / "transfer", side_dir / "euler"
    transfer_left = not _transfer_done(transfer_dir)
    euler_left = len(_euler_rows(euler_dir)) < _expected_euler_rows(evaluation)
    if not (transfer_left or euler_left):
        say(f"{side}: evaluated already")
        return
    side_dir.mkdir(parents=True, exist_ok=True)
    spec = serve.ServeSpec(
        base_model=made.base_model,
        renderer=made.renderer,
        tinker_url=tinker_url,
        port=free_port(),
        model_path=checkpoint,
        max_tokens=evaluation.max_tokens,
        state_path=serving_state(made.run_dir, checkpoint, tinker_url),
    )
    key = secrets.token_hex(16)
    common = [
        "--base-url", spec.base_url, "--model", spec.name, "--api-key-env", KEY_VARIABLE,
        "--languages", evaluation.languages, "--max-turns", str(evaluation.max_turns),
        "--timeout", str(evaluation.timeout), "--workers", str(request.workers),
    ]  # fmt: skip
    if evaluation.system_prompt is not None:
        common += ["--system-prompt", evaluation.system_prompt]
    if checkpoint is not None:
        common += ["--model-revision", checkpoint]
    say(f"{side}: serving {checkpoint or made.base_model}")
    try:
        with serve.serving(spec, side_dir / "serve.log", say, caller_key=key):
            if transfer_left:
                # No --accept: atoll-euler's acceptance decides on pooled attempts; this
                # promotion's rule, fixed above before any rollout, decides per task.
                say(f"{side}: the frozen transfer evaluation")
                _step(
                    ["euler", "transfer", "run", "--out", str(transfer_dir), *common,
                     "--samples", str(evaluation.transfer_samples)],
                    side_dir / "transfer.log",
                    key,
                )  # fmt: skip
            if euler_left:
                say(f"{side}: the Euler evaluation")
                _step(
                    ["euler", "eval", "--store", evaluation.store, "--problems",
                     evaluation.problems, "--out", str(euler_dir), *common,
                     "--samples", str(evaluation.samples)],
                    side_dir / "euler.log",
                    key,
                )  # fmt: skip
    except serve.ServeError as exc:
        raise PromoteError(f"{side}: {exc}", code=1) from None


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
