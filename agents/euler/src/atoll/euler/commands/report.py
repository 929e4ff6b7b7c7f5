"""`atoll euler report`: a Markdown summary and plots recomputed from raw rows."""

from __future__ import annotations

from pathlib import Path

import typer

from atoll.euler.commands.common import console, fail, say


def report_command(
    paths: list[Path] = typer.Argument(
        ..., metavar="ROWS...", help="rows.jsonl files, or directories holding them."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Where report.md and the plots go (default: beside the first ROWS)."
    ),
    ks: str = typer.Option("1,5,10", "--k", help="pass@k for these k."),
    title: str = typer.Option("Pi on Project Euler", "--title", help="The report's title."),
) -> None:
    """Markdown summary (pass fraction, pass@k, execution rate, median latency by problem,
    language, approach and phase) and PNG plots, recomputed from raw rows."""
    from atoll.euler import report, rows

    try:
        k_values = tuple(sorted({int(k) for k in ks.split(",") if k.strip()}))
        if not k_values or min(k_values) < 1:
            raise ValueError
    except ValueError:
        raise fail(f"--k {ks!r}: positive integers like 1,5,10") from None
    warnings: list[str] = []
    try:
        data = rows.read_all(paths, warnings=warnings)
    except rows.RowsError as exc:
        raise fail(str(exc)) from None
    for warning in warnings:
        say(f"warning: {warning}")
    data = rows.latest_per_attempt(data)
    target = out or (paths[0] if paths[0].is_dir() else paths[0].parent) / "report"
    text = report.write(data, target, title=title, ks=k_values, name="report.md")
    console.print(text, markup=False)
    say(f"written: {target / 'report.md'} and its plots")
