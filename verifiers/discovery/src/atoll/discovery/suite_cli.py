"""`atoll suite`: search several tasks in turn and compare the best found with the records.

    atoll suite run [NAME ...] --steps N [--out DIR] [--agent A] [--env E]
                    [--ak KEY=VALUE ...] [--ae KEY=VALUE ...]
    atoll suite table [--out DIR]

Without names, `run` takes the five discovery tasks. Each task is searched by
its own `atoll run` (see `atoll.discovery.suite`); the same command again
resumes the suite. `table` prints the table of a suite from its suite.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from atoll.core.durable import atomic_write_text
from atoll.core.records import Kind
from atoll.core.registry import Registry, RegistryError, UnknownName, load
from atoll.discovery.suite import SUITE_FILE, SuiteError, SuiteSettings, run_suite
from atoll.discovery.suite_table import markdown, rows, terminal_table
from atoll.discovery.tasks import TASKS

app = typer.Typer(
    name="suite",
    help="Search several tasks in turn with `atoll run` and tabulate the best found "
    "against the published records.",
    no_args_is_help=True,
    add_completion=False,
)

TABLE_FILE = "suite.md"
DEFAULT_OUT = Path("suite")

_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    _err.print(f"[bold red]error:[/bold red] {escape(message)}")
    return typer.Exit(code)


def _task_dirs(names: list[str], registry: Registry) -> list[tuple[str, Path]]:
    """Each named task's directory, as `atoll run --task NAME` resolves it."""
    found = []
    for name in names:
        try:
            record = registry.get(Kind.TASK, name)
        except UnknownName as exc:
            raise _fail(str(exc)) from None
        if record.dynamic:
            raise _fail(f"{name}: the suite takes registered task names, not a task source")
        found.append((name, Path(record.target)))
    return found


@app.command("run")
def run_command(
    names: list[str] = typer.Argument(
        None, help="Registered task names; without any, the five discovery tasks."
    ),
    steps: int = typer.Option(..., "--steps", help="Search steps per task, in all (resumable)."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="The suite's directory."),
    agent: str = typer.Option("guidance-ttt", "--agent", help="The agent that searches."),
    env: str | None = typer.Option(None, "--env", help="The trials' environment."),
    ak: list[str] = typer.Option([], "--ak", help="KEY=VALUE for every task's agent."),
    ae: list[str] = typer.Option([], "--ae", help="KEY=VALUE for every task's agent env."),
) -> None:
    """Search each task with `atoll run`, then print and write the table (OUT/suite.md)."""
    try:
        settings = SuiteSettings(steps, agent, env, tuple(ak), tuple(ae))
        tasks = _task_dirs(list(names or TASKS), load())
        suite = run_suite(tasks, out, settings, say=lambda line: _out.print(escape(line)))
    except (SuiteError, RegistryError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise _fail("interrupted; the same command resumes the suite", code=130) from None
    order = [name for name, _ in tasks]
    _show(order, suite.tasks, out)
    if any(suite.tasks[name].get("status") != "done" for name in order):
        raise typer.Exit(1)


@app.command("table")
def table_command(
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="The suite's directory."),
) -> None:
    """Print the table of the suite in OUT (from its suite.json) and write OUT/suite.md."""
    path = out / SUITE_FILE
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))["tasks"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _fail(f"{path}: no suite to show ({exc})") from None
    _show(list(tasks), tasks, out)


def _show(order: list[str], tasks: dict[str, dict[str, Any]], out: Path) -> None:
    table = rows(order, tasks)
    atomic_write_text(out / TABLE_FILE, markdown(table))
    _out.print(terminal_table(table, f"suite in {out}"))
    _out.print(f"written: {out / TABLE_FILE}")
