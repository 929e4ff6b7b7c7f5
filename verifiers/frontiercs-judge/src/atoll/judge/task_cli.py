"""`atoll task frontiercs ID --out DIR`: one FrontierCS problem as a Harbor task, in one command.

The problem comes from the checkout `--frontiercs` (or FRONTIERCS_HOME)
names, or from atoll's own problems (0); the seed (`--seed FILE`, else a
trivial program) is judged first and its result recorded in the task.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from atoll.judge.checkout import HOME_ENV
from atoll.judge.embedded import JudgeSetup
from atoll.judge.engine import JudgeInfrastructureError
from atoll.judge.problems import ProblemError
from atoll.judge.task_writer import TaskWriteError, WrittenTask, write_task

app = typer.Typer(
    name="task",
    help="Write Harbor tasks: `atoll task frontiercs ID --out DIR`.",
    no_args_is_help=True,
    add_completion=False,
)

_err = Console(stderr=True, highlight=False, soft_wrap=True)


@app.callback()
def _group() -> None:
    """Write Harbor tasks from problem sources."""


@app.command("frontiercs")
def frontiercs_command(
    problem: str = typer.Argument(..., help="The problem id (a directory of the checkout)."),
    out: Path = typer.Option(..., "--out", help="The task directory to write (new or empty)."),
    frontiercs: Path | None = typer.Option(
        None, "--frontiercs", envvar=HOME_ENV, help="The FrontierCS checkout."
    ),
    seed: Path | None = typer.Option(
        None, "--seed", help="C++17 seed program (default: a trivial one); it is judged first."
    ),
    state_dir: Path | None = typer.Option(None, help="Where the judge caches compiled programs."),
) -> None:
    """Write FrontierCS problem ID as a Harbor task (Guidance-TTT and any Harbor agent run it)."""
    try:
        program = seed.read_bytes() if seed is not None else None
    except OSError as exc:
        raise _fail(f"cannot read {seed}: {exc.strerror}") from None
    try:
        written = write_frontiercs_task(problem, out, frontiercs, program, state_dir)
    except (ProblemError, JudgeInfrastructureError, TaskWriteError) as exc:
        raise _fail(str(exc)) from None
    score = (
        "did not compile (0)" if written.seed_status == "invalid" else f"{written.seed_score:.6f}"
    )
    _err.print(f"wrote {written.directory}: frontiercs/{problem}, seed score {score}")
    if frontiercs is not None and os.environ.get(HOME_ENV) != str(frontiercs):
        _err.print(f"the judge that scores it needs the checkout: export {HOME_ENV}={frontiercs}")


def write_frontiercs_task(
    problem: str,
    out: Path,
    frontiercs: Path | None,
    seed: bytes | None,
    state_dir: Path | None = None,
) -> WrittenTask:
    """Load `problem`, judge the seed in-process, write the task (the CLI's and `atoll run`'s way)."""
    setup = JudgeSetup(state_dir=state_dir, frontiercs=frontiercs)
    found = setup.problem_set()
    if problem not in found.problems:
        if problem in found.failures:
            raise ProblemError(found.failures[problem])
        where = f"the checkout {found.checkout.root}" if found.checkout else "atoll's problems"
        hint = "" if found.checkout else f" (give --frontiercs or set {HOME_ENV})"
        raise ProblemError(f"no problem {problem!r} in {where}{hint}")
    chosen = found.problems[problem]
    source = (
        f"FrontierCS algorithmic problem {problem}, read from the checkout {found.checkout.root}."
        if found.checkout and chosen.origin == "frontiercs"
        else f"FrontierCS algorithmic problem {problem}, shipped with atoll (MIT licence)."
    )
    engine = setup.engine(found, only=problem)
    try:
        return write_task(chosen, out, engine, seed, source)
    finally:
        engine.close()


def _fail(message: str) -> typer.Exit:
    _err.print(f"[bold red]error:[/bold red] {message}")
    return typer.Exit(2)
