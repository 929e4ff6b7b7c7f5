"""What the `atoll pi train` commands share: the one error line, their common flags turned into
settings, and the progress bar of a run.

Its own module so that each command's module (cli.py's `hidden` and `answer`, the shell room's
`shell`) takes these from here, never from the module that mounts it. Like cli.py it imports
only Typer and Rich until a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

stderr = Console(stderr=True, highlight=False, soft_wrap=True)
stdout = Console(highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> None:
    """One error line on stderr, then exit `code` (2: bad input or a missing prerequisite)."""
    from rich.markup import escape

    stderr.print(f"[bold red]error:[/bold red] {escape(message)}")
    raise typer.Exit(code)


def train_settings(
    base_model: str,
    renderer: str,
    base_url: str | None,
    lora_rank: int,
    learning_rate: float,
    groups_per_batch: int,
    group_size: int,
    iterations: int,
    max_tokens: int,
    languages: str,
    load_checkpoint: str | None = None,
) -> Any:
    """The `TrainSettings` of the common flags, or one error line naming the flag that is wrong."""
    from atoll.pi_train.training.load_checkpoint import LoadCheckpointError, resolve
    from atoll.pi_train.training.run import TrainSettings, default_base_url

    chosen = tuple(dict.fromkeys(x.strip() for x in languages.split(",") if x.strip()))
    if not chosen:
        fail("--languages names no language")
    for name, value in (
        ("--groups-per-batch", groups_per_batch),
        ("--group-size", group_size),
        ("--iterations", iterations),
        ("--max-tokens", max_tokens),
        ("--lora-rank", lora_rank),
    ):
        if value < 1:
            fail(f"{name} must be at least 1 (got {value})")
    state = None
    if load_checkpoint is not None:
        try:
            state = resolve(load_checkpoint)
        except LoadCheckpointError as exc:
            fail(str(exc))
    model = str(Path(base_model).resolve()) if Path(base_model).is_dir() else base_model
    return TrainSettings(
        base_model=model,
        renderer=renderer,
        base_url=base_url or default_base_url(),
        lora_rank=lora_rank,
        learning_rate=learning_rate,
        groups_per_batch=groups_per_batch,
        group_size=group_size,
        iterations=iterations,
        max_tokens=max_tokens,
        languages=chosen,
        load_checkpoint=state,
    )


def run_with_progress(start: Any) -> None:
    """Run `start(progress, say)` under a progress bar; its refusal or failure is one error line
    (exit 2 when refused before it started, 1 when a started run failed)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from atoll.pi_train import env
    from atoll.pi_train.training import tasks
    from atoll.pi_train.training.run import RunError, RunInputError

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=False,
    ) as bar:
        task = bar.add_task("iterations", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        try:
            written = start(progress, lambda line: bar.console.print(line))
        except (RunError, tasks.TaskSetError, env.EnvironmentUnavailable, ValueError) as exc:
            if bar.tasks[0].total is None:  # refused before any iteration: the error says it all
                bar.update(task, visible=False)
            bar.stop()
            # A run that started and failed is 1; bad input or a missing prerequisite is 2.
            failed = isinstance(exc, RunError) and not isinstance(exc, RunInputError)
            fail(str(exc), code=1 if failed else 2)
    stdout.print(f"{written}")
