"""`--search-steps N`: the synthesis -> search loop in one command.

After the run's tasks are exported, a search-only Guidance-TTT run
(`training=off`) is started on each accepted task, exactly as `atoll run
--agent guidance-ttt -p OUT/tasks/TASK --ak training=off` would run it: the
bundle's search contract names the `checker` scorer, the search starts from
the bundle's baseline program, and every candidate is graded by the bundle's
own grader. The report then says, per task, the best score the search found
against the reference's (the best sampled solution the run recorded).

The models are the run's: the executor is `--model` at `--base-url`, its
requests put through the run's ledger (reserved and settled like every
other paid request, so `--budget` bounds them too); the guidance samples go,
as in every Guidance-TTT run, through Reef (`REEF_URL`, with `REEF_TOKEN`),
whose upstream is the guidance model; they are recorded by Reef, not paid
from the run's budget. Each task's search keeps its state under
`runs/RUN_ID/search/TASK`, so `--resume RUN_ID --search-steps N` continues
it to `N` steps instead of starting afresh (the same command again is
refused: its `--out` already holds the run).
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core import reef_env
from atoll.frontiersmith.meter import MeteredEndpoint

SEARCH_DIR = "search"
DEFAULT_GROUPS = 2
DEFAULT_ROLLOUTS = 2
# The executor's key: the metered endpoint is loopback and takes none; the preset wants a value.
LOOPBACK_KEY = "metered-by-the-run"


class SearchSetupError(ValueError):
    """`--search-steps` cannot run as asked; the message says what to change."""


@dataclass(frozen=True)
class SearchSettings:
    steps: int
    groups: int = DEFAULT_GROUPS
    rollouts: int = DEFAULT_ROLLOUTS

    def to_json(self) -> dict[str, int]:
        return {"steps": self.steps, "groups": self.groups, "rollouts": self.rollouts}


def check_ready(settings: SearchSettings, environ: Mapping[str, str] = os.environ) -> None:
    """Before anything is paid: the numbers, Guidance-TTT installed, a Reef named."""
    for flag, value in (
        ("--search-steps", settings.steps),
        ("--search-groups", settings.groups),
        ("--search-rollouts", settings.rollouts),
    ):
        if value < 1:
            raise SearchSetupError(f"{flag} must be at least 1, not {value}")
    try:
        from atoll.guidance_ttt import run_search  # noqa: F401
    except ImportError:
        raise SearchSetupError(
            "--search-steps runs Guidance-TTT, which is not installed: "
            "pip install 'atoll-frontiersmith[search]' (or the atoll meta-distribution)"
        ) from None
    if reef_env.named_url(environ) is None:
        raise SearchSetupError(
            f"--search-steps samples guidance through Reef: set {reef_env.URL_ENV} (and "
            f"{reef_env.TOKEN_ENV}) to a Reef in front of the guidance model, e.g. one started "
            "by `atoll stack up --training off --upstream-url URL --upstream-model NAME`"
        )


def accepted_tasks(journal: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The accepted tasks of the run's journal, in seed order as journaled."""
    return [dict(o["task"]) for o in journal.values() if o.get("status") == "accepted"]


async def search_tasks(
    tasks: list[dict[str, Any]],
    out: Path,
    state_root: Path,
    settings: SearchSettings,
    *,
    metered: Callable[[str], MeteredEndpoint],
    model: str,
    environ: Mapping[str, str] = os.environ,
    say: Callable[[str], None] = lambda _: None,
    stopped: Callable[[], bool] = lambda: False,
) -> dict[str, dict[str, Any]]:
    """One search per task, one after another; each task's record (`search` in run.json).

    Once `stopped` says so (an interrupt), no further task is searched; the one running
    fails at its next executor request (the run's chat refuses it) and records the error.
    """
    records: dict[str, dict[str, Any]] = {}
    for task in tasks:
        if stopped():
            break
        name = task["name"]
        say(f"search: {name}: {settings.steps} step(s) of {settings.groups}x{settings.rollouts}")
        meter = metered(name)
        async with meter.serving(saved_port(state_root / name)):
            records[name] = await asyncio.to_thread(
                search_one,
                out / task["path"],
                state_root / name,
                settings,
                executor_url=meter.base_url,
                model=model,
                environ=environ,
            )
        records[name]["reference_reward"] = task.get("reference_reward")
        records[name]["baseline_reward"] = task.get("baseline_reward")
        say(f"search: {name}: {describe(records[name])}")
    return records


def saved_port(state_dir: Path) -> int:
    """The loopback port a task's search started with; 0 for a new search.

    The executor's URL is part of a Guidance-TTT run's identity, and the
    metered endpoint's is a loopback port: a resumed search serves on the port
    it started with, so that it continues rather than being refused. If that
    port is taken now, the endpoint takes another and the search refuses, in
    one line, as any changed executor would be.
    """
    from urllib.parse import urlsplit

    from atoll.guidance_ttt import ResumeError, load_resume

    try:
        saved = load_resume(state_dir)
        url = urlsplit(str(saved.identity.get("executor_base_url") or "")) if saved else None
        port = url.port if url is not None and url.hostname == "127.0.0.1" else None
    except (ResumeError, OSError, ValueError):
        return 0
    return port or 0


def search_one(
    task_dir: Path,
    state_dir: Path,
    settings: SearchSettings,
    *,
    executor_url: str,
    model: str,
    environ: Mapping[str, str],
) -> dict[str, Any]:
    """A search-only Guidance-TTT run on one bundle; its record, or the error that stopped it."""
    from rich.console import Console

    from atoll.guidance_ttt import agent_config, load_task, run_search

    config = agent_config(
        {
            "steps": settings.steps,
            "groups": settings.groups,
            "rollouts": settings.rollouts,
            "training": "off",
            "state_dir": str(state_dir),
            "executor": "openai",
            "executor_base_url": executor_url,
            "executor_model": model,
        }
    )
    record: dict[str, Any] = {"state_dir": str(state_dir), **settings.to_json()}
    try:
        task = load_task(task_dir)
        result = run_search(
            config,
            task,
            task_dir,
            environ={**environ, "OPENAI_API_KEY": LOOPBACK_KEY},
            console=Console(file=io.StringIO(), soft_wrap=True),  # the record says the outcome
        )
    except Exception as exc:  # any failure is this task's search error, never a score
        return record | {"status": "error", "detail": f"{type(exc).__name__}: {exc}"[:500]}
    best = result.best
    summaries = result.summaries
    return record | {
        "status": "searched",
        "steps_done": len(summaries),
        "rollouts": sum(s.sampled for s in summaries),
        "valid_rollouts": sum(s.valid for s in summaries),
        "best_raw_score": None if best is None else best.raw_score,
        "best_is_seed": best is not None and best.parent is None,
    }


def describe(record: Mapping[str, Any]) -> str:
    """One line: the best score found against the reference's, or the error."""
    if record["status"] != "searched":
        return f"error: {record['detail']}"
    best, reference = record["best_raw_score"], record.get("reference_reward")
    if best is None:
        return "no valid program found"
    against = "" if reference is None else f" (reference {reference:.4f}, {best - reference:+.4f})"
    return f"best {best:.4f}{against} after {record['rollouts']} rollouts"
