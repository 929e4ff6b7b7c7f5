"""`atoll tinker serve`: the server in the foreground until Ctrl-C or SIGTERM.

Once it answers, stdout gets `export ATOLL_SERVE_BASE_URL=...` and `export
ATOLL_SERVE_MODEL=...` (a script can `eval` them, or wait for the line), and
`--ready-file` is written atomically; stopping the command stops the server
and everything it started.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from atoll.core import process_group
from atoll.core.durable import atomic_write_json
from atoll.pi_train import env as managed_env
from atoll.pi_train.serving import serve


def default_tinker_url() -> str:
    from atoll.pi_train.training.run import default_base_url

    return default_base_url()


def resolved_base_model(base_model: str) -> str:
    return str(Path(base_model).resolve()) if Path(base_model).is_dir() else base_model


def check_model_path(model_path: str | None, state_path: str | None) -> None:
    """Checkpoints must be `tinker://` paths, a state only with its sampler path; else one line."""
    for flag, path in (("--model-path", model_path), ("--state-path", state_path)):
        if path is not None and not path.startswith("tinker://"):
            raise ValueError(f"{flag} must be a tinker:// checkpoint path (got {path!r})")
    if state_path is not None and model_path is None:
        raise ValueError("--state-path goes with the --model-path it was saved with")


def run(
    base_model: str,
    model_path: str | None,
    state_path: str | None,
    renderer: str,
    port: int | None,
    tinker_url: str | None,
    served_name: str | None,
    max_tokens: int | None,
    ready_file: Path | None,
    say: Callable[[str], None],
    fail: Callable[[str], None],
) -> None:
    from atoll.pi_train.local.server import free_port

    try:
        check_model_path(model_path, state_path)
    except ValueError as exc:
        fail(str(exc))
    spec = serve.ServeSpec(
        base_model=resolved_base_model(base_model),
        renderer=renderer,
        tinker_url=tinker_url or default_tinker_url(),
        port=port or free_port(),
        model_path=model_path,
        served_name=served_name,
        max_tokens=max_tokens,
        state_path=state_path,
    )
    log = Path(managed_env.cache_root()) / "serve" / f"serve-{spec.port}.log"
    # A token in the caller's environment is required of every request; none: no token.
    key = os.environ.get(serve.SERVE_KEY_VARIABLE) or None
    try:
        # SIGTERM unwinds as Ctrl-C does; either way the owner stops the server's whole group.
        with process_group.Owner(serve.STOP_GRACE_S, interrupt=True) as owner:
            _serve(spec, log, key, ready_file, owner, say, fail)
    except KeyboardInterrupt:
        say("stopped the server")
        sys.exit(0)
    finally:
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)


def _serve(
    spec: serve.ServeSpec,
    log: Path,
    key: str | None,
    ready_file: Path | None,
    owner: process_group.Owner,
    say: Callable[[str], None],
    fail: Callable[[str], None],
) -> None:
    """Start the server, announce it once it answers, and wait: it ends only by a signal."""
    try:
        process = serve.start(spec, log, say, owner, caller_key=key)
        serve.wait_ready(process, spec, log, key)
    except (serve.ServeError, managed_env.EnvironmentUnavailable) as exc:
        fail(str(exc))
        return
    if ready_file is not None:
        atomic_write_json(
            ready_file,
            {"base_url": spec.base_url, "model": spec.name, "pid": os.getpid()},
            make_parents=True,
        )
    say(f"serving {spec.name} at {spec.base_url} (pid {process.pid}; log {log})")
    print(spec.exports(), flush=True)
    process.wait()
    fail(f"the server exited (status {process.returncode}); see {log}")
