"""`atoll docker up|status|down`: the private engine as a command for users and CI.

Progress goes to stderr so that `eval "$(atoll docker up --print-env)"` works.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from atoll.core import run_lock
from atoll.core.docker_engine import base_image, compose, daemon, egress_sidecar
from atoll.core.docker_engine.errors import EngineError
from atoll.core.docker_engine.paths import BASE_IMAGE, RUN_DIR_ENV, STATE_DIR_ENV, EnginePaths

app = typer.Typer(
    help="A private Docker engine on its own socket, with Compose, the atoll base image "
    "and Harbor's egress sidecar.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_err = Console(stderr=True, highlight=False, soft_wrap=True)
_out = Console(highlight=False, soft_wrap=True)

STATE_OPTION = typer.Option(
    None,
    "--state-dir",
    envvar=STATE_DIR_ENV,
    help="Durable data: images, cached base rootfs, dockerd.log \\[default: docker/ in atoll's "
    "data directory: $ATOLL_DATA_DIR, else $XDG_DATA_HOME/atoll, else ~/.local/share/atoll].",
)
RUN_OPTION = typer.Option(
    None,
    "--run-dir",
    envvar=RUN_DIR_ENV,
    help="Socket, exec-root and pidfile; keep it short \\[default: /tmp/atoll-docker-<uid>].",
)


@app.callback()
def _group() -> None:
    """A private Docker engine on its own socket, with Compose, the base image and sidecar."""


def _paths(state_dir: Path | None, run_dir: Path | None) -> EnginePaths:
    try:
        return EnginePaths.from_options(state_dir, run_dir)
    except EngineError as exc:
        _fail(exc)
        raise AssertionError("unreachable") from exc


def _fail(exc: Exception) -> None:
    _err.print(f"[bold red]error:[/bold red] {exc}")
    raise typer.Exit(1)


def _client(paths: EnginePaths, timeout: int = 600) -> Any:
    import docker

    return docker.DockerClient(base_url=paths.docker_host, timeout=timeout, version="auto")


def _lock(paths: EnginePaths) -> run_lock.Lock:
    """One `up` or `down` of this engine at a time; after 15 minutes' wait, a refusal naming who."""
    what = f"the engine in {paths.state_dir}"
    return run_lock.wait(paths.lock_file, timeout=900, what=what, error=EngineError)


@app.command()
def up(
    state_dir: Path | None = STATE_OPTION,
    run_dir: Path | None = RUN_OPTION,
    print_env: bool = typer.Option(
        False, "--print-env", help="Print only `export DOCKER_HOST=...` on stdout, for eval."
    ),
    skip_base_image: bool = typer.Option(
        False,
        "--skip-base-image",
        help=f"Do not build or import {BASE_IMAGE} nor the egress sidecar built from it.",
    ),
    mirror: str | None = typer.Option(
        None, "--mirror", help="Debian mirror for debootstrap \\[default: debootstrap's own]."
    ),
    deadline: float = typer.Option(
        daemon.START_DEADLINE_S, "--deadline", help="Seconds to wait for dockerd to answer."
    ),
) -> None:
    """Start the engine, link Compose, provide the base image and Harbor's egress sidecar.

    Does nothing if all are there.
    """
    paths = _paths(state_dir, run_dir)
    began = time.monotonic()
    changed = False
    try:
        with _lock(paths):
            pid = daemon.owned_pid(paths)
            info = daemon.wait_owned(paths, pid, deadline) if pid else None
            if info is None:
                _err.print(f"starting dockerd on {paths.socket} (data in {paths.data_root}) ...")
                info = daemon.start(paths, deadline_s=deadline)
                _err.print(f"[green]started[/green] dockerd {info.version} (pid {info.pid})")
                changed = True
            else:
                _err.print(f"dockerd {info.version} already running (pid {info.pid})")
            try:
                link = compose.link_compose(paths.compose_dir)
            except EngineError as exc:
                _err.print(f"[yellow]warning:[/yellow] Compose not linked: {exc}")
            else:
                if link.changed:
                    _err.print(f"[green]linked[/green] {link.link} -> {link.binary}")
                    changed = True
                else:
                    _err.print(f"Compose already linked at {link.link}")
            if not skip_base_image:
                client = _client(paths)
                try:
                    image = base_image.ensure_base_image(
                        client, paths, say=lambda msg: _err.print(msg), mirror=mirror
                    )
                    if image.source == "present":
                        _err.print(f"{BASE_IMAGE} already present ({image.image_id})")
                    else:
                        _err.print(
                            f"[green]imported[/green] {BASE_IMAGE} ({image.image_id}) "
                            f"from {image.source}"
                        )
                        changed = True
                    changed = _ensure_sidecar(client) or changed
                finally:
                    client.close()
    except EngineError as exc:
        _fail(exc)
    elapsed = time.monotonic() - began
    summary = "ready" if changed else "nothing to do: engine, Compose and images are up"
    _err.print(f"[bold]{summary}[/bold] ({elapsed:.1f} s)")
    if print_env:
        _out.print(f"export DOCKER_HOST={paths.docker_host}")
    else:
        _err.print("point Docker clients at it with:")
        _out.print(f"export DOCKER_HOST={paths.docker_host}")


def _ensure_sidecar(client: Any) -> bool:
    """Build Harbor's egress sidecar offline if missing; whether anything changed."""
    try:
        sidecar = egress_sidecar.ensure_sidecar_image(client)
    except egress_sidecar.HarborMissing as exc:
        _err.print(f"[yellow]skipped[/yellow] the egress sidecar: {exc}")
        return False
    if sidecar.source == "present":
        _err.print(f"egress sidecar already present ({sidecar.tag})")
        return False
    _err.print(f"[green]built[/green] egress sidecar {sidecar.tag} ({sidecar.image_id})")
    return True


def _sidecar_line(client: Any) -> str:
    try:
        tag = egress_sidecar.sidecar_tag(client)
    except egress_sidecar.HarborMissing as exc:
        return f"skipped: {exc}"
    base_id = base_image.image_id(client)
    found = egress_sidecar.image_fingerprint(client, tag)
    if found is None:
        return f"{tag} [red]missing[/red] (run `atoll docker up`)"
    if base_id is None or found != egress_sidecar.fingerprint(base_id):
        return f"{tag} [yellow]outdated[/yellow] (run `atoll docker up`)"
    return f"{tag} {client.images.get(tag).id}"


@app.command()
def status(
    state_dir: Path | None = STATE_OPTION,
    run_dir: Path | None = RUN_OPTION,
) -> None:
    """Show the engine's pid, socket, version and images; exit 1 if it is not running."""
    paths = _paths(state_dir, run_dir)
    pid = daemon.owned_pid(paths)
    info = daemon.query(paths) if pid else None
    _out.print(f"socket:      {paths.socket}")
    _out.print(f"DOCKER_HOST: {paths.docker_host}")
    _out.print(f"data root:   {paths.data_root}")
    _out.print(f"log:         {paths.log_file}")
    if info is None:
        if pid:
            state = f"pid {pid}, not answering"
        elif daemon.socket_answers(paths.socket):
            state = "not running; a process atoll did not start holds the socket"
        else:
            state = "not running"
        _out.print(f"engine:      [red]{state}[/red]")
        raise typer.Exit(1)
    _out.print(f"engine:      [green]running[/green] pid {pid}, dockerd {info.version}")
    client = _client(paths, timeout=10)
    try:
        found = base_image.image_id(client)
        recipe = base_image.image_recipe(client)
        sidecar = _sidecar_line(client)
    finally:
        client.close()
    record = base_image.read_record(paths) or {}
    cached = "cached" if base_image.tarball(paths).is_file() else "not cached"
    contents = ", ".join(base_image.PACKAGES)
    if found is not None and recipe != base_image.RECIPE:
        contents = f"[yellow]an older package list[/yellow], not {contents}; run `atoll docker up`"
    _out.print(
        f"base image:  {BASE_IMAGE} {found or '[red]missing[/red]'} "
        f"({contents}; rootfs {base_image.RECIPE} {cached})"
    )
    if record.get("image_id") and record.get("image_id") != found:
        _out.print(f"recorded:    {record['image_id']} (differs from the engine's)")
    _out.print(f"sidecar:     {sidecar}")


@app.command()
def down(
    state_dir: Path | None = STATE_OPTION,
    run_dir: Path | None = RUN_OPTION,
) -> None:
    """Stop the engine that `atoll docker up` started (by its pidfile), and nothing else."""
    paths = _paths(state_dir, run_dir)
    try:
        with _lock(paths):
            pid = daemon.stop(paths)
    except EngineError as exc:
        _fail(exc)
    if pid is None:
        _err.print(f"no engine started by atoll is running on {paths.socket}; nothing to stop")
    else:
        _err.print(f"[green]stopped[/green] dockerd (pid {pid})")
