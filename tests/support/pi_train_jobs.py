"""The job each `atoll pi train` command hands its trainer, rebuilt from the command's functions.

`answer`, `hidden` and `shell` all run one trainer (managed/train.py, the
cookbook's RL loop): what differs is the job, its tasks and system prompt,
its mode's Envs and the scoring service the Envs call. `command_job` builds
those as the command does (its task list, its routes, its job extras,
`run.trainer_job`) and keeps the scoring service and sandbox running while
the caller drives the trainer's code on that job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from atoll.pi_train.answer import train as answer_train
from atoll.pi_train.hidden import sets as hidden_sets
from atoll.pi_train.hidden import train as hidden_train
from atoll.pi_train.shell import train as shell_train
from atoll.pi_train.training import run, tasks
from atoll.pi_train.training.held_out import HeldOut
from atoll.pi_train.training.run import TrainSettings
from atoll.pi_train.training.scoring import Handler, ScoringService

COMMANDS = ("answer", "hidden", "shell")
NO_HELD_OUT = HeldOut(instances=0, every=0)  # one update measures training alone


def _inputs(
    mode: str,
    settings: TrainSettings,
    out: Path,
    store_dir: Path | None,
    stack: contextlib.ExitStack[Any],
) -> tuple[list[dict[str, Any]], dict[str, Handler], str, dict[str, Any]]:
    """(tasks, scoring routes, system prompt, job extras) as `atoll pi train MODE` makes them."""
    from atoll.core.sandbox.fusion import EmbeddedFusionServer

    count = run.groups_needed(settings)
    if mode == "answer":
        assert store_dir is not None, "answer trains on an Euler store"
        store = tasks.store_at(store_dir)
        answer = tasks.answer_tasks(store, settings.languages, count)
        extra = answer_train.regression_job([], None)
        return (
            [t.public() for t in answer],
            answer_train.answer_routes(store, answer),
            (tasks.ANSWER_SYSTEM_PROMPT),
            extra,
        )
    url = stack.enter_context(EmbeddedFusionServer()).url
    if mode == "hidden":
        per = settings.groups_per_batch
        hidden = hidden_sets.train_tasks(settings.languages, per, count, 0)
        routes = hidden_train.hidden_routes(out, hidden, [], url)
        extra = hidden_train.hidden_job_extra([], NO_HELD_OUT)
        return [t.public() for t in hidden], routes, tasks.HIDDEN_SYSTEM_PROMPT, extra
    if mode == "shell":
        from atoll.pi_train.shell.episode import Bounds, fusion_runner

        bounds = Bounds(steps=2, tool_calls=3)
        train = shell_train.train_tasks(settings.languages, count, settings.groups_per_batch)
        store = shell_train.EpisodeStore(out, {t.id: t for t in train}, fusion_runner(url), bounds)
        extra = shell_train.job_extra(bounds, [], NO_HELD_OUT)
        return [t.public() for t in train], store.routes(), shell_train.SYSTEM_PROMPT, extra
    raise ValueError(f"no training command {mode!r}")


@contextlib.contextmanager
def command_job(
    mode: str, settings: TrainSettings, out: Path, store_dir: Path | None = None
) -> Iterator[tuple[dict[str, Any], str]]:
    """(the trainer's job, the scoring token) for `atoll pi train MODE`, its service running.

    `out` is the run directory the job names (the cookbook's log path).
    """
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        task_list, routes, system_prompt, extra = _inputs(mode, settings, out, store_dir, stack)
        job = run.trainer_job(out, mode, settings, task_list, system_prompt, extra)
        service = stack.enter_context(ScoringService(routes))
        job["scorer_url"] = service.url
        yield job, service.token
        assert not service.errors, service.errors
