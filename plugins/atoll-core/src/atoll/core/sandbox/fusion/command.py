"""`atoll sandbox fusion-serve`: the SandboxFusion-compatible sandbox, in the foreground."""

from __future__ import annotations

import logging

import typer
from rich.console import Console
from rich.markup import escape

from atoll.core.sandbox.factory import get_backend
from atoll.core.sandbox.fusion.runner import RUNTIMES
from atoll.core.sandbox.fusion.server import DEFAULT_PORT, FusionServer, default_workers
from atoll.core.sandbox.spec import SandboxError
from atoll.core.termination import sigterm_unwinds

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def fusion_serve(
    port: int = typer.Option(
        DEFAULT_PORT, "--port", "-p", min=0, max=65535, help="Port on 127.0.0.1 (0: a free one)."
    ),
    workers: int | None = typer.Option(
        None, "--workers", min=1, help="Programs run at once (default: one per core)."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every request."),
) -> None:
    """Serve SandboxFusion's run_code API on 127.0.0.1, running code in atoll's sandbox."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING)
    try:
        backend = get_backend("bwrap")
        backend.check()
        server = FusionServer(port, backend=backend, workers=workers or default_workers())
    except SandboxError as exc:
        _err.print(f"[bold red]error:[/bold red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except OSError as exc:
        _err.print(
            f"[bold red]error:[/bold red] cannot listen on 127.0.0.1:{port}: "
            f"{escape(exc.strerror or str(exc))}; pick another --port"
        )
        raise typer.Exit(2) from None
    languages = ", ".join(sorted(RUNTIMES))
    print(f"SandboxFusion-compatible sandbox on {server.url} ({languages})", flush=True)
    print(f"export SANDBOX_FUSION_ENDPOINT={server.url}", flush=True)
    try:
        with sigterm_unwinds(interrupt=True):
            server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
