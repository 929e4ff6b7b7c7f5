"""`atoll plugins list`: what every installed plugin adds, Harbor's job plugins, and every command's origin.

It stands in for Harbor's own `plugins list` (which shows only the
`harbor.plugins` job plugins): those are listed here too, beside what the atoll
plugins register and Harbor's own commands, so that one listing says where
every `atoll` command comes from. The default table fits 80 columns;
`--wide` adds versions, targets and requirements, `--json` gives every field.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
from dataclasses import asdict
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from atoll.core.harbor_commands import harbor_commands
from atoll.core.records import Kind
from atoll.core.registry import harbor_plugins, load

app = typer.Typer(
    help="List installed atoll plugins, Harbor job plugins and where each command comes from.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

HARBOR = "harbor"


@app.callback()
def _group() -> None:
    """List installed atoll plugins, Harbor job plugins and where each command comes from."""


@app.command("list")
def list_plugins(
    kind: Kind | None = typer.Option(None, "--kind", "-k", help="Only records of this kind."),
    wide: bool = typer.Option(
        False, "--wide", "-w", help="Every column (version, target, requirements), wrapped."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List every registration and command: name, kind, where it comes from, what it does."""
    rows = listing(kind)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    console = Console(soft_wrap=False)
    if wide:
        console.print(_wide_table(rows))
        return
    for line in _compact_lines(rows, console.width):
        console.print(line, no_wrap=True, overflow="ellipsis")


def listing(kind: Kind | None = None) -> list[dict[str, Any]]:
    """One row per atoll registration, `harbor.plugins` job plugin and Harbor command."""
    registry = load()
    records = registry.of_kind(kind) if kind else registry.all()
    rows = [
        {
            "name": r.name,
            "kind": r.kind.value,
            "distribution": r.distribution,
            "version": r.version,
            "target": r.target,
            "summary": r.summary,
            "source": "atoll",
            "requires": list(r.requires),
            **(
                {"job_plugins": list(r.needed_job_plugins)}
                if r.kind in (Kind.AGENT, Kind.TASK, Kind.SCORER)
                else {}
            ),
            **({"task_scorer": r.task_scorer} if r.task_scorer is not None else {}),
            **({"stack": asdict(r.stack)} if r.stack is not None else {}),
            **({"dynamic": True} if r.dynamic else {}),
            **({"extends_harbor": r.extends_harbor} if r.kind is Kind.COMMAND else {}),
        }
        for r in records
    ]
    if kind in (None, Kind.JOB_PLUGIN):
        atoll_targets = {(r.name, r.target) for r in registry.of_kind(Kind.JOB_PLUGIN)}
        rows += [
            {
                "name": p.name,
                "kind": Kind.JOB_PLUGIN.value,
                "distribution": p.distribution,
                "version": p.version,
                "target": p.target,
                "summary": "Harbor job plugin (harbor.plugins)",
                "source": "harbor.plugins",
                "requires": [],
            }
            for p in harbor_plugins()
            if (p.name, p.target) not in atoll_targets
        ]
    if kind in (None, Kind.COMMAND):
        ours = {r.name for r in registry.of_kind(Kind.COMMAND)}
        version = _harbor_version()
        rows += [
            {
                "name": name,
                "kind": Kind.COMMAND.value,
                "distribution": HARBOR,
                "version": version,
                "target": f"harbor {name}",
                "summary": str(command["summary"]),
                "source": HARBOR,
                "requires": [],
                "extends_harbor": False,
            }
            for name, command in sorted(harbor_commands().items())
            if name not in ours and not command["hidden"]
        ]
    return rows


def _harbor_version() -> str:
    try:
        return metadata.version(HARBOR)
    except metadata.PackageNotFoundError:
        return ""


def _origin(row: dict[str, Any]) -> str:
    if row.get("extends_harbor"):
        return f"{row['distribution']} + harbor"
    return str(row["distribution"])


def _compact_lines(rows: list[dict[str, Any]], width: int) -> list[Text]:
    """One line per entry, under the distribution it comes from; summaries cut to the width.

    A command that extends Harbor's command of the same name is marked `+harbor`.
    """
    names = [_name(r) for r in rows]
    name_width = max(len("Name"), *map(len, names))
    kind_width = max(len("Kind"), *(len(r["kind"]) for r in rows))
    summary_width = max(12, width - 2 - name_width - 2 - kind_width - 2)

    def line(name: str, kind: str, summary: str) -> Text:
        if len(summary) > summary_width:
            summary = summary[: summary_width - 1] + "…"
        return Text(f"  {name:<{name_width}}  {kind:<{kind_width}}  {summary}".rstrip())

    lines = [Text("atoll plugins", style="bold"), line("Name", "Kind", "Summary")]
    groups: dict[tuple[str, str], list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault((row["distribution"], row["version"]), []).append(index)
    for (distribution, version), members in groups.items():
        header = Text(distribution, style="bold")
        if version:
            header.append(f" {version}")
        header.truncate(width)
        lines.append(header)
        lines += [line(names[i], rows[i]["kind"], rows[i]["summary"]) for i in members]
    return lines


def _name(row: dict[str, Any]) -> str:
    return f"{row['name']} +harbor" if row.get("extends_harbor") else row["name"]


def _wide_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="atoll plugins", show_lines=False)
    for column in ("Name", "Kind", "From", "Version", "Target", "Requires", "Summary"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            row["name"],
            row["kind"],
            _origin(row),
            row["version"],
            row["target"],
            ", ".join(row["requires"]) or "-",
            row["summary"],
        )
    return table
