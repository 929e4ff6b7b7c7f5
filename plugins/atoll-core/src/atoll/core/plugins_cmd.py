"""`atoll plugins list`: what every installed plugin adds, and Harbor's job plugins."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from atoll.core.records import Kind
from atoll.core.registry import harbor_plugins, load

app = typer.Typer(
    help="List installed atoll plugins and Harbor job plugins.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _group() -> None:
    """List installed atoll plugins and Harbor job plugins."""


@app.command("list")
def list_plugins(
    kind: Kind | None = typer.Option(None, "--kind", "-k", help="Only records of this kind."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List every registration: name, kind, distribution, version, target, summary."""
    registry = load()
    records = registry.of_kind(kind) if kind else registry.all()
    harbor = harbor_plugins() if kind in (None, Kind.JOB_PLUGIN) else []
    atoll_targets = {(r.name, r.target) for r in registry.of_kind(Kind.JOB_PLUGIN)}
    rows = [
        {
            "name": r.name,
            "kind": r.kind.value,
            "distribution": r.distribution,
            "version": r.version,
            "target": r.target,
            "summary": r.summary,
            "source": "atoll",
            **({"job_plugins": list(r.job_plugins)} if r.kind in (Kind.AGENT, Kind.TASK) else {}),
            **({"dynamic": True} if r.dynamic else {}),
        }
        for r in records
    ]
    rows += [
        {
            "name": p.name,
            "kind": Kind.JOB_PLUGIN.value,
            "distribution": p.distribution,
            "version": p.version,
            "target": p.target,
            "summary": "Harbor job plugin (harbor.plugins)",
            "source": "harbor.plugins",
        }
        for p in harbor
        if (p.name, p.target) not in atoll_targets
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="atoll plugins", show_lines=False)
    for column in ("Name", "Kind", "Distribution", "Version", "Target", "Summary"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            row["name"],
            row["kind"],
            row["distribution"],
            row["version"],
            row["target"],
            row["summary"],
        )
    Console(soft_wrap=False).print(table)
