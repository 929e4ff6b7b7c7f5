"""`atoll judge`: serve the embedded judge, or score one program by hand.

`score` runs the same engine as the server, in-process, and prints every
case, so that someone iterating on a packer sees why each case lost points.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from atoll.judge.embedded import JudgeSetup, serve
from atoll.judge.engine import JudgeInfrastructureError, UnknownProblem
from atoll.judge.judge_socket import SOCKET_DIR_ENV, SocketDirError
from atoll.judge.problems import ProblemError
from atoll.judge.store import StoreBusy

app = typer.Typer(
    name="judge",
    help="The embedded FrontierCS judge: serve it over HTTP, or score a program.",
    no_args_is_help=True,
    add_completion=False,
)

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    _err.print(f"[bold red]error:[/bold red] {message}")
    return typer.Exit(code)


@app.command("serve")
def serve_command(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8081, help="Port to listen on."),
    problems: Path | None = typer.Option(
        None, help="Directory of problem directories (default: the problems shipped with atoll)."
    ),
    workers: int | None = typer.Option(
        None, min=1, help="Test cases run in parallel (default: every core)."
    ),
    state_dir: Path | None = typer.Option(
        None, help="Where results (SQLite) and compiled binaries are kept."
    ),
    max_queue: int = typer.Option(64, min=1, help="Submissions waiting before /submit says 503."),
    socket_dir: Path | None = typer.Option(
        None,
        envvar=SOCKET_DIR_ENV,
        help="Directory for the judge's unix socket, which trials mount "
        "(default: a fresh one under the temporary directory, removed at exit).",
    ),
) -> None:
    """Serve /health, /problems, /problem/{pid}/statement, /submit and /result/{sid}.

    The judge listens on HOST:PORT and on SOCKET_DIR/judge.sock; a task whose
    verifier has no network (polyomino_packing) reaches it through the socket,
    so export the FRONTIERCS_JUDGE_SOCKET_DIR line it prints before `harbor run`.
    """
    setup = JudgeSetup(problems, state_dir, workers, max_queue)
    try:
        serve(host, port, setup, socket_dir, announce=_err.print)
    except (ProblemError, JudgeInfrastructureError, StoreBusy, SocketDirError) as exc:
        raise _fail(str(exc)) from None


@app.command("score")
def score_command(
    file: Path = typer.Argument(..., help="C++ source of the program to score."),
    problem: str = typer.Option("0", help="Problem id."),
    problems: Path | None = typer.Option(None, help="Directory of problem directories."),
    workers: int | None = typer.Option(None, min=1, help="Cases run in parallel."),
    state_dir: Path | None = typer.Option(None, help="Where compiled binaries are cached."),
) -> None:
    """Score a local program and print the per-case table and the total."""
    try:
        source = file.read_bytes()
    except OSError as exc:
        raise _fail(f"cannot read {file}: {exc.strerror}") from None
    try:
        engine = JudgeSetup(problems, state_dir, workers).engine()
        result = engine.judge(problem, source)
    except (ProblemError, JudgeInfrastructureError, UnknownProblem) as exc:
        raise _fail(str(exc).strip("'\"")) from None
    console = Console(highlight=False)
    if result["status"] != "done":
        console.print(f"[bold red]{result.get('error', 'invalid submission')}[/bold red]")
        console.print("Score: 0 (invalid candidate)")
        raise typer.Exit(1)
    table = Table(title=f"{file.name} on problem {problem}")
    for column, justify in (
        ("case", "right"),
        ("status", "left"),
        ("ratio", "right"),
        ("cpu s", "right"),
        ("MiB", "right"),
        ("message", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for case in result["cases"]:
        style = "green" if case["ok"] else "red"
        table.add_row(
            str(case["case"]),
            f"[{style}]{case['status']}[/{style}]",
            f"{case['scoreRatio']:.9f}",
            f"{case['time'] / 1e9:.3f}",
            f"{case['memory'] / 2**20:.1f}",
            case["msg"][:60],
        )
    console.print(table)
    judge = result["judge"]
    compiled = "cached" if judge["compileCached"] else f"{judge['compileSeconds']:.2f} s"
    console.print(f"compile: {compiled}; judged in {judge['seconds']:.2f} s")
    console.print(f"[bold]Score: {result['score']:.6f}[/bold] (100 x mean ratio)")
