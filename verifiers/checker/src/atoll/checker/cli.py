"""`atoll checker`: grade a submission on the host, or verify a task bundle.

`grade` runs the very module a bundle carries as tests/grader.py, so a score
here is the score the task's verifier phase gives; it needs root for the same
reason the verifier does (the submission runs as another, unused uid).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from atoll.checker import grader, layout
from atoll.checker.grader import CheckerError, GradeReport

app = typer.Typer(
    name="checker",
    help="The isolated grader of emitted optimization tasks: grade a submission, verify a bundle.",
    no_args_is_help=True,
    add_completion=False,
)

_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    _err.print(f"[bold red]error:[/bold red] {message}")
    return typer.Exit(code)


def _task_dir(task_dir: Path) -> Path:
    if not (task_dir / "tests").is_dir():
        raise _fail(f"{task_dir} is not a task directory: it has no tests/ directory")
    return task_dir


@app.command("grade")
def grade_command(
    task_dir: Path = typer.Argument(..., help="The task directory (with tests/ and solution/)."),
    submission: Path = typer.Argument(..., help="The Python program to grade."),
    out: Path | None = typer.Option(
        None, help="Also write reward.txt, reward.json and scores.json into this directory."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print scores.json's content instead."),
) -> None:
    """Grade SUBMISSION on the task's instances and print each case and the reward."""
    task_dir = _task_dir(task_dir)
    try:
        report = grader.grade(
            task_dir / "tests", submission, out_dir=out, lock=(task_dir / "solution",)
        )
    except CheckerError as exc:
        raise _fail(f"checker error (nothing was scored): {exc}") from None
    if as_json:
        import json

        print(json.dumps(report.to_json(), indent=2, sort_keys=True))
        return
    _print_report(report)


def _print_report(report: GradeReport) -> None:
    if not report.submission.get("accepted", False):
        _out.print(f"[yellow]submission rejected:[/yellow] {report.submission.get('reason')}")
    table = Table(title="cases", title_justify="left")
    for column, justify in (
        ("case", "right"),
        ("status", "left"),
        ("feasible", "left"),
        ("score", "right"),
        ("wall s", "right"),
        ("detail", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for case in report.cases:
        style = "green" if case.status == grader.OK else "yellow"
        table.add_row(
            str(case.case),
            f"[{style}]{case.status}[/{style}]",
            "yes" if case.feasible else "no",
            f"{case.score:.6f}",
            f"{case.wall_time:.3f}",
            case.detail[:100],
        )
    _out.print(table)
    _out.print(
        f"reward [bold]{report.reward:.6f}[/bold] over {len(report.cases)} cases "
        f"(feasible {report.feasible_fraction:.0%})"
    )


@app.command("verify")
def verify_command(
    task_dir: Path = typer.Argument(..., help="The task bundle to verify."),
) -> None:
    """Re-compute the bundle's hash and run the checker's self-checks; say what failed.

    The self-checks run the task's generator, scorer and validator in this
    process, as the task's verifier would inside its container.
    """
    failed = False
    table = Table(title=str(task_dir), title_justify="left")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail")
    try:
        verified = layout.verify(task_dir)
        table.add_row("bundle layout and hash", "[green]ok[/green]", verified.bundle_hash)
        carried = verified.files["tests/grader.py"].data
        from atoll.checker import grader_source

        if carried != grader_source():
            table.add_row(
                "grader is this version's",
                "[yellow]differs[/yellow]",
                "tests/grader.py is not the installed grader (an older or newer atoll wrote it)",
            )
    except (layout.LayoutError, OSError) as exc:
        failed = True
        table.add_row("bundle layout and hash", "[red]FAILED[/red]", str(exc))
    if (task_dir / "tests").is_dir() and not (task_dir / "tests").is_symlink():
        report = grader.self_check(task_dir / "tests")
        for check in report.checks:
            result = "[green]ok[/green]" if check.ok else "[red]FAILED[/red]"
            table.add_row(check.name, result, check.detail)
        failed = failed or not report.ok
    else:
        failed = True
        table.add_row("self-checks", "[red]FAILED[/red]", "the task has no tests/ directory")
    _out.print(table)
    if failed:
        raise typer.Exit(1)
    _out.print("[green]verified[/green]")
