"""The console while a run goes: a line per active seed with its stage, a bar for the target.

Finished seeds print one permanent line each (accepted with its task, or the
reason code and stage of a rejection or an error), so the scrollback is a
log of the run even where the live display cannot redraw (a pipe, CI).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from atoll.frontiersmith.outcome import Outcome, Status


class Display:
    def __init__(self, console: Console, target: int, run_id: str) -> None:
        self.console = console
        self.target = target
        self.run_id = run_id
        self._progress: Progress | None = None
        self._bar: TaskID | None = None
        self._seeds: dict[str, TaskID] = {}

    @contextlib.contextmanager
    def live(self, journal: Mapping[str, Mapping[str, Any]], label: str = "") -> Iterator[None]:
        """The live display while seeds run; `journal` holds their outcomes so far, `label`
        names the round (`--rounds`), whose own target the bar counts."""
        accepted = sum(1 for o in journal.values() if o["status"] == Status.ACCEPTED)
        progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
        )
        self._progress = progress
        self._bar = progress.add_task(
            f"run {self.run_id}{' ' + label if label else ''}: accepted",
            total=self.target,
            completed=accepted,
        )
        with progress:
            yield
        self._progress = None

    def stage(self, seed_id: str, what: str) -> None:
        if self._progress is None:
            return
        text = f"  {escape(seed_id)}: {escape(what)}"
        task = self._seeds.get(seed_id)
        if task is None:
            self._seeds[seed_id] = self._progress.add_task(text, total=None)
        else:
            self._progress.update(task, description=text)

    def finished(self, outcome: Outcome) -> None:
        task = self._seeds.pop(outcome.seed_id, None)
        if self._progress is not None and task is not None:
            self._progress.remove_task(task)
        seed = escape(outcome.seed_id)
        if outcome.status is Status.ACCEPTED and outcome.task:
            line = (
                f"[green]accepted[/green] {seed} -> tasks/{escape(outcome.task['name'])} "
                f"(reference {outcome.task['reference_reward']:.4f}, "
                f"baseline {outcome.task['baseline_reward']:.4f})"
            )
            if self._progress is not None and self._bar is not None:
                self._progress.advance(self._bar)
        else:
            colour = "yellow" if outcome.status is Status.REJECTED else "red"
            line = (
                f"[{colour}]{outcome.status}[/{colour}] {seed}: {outcome.reason} at "
                f"{escape(outcome.stage)} ({escape(' '.join(outcome.detail.split())[:160])})"
            )
        self._print(line)

    def note(self, text: str) -> None:
        self._print(escape(text))

    def _print(self, line: str) -> None:
        if self._progress is not None:
            self._progress.console.print(line)
        else:
            self.console.print(line)
