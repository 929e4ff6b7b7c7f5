"""`atoll doctor`: what this machine has for each plugin, and how to fix what is missing."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from atoll.core import reef_env
from atoll.core.executables import find_executable
from atoll.core.records import Kind, Registration
from atoll.core.registry import Registry, load
from atoll.core.targets import import_target


@dataclass(frozen=True)
class Finding:
    requirement: str
    ok: bool
    detail: str
    fix: str
    # A failed check that names something to clean up rather than something missing.
    warning: bool = False


def _run(argv: list[str], timeout: float = 5.0) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else ""


def check_python() -> Finding:
    ok = sys.version_info[:2] == (3, 12)
    return Finding(
        "python",
        ok,
        sys.version.split()[0],
        "" if ok else "use Python 3.12 (Harbor requires it): `uv sync --python 3.12`",
    )


def check_harbor() -> Finding:
    try:
        found = metadata.version("harbor")
    except metadata.PackageNotFoundError:
        return Finding("harbor", False, "not installed", "`pip install 'harbor>=0.20,<0.21'`")
    ok = found.startswith("0.20.")
    return Finding(
        "harbor",
        ok,
        found,
        "" if ok else "install Harbor 0.20.x (Reef pins it): `pip install 'harbor>=0.20,<0.21'`",
    )


def check_docker() -> Finding:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        import docker

        client = docker.DockerClient(base_url=host, timeout=5)
        try:
            version = client.version().get("Version", "?")
            sidecar = _egress_sidecar(client)
        finally:
            client.close()
    except Exception as exc:  # any failure to reach the engine means "not usable"
        return Finding(
            "docker",
            False,
            f"no engine at {host} ({type(exc).__name__})",
            "`atoll docker up`, then export the DOCKER_HOST it prints",
        )
    fix = (
        ""
        if sidecar != "missing"
        else (
            "`atoll docker up` builds it; tasks whose network is not public need it under --env docker"
        )
    )
    return Finding("docker", True, f"engine {version} at {host}; egress sidecar {sidecar}", fix)


def _egress_sidecar(client: object) -> str:
    """Whether the engine has the image Harbor enforces network policies with."""
    from atoll.core.docker_engine import egress_sidecar

    found = egress_sidecar.present(client)
    if found is None:
        return "unknown (Harbor not importable)"
    return "present" if found else "missing"


def _which(requirement: str, executable: str, version_args: list[str], fix: str) -> Finding:
    path = shutil.which(executable)
    if path is None:
        return Finding(requirement, False, "not found on PATH", fix)
    version = _run([path, *version_args]) or path
    return Finding(requirement, True, version, "")


def check_bwrap() -> Finding:
    return _which("bwrap", "bwrap", ["--version"], "`apt-get install -y bubblewrap`")


def check_gxx() -> Finding:
    return _which("g++", "g++", ["--version"], "`apt-get install -y g++`")


def check_git_lfs() -> Finding:
    return _which("git-lfs", "git-lfs", ["version"], "`apt-get install -y git-lfs`")


def check_reef() -> Finding:
    url = reef_env.url()
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=3) as response:
            ok = response.status == 200
    except OSError as exc:
        has_cli = find_executable("reef") is not None
        fix = "`atoll stack up --training off ...`" if has_cli else "`pip install reef-infra`"
        return Finding("reef", False, f"no Reef server at {url} ({exc.__class__.__name__})", fix)
    return Finding("reef", ok, f"Reef server at {url}", "")


def check_gpu() -> Finding:
    out = _run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    if not out:
        return Finding(
            "gpu", False, "no NVIDIA GPU visible", "training needs GPUs; search-only runs do not"
        )
    return Finding("gpu", True, out, "")


# The order core's checks are shown in; plugins' checks follow, by name.
CORE_ORDER = ("python", "harbor", "docker", "bwrap", "g++", "git-lfs", "reef", "gpu")


def checks(registry: Registry | None = None) -> dict[str, Registration]:
    """Every registered check (core's and plugins'), by requirement name, in display order."""
    records = {r.name: r for r in (registry or load()).of_kind(Kind.CHECK)}
    order = [name for name in CORE_ORDER if name in records]
    order += sorted(name for name in records if name not in CORE_ORDER)
    return {name: records[name] for name in order}


def run_check(record: Registration) -> Finding:
    """Run one check; a check that itself fails is reported, never a traceback."""
    try:
        finding = import_target(record.target)()
    except Exception as exc:  # a plugin's broken check must not hide the other rows
        return Finding(record.name, False, f"the check failed: {type(exc).__name__}: {exc}", "")
    if not isinstance(finding, Finding):
        return Finding(record.name, False, f"{record.target} returned no Finding", "")
    return finding


def needed_by(registry: Registry | None = None) -> dict[str, list[str]]:
    """For each requirement, the installed plugins' records that declare it."""
    registry = registry or load()
    users: dict[str, set[str]] = {name: set() for name in checks(registry)}
    for record in registry.all():
        for requirement in record.requires:
            users.setdefault(requirement, set()).add(f"{record.name} ({record.kind.value})")
    for key in ("python", "harbor"):
        users.setdefault(key, set()).add("everything")
    return {key: sorted(value) for key, value in users.items()}


def doctor(
    only: list[str] | None = typer.Option(
        None, "--only", help="Check only these requirements (repeatable)."
    ),
    wide: bool = typer.Option(
        False, "--wide", "-w", help="A table with every column (what needs each), wrapped."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of lines."),
) -> None:
    """Show what this machine has for each installed plugin, with the fix for each gap."""
    rows = report(only)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    console = Console(soft_wrap=False)
    if wide:
        console.print(_wide_table(rows))
        return
    for line in _compact_lines(rows, console.width):
        console.print(line, no_wrap=True, overflow="ellipsis")


def report(only: list[str] | None = None, registry: Registry | None = None) -> list[dict[str, Any]]:
    """One row per requirement: its status, what was found, the fix, and what needs it."""
    registry = registry or load()
    registered = checks(registry)
    users = needed_by(registry)
    # A requirement some plugin declares but no plugin checks is shown too, never dropped.
    names = list(registered) + sorted(set(users) - set(registered))
    selected = only or names
    unknown = [name for name in selected if name not in names]
    if unknown:
        raise typer.BadParameter(f"unknown requirement {unknown[0]!r}; known: {', '.join(names)}")
    rows = []
    for name in selected:
        record = registered.get(name)
        if record is None:
            finding, status = Finding(name, False, "no installed plugin checks it", ""), "unchecked"
        else:
            finding = run_check(record)
            status = _status(finding)
        rows.append(
            {
                "requirement": name,
                "status": status,
                "found": finding.detail,
                "fix": finding.fix,
                "needed_by": users.get(name, []),
            }
        )
    return rows


def _status(finding: Finding) -> str:
    if finding.ok:
        return "ok"
    return "warning" if finding.warning else "missing"


_STYLES = {"ok": "green", "warning": "yellow", "unchecked": "yellow", "missing": "red"}


def _compact_lines(rows: list[dict[str, Any]], width: int) -> list[Text]:
    """One line per requirement, cut to the width: the fix first where something is missing.

    What needs each requirement is in `--wide` and `--json`.
    """
    name_width = max(len("Requirement"), *(len(r["requirement"]) for r in rows))
    status_width = max(len(status) for status in _STYLES)
    rest = max(12, width - 2 - name_width - 2 - status_width - 2)

    def line(name: str, status: str, what: str, style: str | None = None) -> Text:
        if len(what) > rest:
            what = what[: rest - 1] + "…"
        text = Text(f"  {name:<{name_width}}  ")
        text.append(f"{status:<{status_width}}", style=style)
        text.append(f"  {what}".rstrip())
        return text

    lines = [Text("atoll doctor", style="bold"), line("Requirement", "Status", "Found / fix")]
    for row in rows:
        what = (
            row["found"]
            if row["status"] == "ok" or not row["fix"]
            else (f"fix: {row['fix']} ({row['found']})")
        )
        lines.append(line(row["requirement"], row["status"], what, _STYLES[row["status"]]))
    return lines


def _wide_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="atoll doctor")
    for column in ("Requirement", "Status", "Found", "Needed by", "Fix"):
        table.add_column(column, overflow="fold")
    for row in rows:
        style = _STYLES[row["status"]]
        table.add_row(
            row["requirement"],
            f"[{style}]{row['status']}[/{style}]",
            row["found"],
            ", ".join(row["needed_by"]) or "-",
            row["fix"],
        )
    return table


doctor_app = typer.Typer(
    add_completion=False, context_settings={"help_option_names": ["-h", "--help"]}
)
doctor_app.command(name="doctor")(doctor)
