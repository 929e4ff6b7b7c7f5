"""What the `atoll emit frontiersmith` commands do, behind their Typer signatures.

`prepare` turns flags into a ready run or one error line (`Problem`), in an
order that pays nothing and writes nothing until every check has passed;
`execute` runs the pipeline under a rich display, journals each seed, and
writes the collection report whatever way the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from atoll.core.ledger import Ledger, LedgerError, format_usd, usd_to_micro
from atoll.core.llm import EndpointError, PaidChat, chat_body, check_endpoint, read_api_key
from atoll.frontiersmith import prompts
from atoll.frontiersmith.config import (
    DEFAULT_BASE_URL,
    ConfigError,
    RunConfig,
    code_hash,
    fingerprint,
    listed_prices,
)
from atoll.frontiersmith.display import Display
from atoll.frontiersmith.outcome import Outcome
from atoll.frontiersmith.protocol import schema
from atoll.frontiersmith.runs import RunDir, RunError, create_run, existing_runs, open_run
from atoll.frontiersmith.seeds import Seed, SeedError, load_seeds

EXIT_OK = 0
EXIT_BUDGET = 1
EXIT_USAGE = 2
EXIT_UNCERTAIN = 3
EXIT_PROVIDER = 4
EXIT_INTERRUPTED = 130

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
    "rollout_tasks": "--rollout-tasks",
    "max_completion_tokens": "--max-completion-tokens",
    "base_image": "--base-image",
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
    rollout_tasks: int | None = None
    max_completion_tokens: int | None = None
    base_image: str | None = None
    out: Path | None = None
    resume: str | None = None
    raise_budget: bool = False


@dataclass
class Prepared:
    config: RunConfig
    seeds: list[Seed]
    run: RunDir
    ledger: Ledger
    api_key: str
    lock: Any
    notes: list[str]


def _console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _error(console: Console, message: str) -> None:
    console.print(f"[bold red]error:[/bold red] {message}", markup=True)


def run_command(flags: Flags) -> int:
    console = _console()
    try:
        prepared = prepare(flags)
    except (Problem, ConfigError, SeedError, EndpointError, RunError, LedgerError) as exc:
        _error(console, str(exc))
        return EXIT_USAGE
    try:
        for note in prepared.notes:
            console.print(note)
        return asyncio.run(execute(prepared, console))
    finally:
        prepared.ledger.close()
        prepared.lock.release()


# --- preparing ----------------------------------------------------------------------------


def prepare(flags: Flags) -> Prepared:
    """A run ready to go, or Problem: every check before anything is paid or written."""
    from atoll.frontiersmith.trials import EnvironmentChoiceError, resolve_environment

    if flags.out is None:
        raise Problem("--out DIR is required (the tasks, the report and the run's state go there)")
    notes: list[str] = []
    stored_run: RunDir | None = None
    if flags.resume:
        stored_run = open_run(flags.resume, flags.out)
        config = _resumed_config(flags, stored_run)
    else:
        config = _new_config(flags, notes)
    config.validate()
    seeds = load_seeds(config.seeds)
    try:
        environment = resolve_environment(config.environment)
    except EnvironmentChoiceError as exc:
        raise Problem(str(exc)) from None
    if not flags.resume and not config.base_image:
        config = replace(config, base_image=choose_base_image(environment.name))
    api_key = read_api_key(config.api_key_env)
    asyncio.run(check_endpoint(config.endpoint(), api_key))
    _check_sandbox()
    digest = fingerprint(config, seeds, code_hash())
    reservation = first_reservation(config, seeds)
    if stored_run is not None:
        return _open_resumed(flags, stored_run, config, seeds, digest, reservation, api_key, notes)
    if config.budget_micro < reservation:
        raise Problem(
            f"--budget {format_usd(config.budget_micro)} is below one request's worst-case "
            f"reservation ({format_usd(reservation)}); raise --budget"
        )
    if existing_runs(flags.out):
        run_id = existing_runs(flags.out)[0]
        raise Problem(
            f"{flags.out} already holds run {run_id}; resume it with --resume {run_id}, "
            "or choose another --out"
        )
    run = create_run(flags.out, config, digest, code_hash())
    lock = run.lock()
    ledger = Ledger.create(run.ledger_path, config.budget_micro)
    notes.append(f"run {run.run_id}: {len(seeds)} seeds, budget {format_usd(config.budget_micro)}")
    return Prepared(config, seeds, run, ledger, api_key, lock, notes)


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
        "rollout_tasks",
        "max_completion_tokens",
        "base_image",
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
            "the installed code changed"
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


def ledger_line(ledger: Ledger) -> str:
    from atoll.frontiersmith.report import ledger_line as line

    return line(ledger)


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


def choose_base_image(environment: str) -> str:
    """The bundle module's default image, or the offline one where only that is available."""
    from atoll.frontiersmith.bundle import DEFAULT_BASE_IMAGE, OFFLINE_BASE_IMAGE

    if environment != "docker":
        return DEFAULT_BASE_IMAGE
    try:
        import docker
        from docker.errors import DockerException, ImageNotFound

        client = docker.from_env(timeout=5)
        try:
            try:
                client.images.get(DEFAULT_BASE_IMAGE)
                return DEFAULT_BASE_IMAGE
            except ImageNotFound:
                client.images.get(OFFLINE_BASE_IMAGE)
                return OFFLINE_BASE_IMAGE
        finally:
            client.close()
    except (DockerException, OSError, ImportError):
        return DEFAULT_BASE_IMAGE


def _check_sandbox() -> None:
    from atoll.frontiersmith.taskcode import CheckInfrastructureError, SandboxedChecks

    try:
        SandboxedChecks().check_backend()
    except CheckInfrastructureError as exc:
        raise Problem(f"construction checks need the bubblewrap sandbox: {exc}") from None


# --- running ------------------------------------------------------------------------------


async def execute(prepared: Prepared, console: Console) -> int:
    from atoll.frontiersmith.candidate import Context
    from atoll.frontiersmith.pipeline import RunState, StopReason, run_seeds
    from atoll.frontiersmith.report import build_summary, write_report
    from atoll.frontiersmith.taskcode import SandboxedChecks
    from atoll.frontiersmith.trials import HarborTrials, resolve_environment

    config, run, ledger = prepared.config, prepared.run, prepared.ledger
    environment = resolve_environment(config.environment)
    if environment.name == "atoll-local":
        # Trial roots of this run live in its own directory: `cleanup` removes exactly those.
        local_roots = run.work_dir / "local-roots"
        local_roots.mkdir(parents=True, exist_ok=True)
        os.environ["ATOLL_LOCAL_ROOT"] = str(local_roots)
    journal = run.outcomes()
    state = RunState(target=config.target)
    chat = PaidChat(
        config.endpoint(),
        config.prices(),
        ledger,
        api_key=prepared.api_key,
        stop_requested=lambda: state.stop is not None,
    )
    display = Display(console, config.target, run.run_id)
    ctx = Context(
        config=config,
        run=run,
        chat=chat,
        trials=HarborTrials(environment, ledger, slots=max(2, os.cpu_count() or 2)),
        checks=SandboxedChecks(),
        base_image=config.base_image,
        progress=display.stage,
        rollouts_left=[max(0, config.rollout_tasks - _rollouts_done(journal))],
    )

    def on_outcome(outcome: Outcome) -> None:
        data = outcome.to_json()
        run.write_outcome(outcome.seed_id, data)
        journal[outcome.seed_id] = data
        run.log_event(
            {"event": "seed", **{k: data[k] for k in ("seed_id", "status", "reason", "stage")}}
        )
        display.finished(outcome)

    run.log_event({"event": "start", "pending": len(prepared.seeds) - len(journal)})
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    interrupts = [0]

    def interrupt() -> None:
        interrupts[0] += 1
        state.request_stop(StopReason.INTERRUPTED, "interrupted by a signal")
        display.note("stopping: waiting for requests in flight to settle (again to abort them)")
        if interrupts[0] > 1:
            for task in asyncio.all_tasks(loop):
                if task is not asyncio.current_task(loop):
                    task.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, interrupt)
    try:
        with display.live(journal):
            await run_seeds(prepared.seeds, ctx, state, journal, on_outcome)
    finally:
        await chat.aclose()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signum)
        stop = state.stop or StopReason.INTERRUPTED
        summary = build_summary(
            run_id=run.run_id,
            stored=run.stored(),
            outcomes=journal,
            seed_ids=[s.id for s in prepared.seeds],
            ledger=ledger,
            stop=str(stop),
            stop_detail=state.stop_detail,
            wall_seconds=time.monotonic() - started,
        )
        write_report(run.out, summary)
        run.log_event({"event": "stop", "reason": str(stop)})
    print_summary(console, summary, run)
    return _exit_code(console, stop, state.stop_detail, run)


def _rollouts_done(journal: dict[str, dict[str, Any]]) -> int:
    return sum(1 for o in journal.values() if o.get("rollout"))


def _exit_code(console: Console, stop: str, detail: str, run: RunDir) -> int:
    from atoll.frontiersmith.pipeline import StopReason

    if stop == StopReason.BUDGET:
        _error(
            console,
            f"{detail}; the run stopped cleanly (resume with --resume {run.run_id} "
            "--raise-budget --budget USD)",
        )
        return EXIT_BUDGET
    if stop == StopReason.UNCERTAIN:
        _error(
            console, f"{detail}; run `atoll emit frontiersmith reconcile {run.run_id}`, then resume"
        )
        return EXIT_UNCERTAIN
    if stop == StopReason.PROVIDER:
        _error(console, f"{detail}; fix the key, the model or --base-url, then resume")
        return EXIT_PROVIDER
    if stop == StopReason.INTERRUPTED:
        _error(console, f"interrupted; resume with --resume {run.run_id}")
        return EXIT_INTERRUPTED
    return EXIT_OK


def print_summary(console: Console, summary: dict[str, Any], run: RunDir) -> None:
    t = summary["totals"]
    table = Table(title=f"FrontierSmith run {run.run_id}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("accepted", f"{t['accepted']} / target {summary['config'].get('target')}")
    table.add_row("candidates tried", str(t["candidates"]))
    table.add_row("yield", f"{t['yield']:.1%}")
    for reason, count in summary["rejections"].items():
        table.add_row(f"rejected: {reason}", str(count))
    for reason, count in summary["errors"].items():
        table.add_row(f"error: {reason}", str(count))
    table.add_row("token cost", f"${t['token_cost_usd']:.6f} of ${t['budget_usd']:.2f}")
    if t["token_cost_per_accepted_usd"] is not None:
        table.add_row("token cost per task", f"${t['token_cost_per_accepted_usd']:.6f}")
    table.add_row("worker time", f"{t['worker_seconds']:.1f} s")
    table.add_row("stopped", summary["stop"]["reason"])
    console.print(table)
    console.print(f"report: {run.out / 'report.md'}  tasks: {run.tasks_dir}")


# --- reconcile and cleanup ----------------------------------------------------------------


@contextlib.contextmanager
def _owned_run(
    console: Console, run_id: str, out: Path | None
) -> Iterator[tuple[RunDir, Ledger] | None]:
    """The run and its ledger, held against any other process; None (and an error line) if not."""
    try:
        run = open_run(run_id, out)
        lock = run.lock()
    except RunError as exc:
        _error(console, str(exc))
        yield None
        return
    try:
        with Ledger.open(run.ledger_path) as ledger:
            yield run, ledger
    finally:
        lock.release()


def reconcile_command(
    run_id: str, out: Path | None, requests: list[int], cost: str | None, note: str, list_only: bool
) -> int:
    console = _console()
    with _owned_run(console, run_id, out) as owned:
        if owned is None:
            return EXIT_USAGE
        run, ledger = owned
        uncertain = ledger.recover()
        table = Table(title=f"uncertain requests of run {run_id}")
        for column in ("receipt", "stage:seed", "reserved", "error"):
            table.add_column(column)
        for r in uncertain:
            table.add_row(str(r.id), r.label, format_usd(r.reserved_micro), (r.error or "")[:80])
        console.print(table)
        if list_only or not uncertain:
            console.print("nothing to reconcile" if not uncertain else "")
            return EXIT_OK
        ids = {r.id for r in uncertain}
        unknown = sorted(set(requests) - ids)
        if unknown:
            _error(console, f"receipt(s) {unknown} are not uncertain in run {run_id}")
            return EXIT_USAGE
        chosen = [r for r in uncertain if not requests or r.id in requests]
        cost_micro = None
        if cost is not None:
            if len(chosen) != 1:
                _error(console, "--cost settles one request: name it with --request ID")
                return EXIT_USAGE
            try:
                cost_micro = usd_to_micro(cost)
            except LedgerError as exc:
                _error(console, str(exc))
                return EXIT_USAGE
        for r in chosen:
            settled = ledger.reconcile(r.id, cost_micro, note)
            console.print(
                f"receipt {settled.id} ({settled.label}) settled at "
                f"{format_usd(settled.cost_micro or 0)}"
            )
        run.log_event({"event": "reconcile", "receipts": [r.id for r in chosen]})
        console.print(f"{ledger_line(ledger)}; resume with --resume {run_id}")
        return EXIT_OK


def cleanup_command(run_id: str, out: Path | None, remove_work: bool) -> int:
    import shutil

    console = _console()
    with _owned_run(console, run_id, out) as owned:
        if owned is None:
            return EXIT_USAGE
        run, ledger = owned
        left = ledger.work(states=("running",))
        removed = 0
        for work in left:
            project = str(work.detail.get("compose_project", ""))
            if work.environment == "docker" and project:
                removed += _remove_compose_project(project)
            ledger.end_work(work.id, "cleaned", {"cleaned_at": time.time()})
        roots = run.work_dir / "local-roots"
        if roots.is_dir():
            shutil.rmtree(roots, ignore_errors=True)
        if remove_work and run.work_dir.is_dir():
            shutil.rmtree(run.work_dir, ignore_errors=True)
        console.print(
            f"closed {len(left)} open worker receipt(s); removed {removed} container(s)"
            + ("; removed the working files" if remove_work else "")
        )
        return EXIT_OK


def _remove_compose_project(project: str) -> int:
    """Remove the containers of one Compose project (a trial of this run, by its receipt)."""
    import re

    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        return 0
    name = re.sub(r"[^a-z0-9_-]", "-", project.lower())
    try:
        client = docker.from_env(timeout=30)
    except DockerException:
        return 0
    removed = 0
    try:
        for container in client.containers.list(
            all=True, filters={"label": f"com.docker.compose.project={name}"}
        ):
            with contextlib.suppress(DockerException):
                container.remove(force=True)
                removed += 1
        for network in client.networks.list(
            filters={"label": f"com.docker.compose.project={name}"}
        ):
            with contextlib.suppress(DockerException):
                network.remove()
    finally:
        client.close()
    return removed
