"""The run controller: steps, the training barrier, and the archive commit, resumable at any point.

Per step: run the step up to its report barrier, fold the archive, wait for
Reef to train the step and check the update (or, in search-only mode, train
nothing, by choice), write the step summary, and only then commit the archive
and advance the resume state. A resume restores the committed archive,
refuses a changed identity or a `steps` total below the steps it has done,
checks that Reef's trainer is where the archive says, and finishes the open
step from its journal. A run that has already done exactly `steps` steps
returns its committed best without sampling anything, so that the same
command run again (after a kill between the search and the task's verifier,
or to score a finished run once more) hands the paid-for result to the
verifier instead of failing. A first start writes the archive and then the
resume state; one killed in between is started again. A cancelled run stops
between rollouts and at every wait, leaving the state a crash would leave, so
the next run resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from atoll.core.durable import atomic_write_json
from atoll.guidance_ttt.config import ConfigError, GuidanceConfig
from atoll.guidance_ttt.contract import Task
from atoll.guidance_ttt.search.archive import Archive
from atoll.guidance_ttt.search.judge_slots import judge_slots
from atoll.guidance_ttt.search.node import Node
from atoll.guidance_ttt.search.scored_program import Entry
from atoll.guidance_ttt.search.step import (
    ExecutorService,
    GuidanceService,
    Limits,
    ScoringService,
    StepContext,
    StepSummary,
    run_step,
)
from atoll.guidance_ttt.services.cancel import Cancellation
from atoll.guidance_ttt.services.training_barrier import (
    REEF_MODE,
    SEARCH_ONLY_MODE,
    StepExpectation,
    TrainingBarrier,
)
from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.durable_archive import Library
from atoll.guidance_ttt.state.run_dir import RunDir
from atoll.guidance_ttt.state.step_journal import read_step

STAGES = ("guidance", "executor", "judged", "reported")
# Log lines are data (paths, scores): no markup, no highlighting, no wrapping.
PLAIN: dict[str, Any] = {"markup": False, "highlight": False, "soft_wrap": True}


class TrainerOutOfStep(RuntimeError):
    """Reef's trainer is not at the step the committed archive is at."""


class RunAlreadyComplete(ConfigError):
    """`steps` is below the number of steps the run has already done."""


@dataclass
class RunResult:
    run_id: str
    training: str
    best: Node | None
    summaries: list[StepSummary]

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return {
            "run_id": self.run_id,
            "training": self.training,
            "steps": len(self.summaries),
            "best": None
            if best is None
            else {
                "id": best.id,
                "raw_score": best.raw_score,
                "program": best.entry.program,
                "summary": best.entry.summary,
            },
            "summaries": [s.to_json() for s in self.summaries],
        }


def run(
    config: GuidanceConfig,
    task: Task,
    seed: Entry,
    *,
    guidance: GuidanceService,
    executor: ExecutorService,
    scorer: ScoringService,
    barrier: TrainingBarrier,
    name: resume.RunName | None = None,
    start: resume.RunStart | None = None,
    judge: resume.Judge = None,
    cancellation: Cancellation | None = None,
    console: Console | None = None,
) -> RunResult:
    """Run (or resume) the search until `config.steps` steps are committed.

    `start` is what the caller read of the state directory before it built
    the services (`resume.read_start`); None reads it here. `name` is the
    run's id and Reef scenario, which the guidance client and the barrier were
    built for; None takes the start's (the saved name, or a new one for a
    first start). `judge` is the judge that scores (`JudgeRecord.to_json()`,
    None when the task's scorer is no judge): a first start records it in the
    run's identity, a resume refuses another. `cancellation` stops the run: it
    raises `RunCancelled` once the calls in flight are aborted and journaled.
    """
    console = console or Console(stderr=True)
    cancellation = cancellation or Cancellation()
    if (config.training == "off") != (barrier.mode == SEARCH_ONLY_MODE):
        raise ConfigError(
            f"training is {config.training!r} but the training barrier is {barrier.mode!r}; "
            "use the search-only barrier exactly when training is 'off'"
        )
    state_dir = config.state_dir
    start = start or resume.read_start(state_dir)
    opened = resume.RunStart(start.saved, name or start.name)
    library, state = _open(config, task, seed, barrier, opened, judge, console)
    try:
        if state.next_step > config.steps:
            raise RunAlreadyComplete(
                f"the run in {state_dir} has already completed {state.next_step} steps, and "
                f"steps={config.steps} is the final total, not an increment: pass "
                f"steps={state.next_step} to hand in its best program again, or "
                f"steps={state.next_step + 1} or more to continue it"
            )
        if state.next_step == config.steps:
            _log_handed_in(console, state, library.archive.best)
        else:
            services = (guidance, executor, scorer, barrier)
            _run_steps(config, task, library, state, services, cancellation, console)
        result = RunResult(state.run_id, state.training, library.archive.best, state.summaries)
        atomic_write_json(RunDir(state_dir).result, result.to_json())
        return result
    finally:
        library.close()


def _run_steps(
    config: GuidanceConfig,
    task: Task,
    library: Library,
    state: resume.ResumeState,
    services: tuple[GuidanceService, ExecutorService, ScoringService, TrainingBarrier],
    cancellation: Cancellation,
    console: Console,
) -> None:
    """Run and commit steps `state.next_step` .. `config.steps - 1`, advancing `state`."""
    state_dir = config.state_dir
    guidance, executor, scorer, barrier = services
    barrier.start(state.next_step)
    context = StepContext(
        task=task,
        library=library,
        guidance=guidance,
        executor=executor,
        scorer=scorer,
        run_id=state.run_id,
        groups=config.groups,
        rollouts=config.rollouts,
        limits=Limits(
            guidance=config.guidance_concurrency,
            executor=config.executor_concurrency,
            judge=judge_slots(config.judge_concurrency, scorer),
        ),
        cancellation=cancellation,
        # Reef's tttd recipe trains only a complete grid; atoll's Tinker trainer skips a slot
        # whose guidance call failed (nothing was sampled to train on).
        complete_grid=barrier.mode == REEF_MODE,
        sampling_seed=config.sampling_seed,
    )
    for step in range(state.next_step, config.steps):
        cancellation.check(f"step {step}")
        summary = _step_with_progress(context, step, console)
        library.finish_step(step)
        commit = barrier.await_training(
            StepExpectation(
                step=step,
                groups=config.groups,
                rollouts_per_group=config.rollouts,
                rollouts=summary.sampled,
                non_constant_groups=summary.non_constant_groups,
            )
        )
        summary.training = barrier.mode
        if commit is not None:
            summary.grad_norm = commit.grad_norm
            summary.train_metrics = commit.metrics
        resume.save_summary(state_dir, summary)
        library.commit()
        state.summaries.append(summary)
        state.next_step = step + 1
        resume.save(state_dir, state)
        _log_step(console, summary)


def _open(
    config: GuidanceConfig,
    task: Task,
    seed: Entry,
    barrier: TrainingBarrier,
    start: resume.RunStart,
    judge: resume.Judge,
    console: Console,
) -> tuple[Library, resume.ResumeState]:
    state_dir = config.state_dir
    saved, name = start.saved, start.name
    if saved is None:
        _check_trainer(barrier, 0, open_step_complete=False)
        has_steps = any(RunDir(state_dir).steps.glob("*"))
        if Library.discard_unstarted(state_dir, has_steps=has_steps):
            console.print(
                f"guidance-ttt: a first start in {state_dir} stopped before it saved its resume "
                "state; starting it again",
                **PLAIN,
            )
        archive = Archive.seeded(seed, task.contract.score_direction, config.groups)
        library = Library.create(state_dir, archive)
        library.commit()
        state = resume.ResumeState(
            run_id=name.run_id,
            scenario=name.scenario,
            training=barrier.mode,
            identity={**config.identity(), resume.JUDGE: resume.judge_record(judge)},
            next_step=0,
            task=task.identity(),
        )
        resume.save(state_dir, state)
        console.print(
            f"guidance-ttt: new run {state.run_id} ({barrier.mode}, Reef scenario "
            f"{state.scenario}) in {state_dir}{_scored_by(judge)}",
            **PLAIN,
        )
        return library, state
    saved.check(config, barrier.mode, name, task, judge)
    library = Library.restore_committed(state_dir)
    try:
        resume.catch_up(state_dir, saved, library.archive.step)
        if saved.adopt_judge(judge) and judge is not None:
            console.print(
                f"guidance-ttt: {state_dir} was saved before judges were recorded; recording "
                f"{resume.describe_judge(judge)} from step {saved.next_step} on",
                **PLAIN,
            )
        if saved.next_step < config.steps:
            # A finished run trains nothing more: where Reef's trainer stands is not its concern.
            open_step = saved.next_step
            journal = read_step(RunDir(state_dir).step_journal(open_step), open_step)
            complete = len(journal.finished) == config.groups * config.rollouts
            _check_trainer(barrier, open_step, open_step_complete=complete)
            console.print(
                f"guidance-ttt: resuming run {saved.run_id} ({saved.training}) at step {open_step}",
                **PLAIN,
            )
        resume.save(state_dir, saved)
    except BaseException:
        library.close()
        raise
    return library, saved


def _scored_by(judge: resume.Judge) -> str:
    """Which judge scores, for the log: the embedded one is otherwise started silently."""
    return "" if judge is None else f", scored by {resume.describe_judge(judge)}"


def _check_trainer(barrier: TrainingBarrier, step: int, *, open_step_complete: bool) -> None:
    trained = barrier.trainer_step()
    if trained is None or trained == step:
        return
    if open_step_complete and trained == step + 1:
        # Reef trained the open step before its archive was committed: the barrier checks that
        # update (from the trainer's report or its durable job marker) before the commit.
        return
    raise TrainerOutOfStep(
        f"Reef's trainer has completed {trained} steps but the committed archive is at step "
        f"{step}; resume against the Reef state this run trained, or start a new state directory"
    )


def _step_with_progress(context: StepContext, step: int, console: Console) -> StepSummary:
    grid = context.groups * context.rollouts
    with Progress(
        TextColumn(f"step {step} " + "{task.description:>9}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        tasks = {stage: progress.add_task(stage, total=grid) for stage in STAGES}

        def advance(stage: str, count: int) -> None:
            progress.advance(tasks[stage], count)

        return run_step(context, step, advance)


def _log_handed_in(console: Console, state: resume.ResumeState, best: Node | None) -> None:
    score = "-" if best is None else f"{best.raw_score:.6g}"
    console.print(
        f"guidance-ttt: run {state.run_id} ({state.training}) has already completed its "
        f"{state.next_step} steps; handing in its committed best (raw score {score}) again, "
        "with no guidance or executor call",
        **PLAIN,
    )


def _log_step(console: Console, summary: StepSummary) -> None:
    best = "-" if summary.best_raw_score is None else f"{summary.best_raw_score:.6g}"
    grad = "-" if summary.grad_norm is None else f"{summary.grad_norm:.4g}"
    console.print(
        f"step {summary.step}: {summary.valid}/{summary.sampled} valid, "
        f"{summary.well_formed_guidance} well-formed guidance, "
        f"{summary.non_constant_groups} non-constant groups"
        f"{' (degenerate)' if summary.degenerate else ''}, best {best}, grad norm {grad}, "
        f"training {summary.training}, {summary.elapsed_s:.1f} s"
        + (f", {len(summary.orphans)} orphaned guidance calls" if summary.orphans else "")
        + (
            f", {summary.programs_from_fallback} programs from answers without <solution>"
            if summary.programs_from_fallback
            else ""
        ),
        **PLAIN,
    )
