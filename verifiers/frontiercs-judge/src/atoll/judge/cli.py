"""`atoll judge`: serve the embedded judge, score one program by hand, list the problems.

`score` runs the same engine as the server, in-process, and prints every
case, so that someone iterating on a program sees why each case lost points.
`--frontiercs DIR` (or FRONTIERCS_HOME) adds every problem of a FrontierCS
checkout; `problems` says which loaded and why the others did not.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from atoll.core.sizes import MiB
from atoll.judge.checkout import HOME_ENV
from atoll.judge.judge_socket import SOCKET_DIR_ENV

if TYPE_CHECKING:
    from atoll.judge.checkout import ProblemSet
    from atoll.judge.embedded import JudgeSetup
    from atoll.judge.problems import Problem

# The judge itself (engine, HTTP server) is imported by the commands that run it,
# so that `atoll --help` and `atoll judge --help` do not load it.

app = typer.Typer(
    name="judge",
    help="The embedded FrontierCS judge: serve it over HTTP, or score a program.",
    no_args_is_help=True,
    add_completion=False,
)

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    # The message is text, not markup: `[ray]` in an install hint must print as written.
    _err.print(f"[bold red]error:[/bold red] {escape(message)}")
    return typer.Exit(code)


def _frontiercs_option() -> object:
    return typer.Option(
        None,
        "--frontiercs",
        envvar=HOME_ENV,
        help="A FrontierCS checkout: serve every problem under its algorithmic/problems too.",
    )


@app.command("serve")
def serve_command(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8081, help="Port to listen on."),
    problems: Path | None = typer.Option(
        None, help="Directory of problem directories (default: the problems shipped with atoll)."
    ),
    workers: int | None = typer.Option(
        None,
        min=1,
        help="Processes kept busy at once (default: every core); a dialogue counts two.",
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
    frontiercs: Path | None = _frontiercs_option(),  # type: ignore[assignment]
    ray: str | None = typer.Option(
        None,
        "--ray",
        help="Judge on a Ray cluster: the address of its head (host:port), or auto for the "
        "cluster this machine belongs to; cases run on its nodes that advertise atoll_judge.",
    ),
) -> None:
    """Serve /health, /problems, /problem/{pid}/statement, /submit and /result/{sid}.

    The judge listens on HOST:PORT and on SOCKET_DIR/judge.sock; a task whose
    verifier has no network (polyomino_packing) reaches it through the socket,
    so export the FRONTIERCS_JUDGE_SOCKET_DIR line it prints before `harbor run`.
    """
    from atoll.judge.embedded import JudgeSetup, serve
    from atoll.judge.engine import JudgeInfrastructureError
    from atoll.judge.judge_socket import SocketDirError
    from atoll.judge.problems import ProblemError
    from atoll.judge.store import StoreBusy

    if ray is not None and workers is not None:
        raise _fail(
            "--workers does not apply with --ray: the worker budget is the atoll_judge "
            "resources of the cluster's nodes"
        )
    setup = JudgeSetup(problems, state_dir, workers, max_queue, frontiercs=frontiercs, ray=ray)
    try:
        serve(host, port, setup, socket_dir, announce=_err.print)
    except (ProblemError, JudgeInfrastructureError, StoreBusy, SocketDirError) as exc:
        raise _fail(str(exc)) from None


@app.command("score")
def score_command(
    file: Path = typer.Argument(..., help="C++ source of the program to score."),
    problem: str = typer.Option("0", help="Problem id."),
    problems: Path | None = typer.Option(None, help="Directory of problem directories."),
    workers: int | None = typer.Option(
        None,
        min=1,
        help="Processes kept busy at once (default: every core); a dialogue counts two.",
    ),
    state_dir: Path | None = typer.Option(None, help="Where compiled binaries are cached."),
    frontiercs: Path | None = _frontiercs_option(),  # type: ignore[assignment]
) -> None:
    """Score a local program and print the per-case table and the total."""
    from atoll.judge.embedded import JudgeSetup
    from atoll.judge.engine import JudgeInfrastructureError, UnknownProblem
    from atoll.judge.problems import ProblemError

    try:
        source = file.read_bytes()
    except OSError as exc:
        raise _fail(f"cannot read {file}: {exc.strerror}") from None
    setup = JudgeSetup(problems, state_dir, workers, frontiercs=frontiercs)
    try:
        found = setup.problem_set()
        if problem not in found.problems and problem in found.failures:
            raise _fail(f"problem {problem} did not load: {found.failures[problem]}")
        engine = setup.engine(found, only=problem)
        try:
            result = engine.judge(problem, source)
        finally:
            engine.close()
    except (ProblemError, JudgeInfrastructureError, UnknownProblem) as exc:
        raise _fail(str(exc).strip("'\"")) from None
    console = Console(highlight=False)
    if result["status"] != "done":
        console.print(f"[bold red]{result.get('error', 'invalid submission')}[/bold red]")
        console.print("Score: 0 (invalid candidate)")
        raise typer.Exit(1)
    table = Table(title=f"{file.name} on problem {problem}", expand=False)
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
            f"{case['memory'] / MiB:.1f}",
            case["msg"][:60],
        )
    console.print(table)
    judge = result["judge"]
    compiled = "cached" if judge["compileCached"] else f"{judge['compileSeconds']:.2f} s"
    console.print(f"compile: {compiled}; judged in {judge['seconds']:.2f} s")
    console.print(f"[bold]Score: {result['score']:.6f}[/bold] (100 x mean ratio)")


@app.command("problems")
def problems_command(
    problems: Path | None = typer.Option(None, help="Directory of problem directories."),
    frontiercs: Path | None = _frontiercs_option(),  # type: ignore[assignment]
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    compile_tools: bool = typer.Option(
        False,
        "--compile",
        help="Also compile every checker and interactor (cached), and report those that fail.",
    ),
    state_dir: Path | None = typer.Option(None, help="Where compiled checkers are cached."),
    workers: int | None = typer.Option(None, min=1, help="Compiles run in parallel."),
) -> None:
    """List the problems the judge would serve, and those of the checkout that did not load."""
    from atoll.judge.embedded import JudgeSetup
    from atoll.judge.problems import ProblemError

    setup = JudgeSetup(problems, state_dir, workers, frontiercs=frontiercs)
    try:
        found = setup.problem_set()
    except ProblemError as exc:
        raise _fail(str(exc)) from None
    failures = dict(found.failures)
    if compile_tools:
        failures.update(_compile_failures(setup, found))
    loaded = [p for pid, p in found.problems.items() if pid not in failures]
    if as_json:
        print(
            json.dumps(
                {
                    "checkout": str(found.checkout.root) if found.checkout else None,
                    "loaded": [p.summary() for p in loaded],
                    "failed": [{"id": pid, "error": why} for pid, why in failures.items()],
                    "shadowed": sorted(found.shadowed),
                },
                indent=2,
            )
        )
        return
    console = Console(highlight=False)
    table = Table(title="problems served")
    for column in ("id", "type", "judged by", "cases", "time", "memory", "title"):
        table.add_column(column, justify="right" if column in ("cases", "time") else "left")
    for p in loaded:
        table.add_row(
            p.id,
            p.mode.value,
            p.judged_by,
            str(len(p.cases)),
            f"{p.limits.cpu_seconds:g} s",
            f"{p.limits.memory_bytes // MiB} MiB",
            p.title[:40],
        )
    console.print(table)
    if failures:
        bad = Table(title="problems that did not load")
        bad.add_column("id")
        bad.add_column("why")
        for pid, why in failures.items():
            bad.add_row(pid, why)
        console.print(bad)
    for pid in sorted(found.shadowed):
        console.print(f"problem {pid}: atoll's own exact checker is used, not the checkout's")
    console.print(f"{len(loaded)} loaded, {len(failures)} did not")


def _compile_failures(setup: JudgeSetup, found: ProblemSet) -> dict[str, str]:
    """Compile every checker and interactor of the checkout; the problems whose tool fails."""
    from atoll.judge.checkout import ProblemSet
    from atoll.judge.embedded import JudgeSetup
    from atoll.judge.engine import JudgeInfrastructureError

    tools = [*found.checkout_problems(), *found.shadowed.values()]
    tools = [p for p in tools if p.tool is not None]
    if not tools:
        return {}
    try:
        engine = JudgeSetup(
            state_dir=setup.state, workers=setup.workers, backend=setup.backend
        ).engine(ProblemSet({}))
    except JudgeInfrastructureError as exc:
        raise _fail(str(exc)) from None
    failed: dict[str, str] = {}

    def attempt(problem: Problem) -> None:
        try:
            engine.compile_tool(problem)
        except JudgeInfrastructureError as exc:
            failed[problem.id] = str(exc).splitlines()[0]

    try:
        with ThreadPoolExecutor(engine.workers) as pool:
            list(pool.map(attempt, tools))
    finally:
        engine.close()
    return dict(sorted(failed.items(), key=lambda item: [p.id for p in tools].index(item[0])))
