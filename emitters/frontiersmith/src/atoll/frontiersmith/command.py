"""What `atoll emit frontiersmith` does once its flags are known: run, report, exit.

`preparation.prepare` turns flags into a ready run or one error line;
`execute` runs the pipeline under a rich display, journals each seed, and
writes the collection report whatever way the run ends.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from atoll.core.ledger import LedgerError, Receipt
from atoll.core.llm import EndpointError, PaidChat
from atoll.core.termination import loop_signal_handlers
from atoll.frontiersmith.config import ConfigError
from atoll.frontiersmith.display import Display
from atoll.frontiersmith.outcome import Outcome
from atoll.frontiersmith.preparation import Flags, Prepared, Problem, prepare
from atoll.frontiersmith.resend import is_rollout, stage_and_seed
from atoll.frontiersmith.runs import RunDir, RunError, resume_command
from atoll.frontiersmith.seeds import SeedError

if TYPE_CHECKING:  # imported only once a run starts, as `execute` does (trials sets up Harbor)
    from atoll.frontiersmith.candidate import Context
    from atoll.frontiersmith.trials import EnvironmentRef

EXIT_OK = 0
EXIT_BUDGET = 1
EXIT_USAGE = 2
EXIT_UNCERTAIN = 3
EXIT_PROVIDER = 4
EXIT_SEARCH = 5  # --search-steps: a task's search failed (its record in run.json says why)
EXIT_INTERRUPTED = 130
# How a run ends that `--search-steps` follows with its searches (not a stop that says "fix this").
FINISHED = frozenset({"complete", "target_reached"})

__all__ = ["EXIT_OK", "EXIT_USAGE", "Flags", "error_line", "make_console", "run_command"]


def make_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def error_line(console: Console, message: str) -> None:
    console.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True)


def run_command(flags: Flags) -> int:
    console = make_console()
    try:
        prepared = prepare(flags)
    except (Problem, ConfigError, SeedError, EndpointError, RunError, LedgerError) as exc:
        error_line(console, str(exc))
        return EXIT_USAGE
    try:
        for note in prepared.notes:
            console.print(escape(note))
        return asyncio.run(execute(prepared, console))
    finally:
        prepared.ledger.close()
        prepared.lock.release()


async def execute(prepared: Prepared, console: Console) -> int:
    from atoll.frontiersmith.campaign import run_rounds
    from atoll.frontiersmith.pipeline import Campaign, StopReason
    from atoll.frontiersmith.rounds import Rounds
    from atoll.frontiersmith.trials import resolve_environment

    config, run, ledger = prepared.config, prepared.run, prepared.ledger
    environment = resolve_environment(config.environment)
    if environment.name == "atoll-local":
        # Trial roots of this run live in its own directory: `cleanup` removes exactly those.
        local_roots = run.work_dir / "local-roots"
        local_roots.mkdir(parents=True, exist_ok=True)
        os.environ["ATOLL_LOCAL_ROOT"] = str(local_roots)
    journal = run.outcomes()
    campaign = Campaign(config.target)  # the round under way: what the chat and signals ask
    chat = PaidChat(
        config.endpoint(),
        config.prices(),
        ledger,
        api_key=prepared.api_key,
        stop_requested=lambda: campaign.state.stop is not None,
    )
    display = Display(console, config.target, run.run_id)
    ctx = _context(prepared, environment, chat, display, journal)

    def on_outcome(outcome: Outcome) -> None:
        data = outcome.to_json()
        run.write_outcome(outcome.seed_id, data)
        journal[outcome.seed_id] = data
        run.log_event(
            {"event": "seed", **{k: data[k] for k in ("seed_id", "status", "reason", "stage")}}
        )
        display.finished(outcome)

    known = Rounds(run, config).seed_ids(prepared.seeds)  # every round's seeds known so far
    run.log_event({"event": "start", "pending": sum(1 for s in known if s not in journal)})
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    interrupts = [0]
    searches: dict[str, Any] | None = None

    def interrupt() -> None:
        interrupts[0] += 1
        campaign.request_stop(StopReason.INTERRUPTED, "interrupted by a signal")
        display.note("stopping: waiting for requests in flight to settle (again to abort them)")
        if interrupts[0] > 1:
            for task in asyncio.all_tasks(loop):
                if task is not asyncio.current_task(loop):
                    task.cancel()

    try:
        with loop_signal_handlers(loop, interrupt, (signal.SIGINT, signal.SIGTERM)):
            try:
                try:
                    await run_rounds(prepared.seeds, ctx, campaign, journal, on_outcome, display)
                except RunError as exc:  # a round could not close: its record says nothing yet
                    campaign.state.stop = StopReason.STATE_ERROR
                    campaign.state.stop_detail = str(exc)
                state = campaign.state
                if prepared.search is not None and state.stop in FINISHED:
                    searches = await _search(
                        prepared, journal, console, stopped=lambda: interrupts[0] > 0
                    )
                    if interrupts[0]:  # the searches were cut short: say so, exit 130
                        state.stop = StopReason.INTERRUPTED
                        state.stop_detail = "interrupted during the searches"
                elif prepared.search is not None:
                    console.print(f"search: skipped (the run stopped: {state.stop})")
            finally:
                await chat.aclose()
    finally:
        stop = campaign.state.stop or StopReason.INTERRUPTED
        detail = campaign.state.stop_detail
        summary = _report(prepared, journal, str(stop), detail, started, searches)
    print_summary(console, summary, run)
    code = _exit_code(console, stop, detail, run, ledger.uncertain())
    return code if code != EXIT_OK else _search_exit_code(console, searches, run)


def _context(
    prepared: Prepared,
    environment: EnvironmentRef,
    chat: PaidChat,
    display: Display,
    journal: dict[str, dict[str, Any]],
) -> Context:
    """What every candidate shares: the run, the paid chat, the trials, the rollouts left."""
    from atoll.frontiersmith.candidate import Context
    from atoll.frontiersmith.taskcode import SandboxedChecks
    from atoll.frontiersmith.trials import HarborTrials, environment_choice

    config, run = prepared.config, prepared.run
    return Context(
        config=config,
        run=run,
        chat=chat,
        trials=HarborTrials(
            environment,
            prepared.ledger,
            slots=max(2, os.cpu_count() or 2),
            choice=environment_choice(
                environment, config.base_image, config.environment_choice, config.language
            ),
            local_roots=run.work_dir / "local-roots",
        ),
        checks=SandboxedChecks(),
        base_image=config.base_image,
        progress=display.stage,
        rollouts_left=[max(0, config.rollout_tasks - _rollouts_done(journal))],
    )


def _report(
    prepared: Prepared,
    journal: dict[str, dict[str, Any]],
    stop: str,
    stop_detail: str,
    started: float,
    searches: dict[str, Any] | None,
) -> dict[str, Any]:
    """Write the collection report, whichever way the run ended; its summary."""
    from atoll.frontiersmith.report import build_summary, write_report
    from atoll.frontiersmith.rounds import Rounds

    run = prepared.run
    rounds = Rounds(run, prepared.config)
    summary = build_summary(
        run_id=run.run_id,
        stored={**run.stored(), "config": prepared.config.to_json()},  # a resume's own settings
        outcomes=journal,
        seed_ids=rounds.seed_ids(prepared.seeds),
        ledger=prepared.ledger,
        stop=stop,
        stop_detail=stop_detail,
        wall_seconds=time.monotonic() - started,
        round_records=rounds.records(),
    )
    if searches is not None:
        summary["search"] = searches
    write_report(run.out, summary)
    run.log_event({"event": "stop", "reason": stop})
    return summary


def _search_exit_code(console: Console, searches: dict[str, Any] | None, run: RunDir) -> int:
    """EXIT_SEARCH, with one line naming them, when any task's search ended in an error."""
    if searches is None:
        return EXIT_OK
    tasks: dict[str, dict[str, Any]] = searches["tasks"]
    failed = sorted(name for name, record in tasks.items() if record.get("status") == "error")
    if not failed:
        return EXIT_OK
    steps = searches["settings"]["steps"]
    error_line(
        console,
        f"the search failed on {len(failed)} task(s) ({', '.join(failed)}; run.json's search "
        f"says why); fix that, then {resume_command(run)} --search-steps {steps} searches again",
    )
    return EXIT_SEARCH


async def _search(
    prepared: Prepared,
    journal: dict[str, dict[str, Any]],
    console: Console,
    *,
    stopped: Callable[[], bool],
) -> dict[str, Any]:
    """`--search-steps`: a search-only Guidance-TTT run on each accepted task (see search.py).

    Its executor requests go through the run's ledger on a chat of their own: the pipeline's
    refuses new requests once the target is reached, which is when the searches start.
    """
    from atoll.frontiersmith.meter import MeteredEndpoint
    from atoll.frontiersmith.rounds import Rounds
    from atoll.frontiersmith.search import SEARCH_DIR, accepted_tasks, search_tasks

    config, run = prepared.config, prepared.run
    assert prepared.search is not None
    settings = prepared.search
    chat = PaidChat(
        config.endpoint(),
        config.prices(),
        prepared.ledger,
        api_key=prepared.api_key,
        stop_requested=stopped,
    )
    try:
        dropped = Rounds(run, config).dropped()  # `--population`: only the kept are searched
        records = await search_tasks(
            [t for t in accepted_tasks(journal) if t["name"] not in dropped],
            run.out,
            run.root / SEARCH_DIR,
            settings,
            metered=lambda name: MeteredEndpoint(
                chat, f"search:{name}", config.max_completion_tokens
            ),
            model=config.model,
            say=lambda line: console.print(escape(line)),
            stopped=stopped,
        )
    finally:
        await chat.aclose()
    run.log_event({"event": "search", "tasks": len(records)})
    return {"settings": settings.to_json(), "tasks": records}


def _rollouts_done(journal: dict[str, dict[str, Any]]) -> int:
    return sum(1 for o in journal.values() if o.get("rollout"))


def _exit_code(
    console: Console, stop: str, detail: str, run: RunDir, uncertain: list[Receipt]
) -> int:
    """The exit status, and the one line that says what to do next.

    Uncertain requests exit 3 whatever they belonged to: their reservation
    is held and the resume refuses until `reconcile` settles it. The line
    says which kind they were: a stage's request skipped its seed (the
    resume tries it again), a rollout's left its task accepted and exported
    (nothing is sent again; reconcile settles only the money).
    """
    from atoll.frontiersmith.pipeline import StopReason

    resume = resume_command(run)
    if stop == StopReason.BUDGET:
        error_line(
            console,
            f"{detail}; the run stopped cleanly (resume with {resume} --raise-budget --budget USD)",
        )
        return EXIT_BUDGET
    if stop == StopReason.PROVIDER:
        error_line(console, f"{detail}; fix the key, the model or --base-url, then {resume}")
        return EXIT_PROVIDER
    if stop == StopReason.INTERRUPTED:
        error_line(console, f"interrupted; resume with {resume}")
        return EXIT_INTERRUPTED
    if stop == StopReason.STATE_ERROR:
        error_line(console, f"{detail}; repair that, then {resume}")
        return EXIT_USAGE
    if uncertain:
        error_line(console, uncertain_line(uncertain, run.run_id, resume))
        return EXIT_UNCERTAIN
    return EXIT_OK


def uncertain_line(uncertain: list[Receipt], run_id: str, resume: str) -> str:
    """What the uncertain requests did to the run, by kind, and the reconcile that settles them."""
    rollouts = [r for r in uncertain if is_rollout(r)]
    stages = len(uncertain) - len(rollouts)
    parts = []
    if stages:
        parts.append(
            f"{stages} model request(s) uncertain (sent, answer lost; their seeds were skipped)"
        )
    if rollouts:
        seeds = ", ".join(sorted({stage_and_seed(r)[1] for r in rollouts}))
        parts.append(
            f"{len(rollouts)} rollout request(s) uncertain (sent, answer lost; the agent in "
            f"the rollout of {seeds} got an error for it, see its rollout record; the task "
            "stays accepted and exported)"
        )
    then = f", then {resume}" if stages else " (nothing will be sent again)"
    return (
        "; ".join(parts)
        + f": their reservation is held until `atoll emit frontiersmith reconcile {run_id}` "
        f"settles it{then}"
    )


def print_summary(console: Console, summary: dict[str, Any], run: RunDir) -> None:
    t = summary["totals"]
    table = Table(title=f"FrontierSmith run {run.run_id}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    config = summary["config"]
    if int(config.get("rounds") or 1) > 1:
        table.add_row("accepted", f"{t['accepted']} (target {config.get('target')} per round)")
        for r in summary["rounds"]:
            table.add_row(
                f"round {r['round']}", f"{r['accepted']} of {r['candidates']} ({r['yield']:.1%})"
            )
        dropped = len(summary["population"]["dropped"])
        table.add_row("in the population", f"{t['accepted'] - dropped} ({dropped} dropped)")
    else:
        table.add_row("accepted", f"{t['accepted']} / target {config.get('target')}")
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
    cost = t["worker_cost_usd"]
    table.add_row("worker cost", "unknown (no --worker-price)" if cost is None else f"${cost:.6f}")
    table.add_row("stopped", summary["stop"]["reason"])
    console.print(table)
    console.print(f"report: {run.out / 'report.md'}  tasks: {run.tasks_dir}")
