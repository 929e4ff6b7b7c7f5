"""`atoll guidance explore STATE_DIR [--out FILE.html]`: a Guidance-TTT run as one HTML page.

The page is written from the state directory alone (read without taking the
run's lock, so a running run goes on undisturbed), with the values of the
environment's credential variables redacted wherever they would appear. Bad
input is one error line and exit status 2; nothing is written then.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import typer
from rich.console import Console

# What the command needs is imported when it runs: `atoll` loads every command's app to start.

app = typer.Typer(
    help="Guidance-TTT runs: look at what a search found.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_err = Console(stderr=True, highlight=False, soft_wrap=True)
_out = Console(highlight=False, soft_wrap=True)


@app.callback()
def _group() -> None:
    """Guidance-TTT runs: look at what a search found."""


def render_run(state_dir: Path, environ: Mapping[str, str]) -> tuple[str, str]:
    """The run's id and its explorer page, credentials of `environ` redacted."""
    from atoll.guidance_ttt.explore.page import render
    from atoll.guidance_ttt.explore.view import run_view
    from atoll.guidance_ttt.redaction import redact, secret_values
    from atoll.guidance_ttt.state.run_history import read_history

    history = read_history(state_dir)
    view = redact(run_view(history), secret_values(environ))
    return history.saved.run_id, render(view)


@app.command("explore")
def explore(
    state_dir: Path = typer.Argument(..., help="The run's state directory (its `state_dir`)."),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="The HTML file to write \\[default: guidance-explorer-<run id>.html here].",
    ),
) -> None:
    """Write one self-contained HTML page that explores a run: scores, archive tree, rollouts."""
    from atoll.core.durable import atomic_write_text
    from atoll.guidance_ttt.state.run_history import HistoryError

    if not state_dir.is_dir():
        _fail(f"{state_dir} is not a directory")
    try:
        run_id, page = render_run(state_dir, os.environ)
    except HistoryError as exc:
        _fail(str(exc))
    target = out if out is not None else Path(f"guidance-explorer-{run_id}.html")
    try:
        atomic_write_text(target, page)
    except OSError as exc:
        _fail(f"cannot write {target}: {exc}")
    _out.print(f"wrote {target} (run {run_id}, {len(page.encode('utf-8')):,} bytes)")


def _fail(message: str) -> None:
    _err.print(f"error: {message}", markup=False)
    raise typer.Exit(2)
