"""`atoll sandbox check`: run the adversarial conformance suite against a sandbox backend.

A backend is named as `get_backend` knows it (`bwrap`, `docker`, or a name a
distribution registers in the entry-point group `atoll_sandbox_backends`) or by the
import path of a third party's backend (`my_pkg.sandbox:MyBackend`: a
SandboxBackend class, a function returning one, or an instance). Exit status
0 means every check passed (or did not apply), 1 that some check failed, 2
that the backend could not be used at all.
"""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from atoll.core.sandbox import SandboxBackend, SandboxError, backend_names, get_backend
from atoll.core.sandbox.conformance import CHECKS, CheckResult, Outcome, run_suite, select
from atoll.core.sandbox.fusion.command import fusion_serve
from atoll.core.targets import TargetError, import_target

app = typer.Typer(
    help="The sandbox backends: check one against the adversarial conformance suite, "
    "or serve SandboxFusion's run_code API on loopback.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_err = Console(stderr=True, highlight=False, soft_wrap=True)
_out = Console(highlight=False, soft_wrap=True)

_STYLE = {
    Outcome.PASSED: "green",
    Outcome.FAILED: "bold red",
    Outcome.ERROR: "bold red",
    Outcome.SKIPPED: "yellow",
    Outcome.NOT_APPLICABLE: "dim",
}

_LABEL = {**{o: o.value for o in Outcome}, Outcome.NOT_APPLICABLE: "n/a"}


@app.callback()
def _group() -> None:
    """The sandbox backends: check one against the conformance suite, or serve run_code."""


app.command("fusion-serve")(fusion_serve)


def resolve(name: str) -> Any:
    """A backend factory for `name`: a known backend's name or a `module:attr` import path."""
    if name in backend_names():
        return lambda: get_backend(name)
    if ":" not in name:
        known = ", ".join(backend_names())
        raise SandboxError(
            f"unknown sandbox backend {name!r}; known backends: {known}, "
            "or give a third-party backend's import path (module:Class)"
        )
    try:
        target = import_target(name)
    except TargetError as exc:
        raise SandboxError(str(exc)) from exc
    if isinstance(target, SandboxBackend) or callable(target):
        return target
    raise SandboxError(f"{name} is neither a SandboxBackend nor a function that returns one")


def _line(result: CheckResult) -> None:
    style = _STYLE[result.outcome]
    _out.print(
        f"[{style}]{_LABEL[result.outcome]:>7}[/{style}]  {result.name:<30} {result.seconds:6.2f} s"
    )
    if result.detail and result.outcome is not Outcome.PASSED:
        _out.print(f"         {escape(result.detail)}")


def _list_checks() -> None:
    topic = None
    for check in CHECKS:
        if check.topic != topic:
            topic = check.topic
            _out.print(f"[bold]{topic}[/bold]")
        _out.print(f"  {check.name:<30} {escape(check.summary)}")


@app.command("check")
def check_command(
    backend: str = typer.Option(
        "bwrap",
        "--backend",
        "-b",
        help="A backend name (bwrap, docker, or a registered third-party one) "
        "or a third-party backend's import path module:Class.",
    ),
    only: list[str] = typer.Option(
        [], "--only", help="Run just this check (repeatable); see --list."
    ),
    uid: int | None = typer.Option(
        None, "--uid", help="The unused uid checks run as \\[default: one per process]."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    list_checks: bool = typer.Option(False, "--list", help="List the checks and exit."),
) -> None:
    """Run the conformance suite against a backend; exit 1 if any check fails."""
    if list_checks:
        _list_checks()
        return
    started = time.monotonic()
    try:
        checks = select(only)
        factory = resolve(backend)
        report = run_suite(factory, checks, uid=uid, on_result=None if as_json else _line)
    except (SandboxError, ValueError) as exc:
        _err.print(f"[bold red]error:[/bold red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if as_json:
        print(report.dumps())
    else:
        counts = ", ".join(
            f"{n} {outcome.replace('_', ' ')}" for outcome, n in report.counts().items() if n
        )
        verdict = (
            "[green]conforms[/green]" if report.ok else "[bold red]does not conform[/bold red]"
        )
        elapsed = time.monotonic() - started
        _out.print(f"{escape(report.backend)}: {verdict} ({counts}) in {elapsed:.1f} s")
    if not report.ok:
        raise typer.Exit(1)
