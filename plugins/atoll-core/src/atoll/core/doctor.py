"""`atoll doctor`: what this machine has for each plugin, and how to fix what is missing."""

from __future__ import annotations

import importlib.metadata as metadata
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

import typer
from rich.console import Console
from rich.table import Table

from atoll.core.records import Kind, Registration
from atoll.core.registry import load

DEFAULT_REEF_URL = "http://127.0.0.1:8900"


@dataclass(frozen=True)
class Finding:
    requirement: str
    ok: bool
    detail: str
    fix: str


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
    url = os.environ.get("REEF_URL", DEFAULT_REEF_URL).rstrip("/")
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=3) as response:
            ok = response.status == 200
    except OSError as exc:
        has_cli = shutil.which("reef") is not None
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


CHECKS: dict[str, Callable[[], Finding]] = {
    "python": check_python,
    "harbor": check_harbor,
    "docker": check_docker,
    "bwrap": check_bwrap,
    "g++": check_gxx,
    "git-lfs": check_git_lfs,
    "reef": check_reef,
    "gpu": check_gpu,
}


def plugin_checks() -> dict[str, Callable[[], Finding]]:
    """Checks that installed plugins register (`atoll_doctor_checks`), imported when run."""
    return {record.name: _plugin_check(record) for record in load().of_kind(Kind.CHECK)}


def _plugin_check(record: Registration) -> Callable[[], Finding]:
    def check() -> Finding:
        from atoll.core.targets import import_target

        try:
            found = import_target(record.target)()
        except Exception as exc:  # a broken check must not hide the others
            return Finding(record.name, False, f"the check failed: {exc}", record.summary)
        if not isinstance(found, Finding):
            return Finding(record.name, False, f"{record.target} returned no Finding", "")
        return found

    return check


def all_checks() -> dict[str, Callable[[], Finding]]:
    return {**CHECKS, **plugin_checks()}


def needed_by() -> dict[str, list[str]]:
    """For each requirement, the installed plugins whose registrations declare it."""
    users: dict[str, set[str]] = {key: set() for key in all_checks()}
    for record in load().all():
        if record.kind is Kind.CHECK:
            continue
        for requirement in record.requires:
            users.setdefault(requirement, set()).add(f"{record.name} ({record.kind.value})")
    for key in ("python", "harbor"):
        users[key].add("everything")
    return {key: sorted(value) for key, value in users.items()}


def doctor(
    only: list[str] | None = typer.Option(
        None, "--only", help="Check only these requirements (repeatable)."
    ),
) -> None:
    """Show what this machine has for each installed plugin, with the fix for each gap."""
    users = needed_by()
    checks = all_checks()
    selected = only or list(checks)
    unknown = [name for name in selected if name not in checks]
    if unknown:
        raise typer.BadParameter(f"unknown requirement {unknown[0]!r}; known: {', '.join(checks)}")
    table = Table(title="atoll doctor")
    for column in ("Requirement", "Status", "Found", "Needed by", "Fix"):
        table.add_column(column, overflow="fold")
    for name in selected:
        finding = checks[name]()
        status = "[green]ok[/green]" if finding.ok else "[red]missing[/red]"
        table.add_row(
            name, status, finding.detail, ", ".join(users.get(name, [])) or "-", finding.fix
        )
    Console().print(table)


doctor_app = typer.Typer(
    add_completion=False, context_settings={"help_option_names": ["-h", "--help"]}
)
doctor_app.command(name="doctor")(doctor)
