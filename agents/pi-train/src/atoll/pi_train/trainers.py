"""`atoll pi train hidden` and `atoll pi train answer`: their task sets, scoring routes, runs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from atoll.pi_train import run, tasks
from atoll.pi_train.run import MAX_SUBMISSIONS, RunInputError, TrainSettings


def _bounds(settings: TrainSettings, turns: int) -> dict[str, Any]:
    return {
        "steps_per_episode": turns,
        "tool_calls_per_episode": turns if turns > 1 else 0,
        "tokens_per_turn": settings.max_tokens,
        "tokens_per_episode": settings.max_tokens * turns,
    }


def train_hidden(
    settings: TrainSettings,
    out: Path,
    sandbox_url: str | None,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
) -> Path:
    """GRPO over hidden-variant groups, checked in a SandboxFusion-compatible sandbox."""
    from atoll.core.sandbox.fusion.loopback import NotLoopbackError, require_loopback_url

    run.api_key()  # before anything is written: a run without a key never starts
    if sandbox_url is not None:
        try:
            require_loopback_url(sandbox_url)
        except NotLoopbackError as exc:
            raise RunInputError(str(exc)) from None
    task_list = tasks.hidden_tasks(settings.languages, run.groups_needed(settings))
    with contextlib.ExitStack() as stack:
        run.hold_run_dir(stack, out, "atoll pi train hidden")
        return _hidden_run(settings, out, sandbox_url, task_list, progress, say, stack)


def _hidden_run(
    settings: TrainSettings,
    out: Path,
    sandbox_url: str | None,
    task_list: list[tasks.HiddenTask],
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    stack: contextlib.ExitStack[Any],
) -> Path:
    """The hidden run itself, inside the run-directory lock `stack` holds."""
    from atoll.core.sandbox.fusion.server import EmbeddedFusionServer
    from atoll.pi_train.families import GENERATOR_VERSION
    from atoll.pi_train.harness import check_submission

    by_id = {t.id: t for t in task_list}
    manifest = run.prepare_manifest(
        out,
        "atoll pi train hidden",
        settings,
        {"digest": tasks.digest(task_list), "groups": len(task_list)},
        _bounds(settings, MAX_SUBMISSIONS),
        {
            "namespaces": {"train": "train", "held_out": "eval", "generator": GENERATOR_VERSION},
            "reward": {"coverage": "passed/total", "all_cases_bonus": run.ALL_CASES_BONUS},
            "sandbox": "given" if sandbox_url else "embedded",
        },
    )
    url = sandbox_url or stack.enter_context(EmbeddedFusionServer()).url

    def check(body: dict[str, Any]) -> dict[str, Any]:
        task = by_id[body["task"]]
        result = check_submission(str(body["code"]), task.language, task.instance, url)
        if result.failure == "infrastructure":
            run.record_infrastructure_failure(out, task.id)
        return {"passed": result.passed, "total": result.total, "failure": result.failure}

    return run.train(
        out,
        "hidden",
        settings,
        [t.public() for t in task_list],
        {"/check": check},
        tasks.HIDDEN_SYSTEM_PROMPT,
        manifest,
        progress,
        say,
    )


def train_answer(
    settings: TrainSettings,
    out: Path,
    store_dir: Path,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
) -> Path:
    """GRPO on the Euler store: exact answer with a small code-format penalty."""
    from atoll.pi_train.euler_source import StoreError

    run.api_key()
    try:
        store = tasks.store_at(store_dir)
        task_list = tasks.answer_tasks(store, settings.languages, run.groups_needed(settings))
    except StoreError as exc:
        raise RunInputError(str(exc)) from None
    by_id = {t.id: t for t in task_list}
    with contextlib.ExitStack() as stack:
        run.hold_run_dir(stack, out, "atoll pi train answer")
        manifest = run.prepare_manifest(
            out,
            "atoll pi train answer",
            settings,
            {"digest": tasks.digest(task_list), "groups": len(task_list), "store": store.digest},
            _bounds(settings, 1),
            {
                "strategies": sorted(tasks.STRATEGIES),
                "reward": {"correct": 1.0, "code_format_penalty": tasks.CODE_FORMAT_PENALTY},
            },
        )

        def reward(body: dict[str, Any]) -> dict[str, Any]:
            task = by_id[body["task"]]
            value, metrics = tasks.answer_reward(
                str(body["text"]), store.expected(task.number), task.language
            )
            return {"reward": value, "metrics": metrics}

        return run.train(
            out,
            "answer",
            settings,
            [t.public() for t in task_list],
            {"/reward": reward},
            tasks.ANSWER_SYSTEM_PROMPT,
            manifest,
            progress,
            say,
        )
