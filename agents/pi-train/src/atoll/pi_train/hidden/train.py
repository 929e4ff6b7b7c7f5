"""`atoll pi train hidden`: its task sets, its scoring route (the checker) and its run."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.pi_train.hidden import sets as hidden_sets
from atoll.pi_train.training import held_out, run, tasks, trained_on
from atoll.pi_train.training.held_out import HeldOut
from atoll.pi_train.training.run import MAX_SUBMISSIONS, RunInputError, TrainSettings
from atoll.pi_train.training.scoring import Handler


def train_hidden(
    settings: TrainSettings,
    out: Path,
    sandbox_url: str | None,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    load_from: str | None = None,
    evaluation: HeldOut | None = None,
    batch_seed: int = 0,
) -> Path:
    """GRPO over hidden-variant groups, checked in a SandboxFusion-compatible sandbox.

    `load_from` is `--load-checkpoint` as given (a run directory or a state): where
    the run's lineage is read from (atoll.pi_train.training.trained_on). Batches mix families
    and languages from `batch_seed`; `evaluation` is the held-out set of the `eval`
    namespace and how often it is evaluated (atoll.pi_train.hidden.sets, held_out).
    """
    from atoll.core.sandbox.fusion import NotLoopbackError, require_loopback_url

    run.api_key()  # before anything is written: a run without a key never starts
    if sandbox_url is not None:
        try:
            require_loopback_url(sandbox_url)
        except NotLoopbackError as exc:
            raise RunInputError(str(exc)) from None
    sets = _hidden_sets(settings, evaluation or HeldOut(), batch_seed)
    with contextlib.ExitStack() as stack:
        run.hold_run_dir(stack, out, "atoll pi train hidden")
        lineage = trained_on.started_from(load_from, settings.load_checkpoint)
        return _hidden_run(settings, out, sandbox_url, sets, progress, say, stack, lineage)


@dataclass(frozen=True)
class _HiddenSets:
    train: list[tasks.HiddenTask]
    held_out: list[tasks.HiddenTask]
    evaluation: HeldOut
    batches: dict[str, Any]


def _hidden_sets(settings: TrainSettings, evaluation: HeldOut, seed: int) -> _HiddenSets:
    """The mixed training groups and the held-out ones (none with `--eval-instances 0`)."""
    why = evaluation.check()
    if why is not None:
        raise RunInputError(why)
    per = settings.groups_per_batch
    return _HiddenSets(
        hidden_sets.train_tasks(settings.languages, per, run.groups_needed(settings), seed),
        hidden_sets.eval_tasks(settings.languages, evaluation.instances),
        evaluation,
        hidden_sets.batches_record(settings.languages, per, seed),
    )


def _hidden_run(
    settings: TrainSettings,
    out: Path,
    sandbox_url: str | None,
    sets: _HiddenSets,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    stack: contextlib.ExitStack[Any],
    lineage: dict[str, Any] | None,
) -> Path:
    """The hidden run itself, inside the run-directory lock `stack` holds."""
    from atoll.core.sandbox.fusion import EmbeddedFusionServer
    from atoll.pi_train.hidden.families import GENERATOR_VERSION
    from atoll.pi_train.training import preflight

    task_list = sets.train
    url = sandbox_url or stack.enter_context(EmbeddedFusionServer()).url
    # Before anything is written or any Tinker client exists: every reference must score full.
    checked = preflight.check_hidden(settings.languages, url)
    preflight.require_full(checked)
    manifest = run.prepare_manifest(
        out,
        "atoll pi train hidden",
        settings,
        {
            "digest": tasks.digest(task_list),
            "groups": len(task_list),
            "eval_digest": tasks.digest(sets.held_out),
        },
        {
            **run.episode_bounds(settings, MAX_SUBMISSIONS),
            "trajectory_tokens": run.MAX_TRAJECTORY_TOKENS,
        },
        {
            "namespaces": {"train": "train", "held_out": "eval", "generator": GENERATOR_VERSION},
            "reward": {
                "coverage": "passed/total",
                "all_cases_bonus": run.ALL_CASES_BONUS,
                "context_overflow": run.CONTEXT_OVERFLOW_REWARD,
            },
            "sandbox": "given" if sandbox_url else "embedded",
            "batches": sets.batches,
            "evaluation": held_out.record(sets.evaluation, len(sets.held_out)),
        },
        trained=trained_on.hidden_record(task_list, sets.held_out),
        started_from=lineage,
    )
    preflight.record(out, "atoll pi train hidden", manifest["sandbox"], checked, say)
    return run.train(
        out,
        "hidden",
        settings,
        [t.public() for t in task_list],
        hidden_routes(out, task_list, sets.held_out, url),
        tasks.HIDDEN_SYSTEM_PROMPT,
        manifest,
        progress,
        say,
        hidden_job_extra(sets.held_out, sets.evaluation),
    )


def hidden_job_extra(held_out_tasks: list[tasks.HiddenTask], evaluation: HeldOut) -> dict[str, Any]:
    """What `hidden` adds to the trainer's job: the episode's token bound, what an episode
    past it earns, and the held-out tasks the cookbook evaluates."""
    return {
        "max_trajectory_tokens": run.MAX_TRAJECTORY_TOKENS,
        "context_overflow_reward": run.CONTEXT_OVERFLOW_REWARD,
        **held_out.job_fields([t.public() for t in held_out_tasks], evaluation),
    }


def hidden_routes(
    out: Path,
    task_list: list[tasks.HiddenTask],
    held_out_tasks: list[tasks.HiddenTask],
    sandbox_url: str,
) -> dict[str, Handler]:
    """`hidden`'s scoring route: `/check` runs a submission on its task's hidden cases.

    The trainer gets counts only; a check the sandbox could not run is logged
    in the run directory with its phase (a training group leaves the update,
    a held-out one leaves the evaluation).
    """
    from atoll.pi_train.hidden.harness import check_submission

    by_id = {t.id: t for t in [*task_list, *held_out_tasks]}
    held_out_ids = {t.id for t in held_out_tasks}

    def check(body: dict[str, Any]) -> dict[str, Any]:
        task = by_id[body["task"]]
        result = check_submission(str(body["code"]), task.language, task.instance, sandbox_url)
        if result.failure == "infrastructure":
            phase = "eval" if task.id in held_out_ids else "train"
            run.record_infrastructure_failure(out, task.id, phase)
        return {"passed": result.passed, "total": result.total, "failure": result.failure}

    return {"/check": check}
