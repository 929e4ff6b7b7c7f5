"""From flags to a run ready to go, or one error line: every check before anything is paid.

The order matters: flags, prices, the seed set, the environment, the key,
the endpoint, the sandbox, the budget against one request's worst-case
reservation, and on `--resume` the run's fingerprint, its ledger limit and
its uncertain requests; only then is anything written (the run directory,
the ledger).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from atoll.core.ledger import Ledger, LedgerError, format_usd, usd_to_micro
from atoll.core.llm import chat_body, check_endpoint, read_api_key
from atoll.frontiersmith import prompts
from atoll.frontiersmith.bundle.spec import DEFAULT_BASE_IMAGE
from atoll.frontiersmith.config import (
    DEFAULT_BASE_URL,
    RunConfig,
    code_hash,
    code_identity,
    fingerprint,
    listed_prices,
)
from atoll.frontiersmith.protocol import schema
from atoll.frontiersmith.report import ledger_line
from atoll.frontiersmith.rollout import RolloutAgent, RolloutAgentError, resolve_rollout_agent
from atoll.frontiersmith.runs import RunDir, create_run, existing_runs, open_run
from atoll.frontiersmith.search import (
    DEFAULT_GROUPS,
    DEFAULT_ROLLOUTS,
    SearchSettings,
    SearchSetupError,
    check_ready,
)
from atoll.frontiersmith.seeds import Seed, load_seeds, parse_seeds

# Flags whose value is part of the run's identity: on --resume they must match.
IDENTITY_FLAGS = {
    "seeds": "--seeds",
    "target": "--target",
    "model": "--model",
    "base_url": "--base-url",
    "price_in": "--price-in",
    "price_out": "--price-out",
    "environment": "--environment",
    "max_candidates": "--max-candidates",
    "solutions": "--solutions",
    "max_repairs": "--max-repairs",
    "min_divergence": "--min-divergence",
    "min_score_spread": "--min-score-spread",
    "min_execution_diversity": "--min-execution-diversity",
    "rollout_tasks": "--rollout-tasks",
    "rollout_agent": "--rollout-agent",
    "rollout_timeout": "--rollout-timeout",
    "max_completion_tokens": "--max-completion-tokens",
    "base_image": "--base-image",
    "language": "--language",
    "rounds": "--rounds",
    "population": "--population",
}


class Problem(Exception):
    """Bad input: one line for the user, nothing paid, nothing written."""


@dataclass(frozen=True)
class Flags:
    seeds: str | None = None
    target: int | None = None
    budget: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    price_in: str | None = None
    price_out: str | None = None
    workers: int | None = None
    environment: str | None = None
    max_candidates: int | None = None
    solutions: int | None = None
    max_repairs: int | None = None
    min_divergence: float | None = None
    min_score_spread: float | None = None
    min_execution_diversity: float | None = None
    rollout_tasks: int | None = None
    rollout_agent: str | None = None
    rollout_timeout: float | None = None
    max_completion_tokens: int | None = None
    base_image: str | None = None
    worker_price: str | None = None
    language: str | None = None
    rounds: int | None = None
    population: int | None = None
    out: Path | None = None
    resume: str | None = None
    raise_budget: bool = False
    # After export (not part of the run's identity: a resume may add, raise or drop it).
    search_steps: int | None = None
    search_groups: int | None = None
    search_rollouts: int | None = None


@dataclass
class Prepared:
    config: RunConfig
    seeds: list[Seed]
    run: RunDir
    ledger: Ledger
    api_key: str
    lock: Any
    notes: list[str]
    search: SearchSettings | None = None


def prepare(flags: Flags) -> Prepared:
    """A run ready to go, or Problem: every check before anything is paid or written."""
    from atoll.frontiersmith.trials import EnvironmentChoiceError, resolve_environment

    if flags.out is None and not flags.resume:
        raise Problem("--out DIR is required (the tasks, the report and the run's state go there)")
    search = _search_settings(flags)
    notes: list[str] = []
    stored_run: RunDir | None = None
    if flags.resume:
        # Without --out, the run is found through the run index, as `reconcile` finds it.
        stored_run = open_run(flags.resume, flags.out)
        config = _resumed_config(flags, stored_run)
    else:
        config = _new_config(flags, notes)
    config.validate()
    seeds = _stored_seeds(stored_run) if stored_run is not None else load_seeds(config.seeds)
    if not flags.resume and not config.base_image:
        config = replace(config, base_image=DEFAULT_BASE_IMAGE)
    if not flags.resume and flags.environment is None:
        name, why = choose_trial_environment(config.base_image, config.language)
        config = replace(config, environment=name, environment_choice=why)
        notes.append(f"trials run on {name} ({why}); pass --environment to choose")
    try:
        resolve_environment(config.environment)
    except EnvironmentChoiceError as exc:
        raise Problem(str(exc)) from None
    if config.language == "cpp" and config.environment == "atoll-local":
        import shutil

        if shutil.which("g++") is None:
            raise Problem(
                "--language cpp on atoll-local compiles the programs with this machine's g++, "
                "which is not installed (apt-get install g++)"
            )
    if config.rollout_tasks:
        try:
            rollout_agent(config)
        except RolloutAgentError as exc:
            raise Problem(str(exc)) from None
    api_key = read_api_key(config.api_key_env)
    asyncio.run(check_endpoint(config.endpoint(), api_key))
    _check_sandbox()
    digest = fingerprint(config, seeds, code_hash())
    reservation = first_reservation(config, seeds)
    if stored_run is not None:
        from atoll.frontiersmith.rounds import Rounds

        Rounds(stored_run, config).records()  # a damaged round record: one line, before any pay
        prepared = _open_resumed(
            flags, stored_run, config, seeds, digest, reservation, api_key, notes
        )
        prepared.search = search
        return prepared
    if config.budget_micro < reservation:
        raise Problem(
            f"--budget {format_usd(config.budget_micro)} is below one request's worst-case "
            f"reservation ({format_usd(reservation)}); raise --budget"
        )
    assert flags.out is not None
    if existing_runs(flags.out):
        run_id = existing_runs(flags.out)[0]
        raise Problem(
            f"{flags.out} already holds run {run_id}; resume it with --resume {run_id}, "
            "or choose another --out"
        )
    run = create_run(
        flags.out,
        config,
        digest,
        code_hash(),
        code=code_identity(),
        seeds=[s.to_json() for s in seeds],
    )
    lock = run.lock()
    ledger = Ledger.create(run.ledger_path, config.budget_micro)
    notes.append(f"run {run.run_id}: {len(seeds)} seeds, budget {format_usd(config.budget_micro)}")
    return Prepared(config, seeds, run, ledger, api_key, lock, notes, search)


def _search_settings(flags: Flags) -> SearchSettings | None:
    """`--search-steps` and its companions, checked (Guidance-TTT installed, a Reef named)."""
    if flags.search_steps is None:
        if flags.search_groups is not None or flags.search_rollouts is not None:
            raise Problem("--search-groups and --search-rollouts need --search-steps N")
        return None
    settings = SearchSettings(
        flags.search_steps,
        flags.search_groups or DEFAULT_GROUPS,
        flags.search_rollouts or DEFAULT_ROLLOUTS,
    )
    try:
        check_ready(settings)
    except SearchSetupError as exc:
        raise Problem(str(exc)) from None
    return settings


def _stored_seeds(run: RunDir) -> list[Seed]:
    """A resume's seeds: the text the run stored when it started, not the file it named.

    The seed file may have moved or changed since; the run directory holds
    the campaign's own copy (`seeds.jsonl`). A run from before seeds were
    stored reads the file it named, and the fingerprint still refuses a
    changed one.
    """
    if run.seeds_path.is_file():
        return parse_seeds(
            run.seeds_path.read_text(encoding="utf-8"), f"the seeds stored in run {run.run_id}"
        )
    return load_seeds(run.stored_config().seeds)


def _new_config(flags: Flags, notes: list[str]) -> RunConfig:
    missing = [
        flag
        for flag, value in (
            ("--seeds", flags.seeds),
            ("--target", flags.target),
            ("--budget", flags.budget),
            ("--model", flags.model),
        )
        if value is None
    ]
    if missing:
        raise Problem(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required")
    if flags.population is not None and flags.population < 1:
        raise Problem("--population must be at least 1 (leave it out to keep every task)")
    try:
        budget_micro = usd_to_micro(flags.budget or "")
    except LedgerError:
        raise Problem(f"--budget {flags.budget!r} is not an amount of dollars") from None
    price_in, price_out = _prices(flags, notes)
    seeds = flags.seeds or ""
    if Path(seeds).is_file():
        seeds = str(Path(seeds).resolve())
    values: dict[str, Any] = {
        "seeds": seeds,
        "target": flags.target,
        "budget_micro": budget_micro,
        "model": flags.model,
        "base_url": (flags.base_url or DEFAULT_BASE_URL).rstrip("/"),
        "price_in": price_in,
        "price_out": price_out,
    }
    for name in (
        "api_key_env",
        "workers",
        "environment",
        "max_candidates",
        "solutions",
        "max_repairs",
        "min_divergence",
        "min_score_spread",
        "min_execution_diversity",
        "rollout_tasks",
        "rollout_agent",
        "rollout_timeout",
        "max_completion_tokens",
        "base_image",
        "worker_price",
        "language",
        "rounds",
        "population",
    ):
        value = getattr(flags, name)
        if value is not None:
            values[name] = value
    return RunConfig(**values)


def _prices(flags: Flags, notes: list[str]) -> tuple[str, str]:
    if (flags.price_in is None) != (flags.price_out is None):
        raise Problem("--price-in and --price-out go together: give both or neither")
    if flags.price_in is not None and flags.price_out is not None:
        for flag, value in (("--price-in", flags.price_in), ("--price-out", flags.price_out)):
            try:
                number = Decimal(value)
            except ArithmeticError:
                number = Decimal(-1)
            if not number.is_finite() or number < 0:
                raise Problem(f"{flag} {value!r} is not a price in USD per million tokens")
        return flags.price_in, flags.price_out
    listed = listed_prices(flags.model or "")
    if listed is None:
        raise Problem(
            f"no price is known for model {flags.model!r}: pass --price-in and --price-out "
            "(USD per million tokens)"
        )
    notes.append(
        f"prices for {flags.model} from litellm's bundled table: ${listed[0]} in, ${listed[1]} out "
        "per million tokens (pass --price-in/--price-out to set your provider's)"
    )
    return str(listed[0]), str(listed[1])


def _resumed_config(flags: Flags, run: RunDir) -> RunConfig:
    stored = run.stored_config()
    changed = []
    for name, flag in IDENTITY_FLAGS.items():
        given = getattr(flags, name)
        if given is None:
            continue
        if name == "seeds" and Path(given).is_file():
            given = str(Path(given).resolve())
        if name == "base_url":
            given = given.rstrip("/")
        if str(given) != str(getattr(stored, name)):
            changed.append(f"{flag} {given} (the run has {getattr(stored, name)})")
    if changed:
        raise Problem(
            f"--resume {run.run_id}: the run's fingerprint differs: " + "; ".join(changed)
        )
    updates: dict[str, Any] = {}
    if flags.workers is not None:
        updates["workers"] = flags.workers
    if flags.api_key_env is not None:
        updates["api_key_env"] = flags.api_key_env
    if flags.worker_price is not None:
        updates["worker_price"] = flags.worker_price
    if flags.budget is not None:
        try:
            updates["budget_micro"] = usd_to_micro(flags.budget)
        except LedgerError:
            raise Problem(f"--budget {flags.budget!r} is not an amount of dollars") from None
    return replace(stored, **updates)


def _open_resumed(
    flags: Flags,
    run: RunDir,
    config: RunConfig,
    seeds: list[Seed],
    digest: str,
    reservation: int,
    api_key: str,
    notes: list[str],
) -> Prepared:
    stored = run.stored()
    if stored.get("fingerprint") != digest:
        what = (
            _code_change(stored.get("code") or {})
            if stored.get("code_hash") != code_hash()
            else "the seeds or settings changed"
        )
        raise Problem(
            f"--resume {run.run_id}: the run's fingerprint differs ({what} since it started); "
            "start a new run with another --out"
        )
    lock = run.lock()
    try:
        ledger = Ledger.open(run.ledger_path)
        try:
            if config.budget_micro != ledger.limit_micro:
                if not flags.raise_budget:
                    raise Problem(
                        f"the run's budget is {format_usd(ledger.limit_micro)}; a resume keeps it "
                        f"(pass --raise-budget with --budget to change it to "
                        f"{format_usd(config.budget_micro)})"
                    )
                try:
                    ledger.raise_limit(config.budget_micro, "--raise-budget on resume")
                except LedgerError as exc:
                    raise Problem(str(exc)) from None
                notes.append(f"budget raised to {format_usd(config.budget_micro)}")
            uncertain = ledger.recover()
            if uncertain:
                ids = ", ".join(str(r.id) for r in uncertain)
                raise Problem(
                    f"run {run.run_id} has {len(uncertain)} uncertain request(s) ({ids}): they may "
                    f"have been charged; settle them with `atoll emit frontiersmith reconcile "
                    f"{run.run_id}` before resuming"
                )
            available = ledger.totals().available_micro
            if available < reservation:
                raise Problem(
                    f"the run has {format_usd(available)} left, below one request's worst-case "
                    f"reservation ({format_usd(reservation)}); pass --raise-budget with a larger --budget"
                )
        except BaseException:
            ledger.close()
            raise
    except BaseException:
        lock.release()
        raise
    notes.append(f"resuming run {run.run_id}: {ledger_line(ledger)}")
    return Prepared(config, seeds, run, ledger, api_key, lock, notes)


def _code_change(stored: dict[str, Any]) -> str:
    """Which part of the installed code differs from the run's (its record may predate it)."""
    now = code_identity()
    changed = [
        name
        for name in sorted(set(now["packages"]) | set(stored.get("packages", {})))
        if now["packages"].get(name) != stored.get("packages", {}).get(name)
    ]
    changed += [
        f"{k} {stored.get(k)} -> {now[k]}" for k in ("harbor", "python") if stored.get(k) != now[k]
    ]
    if not stored or not changed:
        return "the installed code changed"
    return "the installed code changed: " + ", ".join(changed)


def first_reservation(config: RunConfig, seeds: list[Seed]) -> int:
    """The worst-case reservation of the run's first request (a mutate of the first seed)."""
    from atoll.core.llm import worst_case_micro

    body = chat_body(
        config.endpoint(),
        prompts.mutate(seeds[0], "objective", [], 1),
        schema_name="mutate",
        schema=schema("mutate"),
    )
    return worst_case_micro(body, config.prices())


def rollout_agent(config: RunConfig) -> RolloutAgent:
    """The run's rollout agent with the run's model flags."""
    return resolve_rollout_agent(
        config.rollout_agent,
        model=config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        timeout_s=config.rollout_timeout,
    )


def choose_trial_environment(base_image: str, language: str = "python") -> tuple[str, str]:
    """Where the execution trials run by default: where `atoll run` would run the emitted task.

    The same choice, on a bundle-shaped probe (its Dockerfile's image, its
    no-network policy): `docker` when an engine answers and holds the image
    (and the egress sidecar that enforces the policy), else `atoll-local`,
    which runs the bundle's program with the host's python3.
    """
    import tempfile

    from atoll.core.run_defaults import choose_environment

    with tempfile.TemporaryDirectory(prefix="atoll-fs-env-") as tmp:
        probe = Path(tmp)
        (probe / "environment").mkdir()
        (probe / "environment" / "Dockerfile").write_text(f"FROM {base_image}\n")
        (probe / "task.toml").write_text('[environment]\nnetwork_mode = "no-network"\n')
        choice = choose_environment(probe)
    if choice.name == "atoll-local":
        runs = "g++ and python3 run" if language == "cpp" else "python3 runs"
        return choice.name, f"{choice.reason}; the host's {runs} the programs"
    return choice.name, f"{choice.reason}; trials build the bundle's own image"


def _check_sandbox() -> None:
    from atoll.frontiersmith.taskcode import CheckInfrastructureError, SandboxedChecks

    try:
        SandboxedChecks().check_backend()
    except CheckInfrastructureError as exc:
        raise Problem(f"construction checks need the bubblewrap sandbox: {exc}") from None
