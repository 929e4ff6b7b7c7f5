"""The managed Python 3.11 environment holding the Tinker trainer and the SkyRL tx server.

tinker-cookbook declares torch, and on PyPI the Linux torch for Python 3.12 is
the CUDA build (gigabytes); SkyRL tx and its JAX stack are large too. So none
of it is a dependency of atoll-pi-train: `ensure()` builds one Python 3.11
environment with uv from `managed/requirements.txt`, once, under atoll's
cache, and the 3.12 commands launch its interpreter. pip's `find-links`
setting (`PIP_FIND_LINKS`) is honoured, so a local folder holding a CPU torch
wheel is searched first.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from atoll.core import run_lock
from atoll.core.durable import atomic_replace, atomic_write_json
from atoll.core.executables import find_executable
from atoll.core.portable import chat_stream
from atoll.core.user_dirs import cache_dir

PYTHON_VERSION = "3.11"
READY_FILE = "atoll-ready.json"


class EnvironmentUnavailable(Exception):
    """The managed environment cannot be built or run; the message says what to do."""


@dataclass(frozen=True)
class ManagedEnv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.root / "bin"


def requirements_text() -> str:
    return (resources.files("atoll.pi_train") / "managed" / "requirements.txt").read_text()


def requirements() -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in requirements_text().splitlines())
    return [line for line in lines if line]


def cache_root() -> Path:
    """`$ATOLL_TINKER_HOME`, else `tinker` in atoll's cache directory (~/.cache/atoll/tinker)."""
    explicit = os.environ.get("ATOLL_TINKER_HOME")
    if explicit:
        return Path(explicit)
    return cache_dir("tinker")


def env_dir(root: Path | None = None) -> Path:
    """One directory per requirement set, so a changed pin never reuses a stale environment."""
    digest = hashlib.sha256(f"{PYTHON_VERSION}\n{requirements_text()}".encode()).hexdigest()
    return (root or cache_root()) / f"env-py{PYTHON_VERSION}-{digest[:12]}"


def installed(root: Path | None = None) -> ManagedEnv | None:
    """The environment if a completed install is there, else None."""
    env = ManagedEnv(env_dir(root))
    if (env.root / READY_FILE).is_file() and env.python.exists():
        return env
    return None


def _find_links() -> list[str]:
    links = os.environ.get("PIP_FIND_LINKS", "").split()
    return [arg for link in links for arg in ("--find-links", link)]


def _uv() -> str:
    uv = find_executable("uv")
    if uv is None:
        raise EnvironmentUnavailable(
            "uv is not on PATH; it builds the managed Tinker environment "
            "(install it: https://docs.astral.sh/uv/)"
        )
    return uv


def ensure(say: Callable[[str], None], root: Path | None = None) -> ManagedEnv:
    """The managed environment, built first if it is not there (minutes the first time)."""
    present = installed(root)
    if present is not None:
        _install_uv_shim(present)
        return present
    target = env_dir(root)
    with run_lock.wait(target.with_name(target.name + ".lock")):
        present = installed(root)
        if present is not None:
            return present
        uv = _uv()
        started = time.monotonic()
        say(f"building the managed Tinker environment (Python {PYTHON_VERSION}) in {target}")
        _run([uv, "venv", "--quiet", "--clear", "--python", PYTHON_VERSION, str(target)])
        env = ManagedEnv(target)
        _run(
            [uv, "pip", "install", "--quiet", "--python", str(env.python)]
            + _find_links()
            + requirements()
        )
        _install_uv_shim(env)
        seconds = round(time.monotonic() - started, 1)
        atomic_write_json(
            target / READY_FILE,
            {"python": PYTHON_VERSION, "requirements": requirements(), "seconds": seconds},
        )
        say(f"managed Tinker environment ready in {seconds} s")
        return env


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise EnvironmentUnavailable(
            f"`{shlex.join(argv[:4])} ...` failed (exit {done.returncode}):\n{tail}"
        )


def _install_uv_shim(env: ManagedEnv) -> None:
    """A `uv` inside the environment's bin that runs its own Python.

    SkyRL tx 0.3.0's API process starts its engine as `uv run --extra tinker
    --extra jax -m tx.tinker.engine ...`, which needs a uv project. The server
    runs with this bin first on PATH, so that call becomes `python -m
    tx.tinker.engine ...` with the environment's interpreter, or `python
    SCRIPT ...` where the server names its own engine script in
    `ATOLL_TINKER_ENGINE` (managed/serve.py does). Written again whenever it
    differs, so that an environment built by an older atoll gets the current one.
    """
    shim = env.bin / "uv"
    text = (
        "#!/bin/sh\n"
        "# Written by atoll-pi-train: `uv run [--extra X]... ARGS` -> this environment's python ARGS\n"
        '[ "$1" = run ] || { echo "this uv only runs the environment\'s python" >&2; exit 2; }\n'
        "shift\n"
        'while [ "$1" = --extra ]; do shift 2; done\n'
        'if [ "$1" = -m ] && [ "$2" = tx.tinker.engine ] && [ -n "$ATOLL_TINKER_ENGINE" ]; then\n'
        f'    shift 2; exec "{env.python}" "$ATOLL_TINKER_ENGINE" "$@"\n'
        "fi\n"
        f'exec "{env.python}" "$@"\n'
    )
    if shim.is_file() and shim.read_text() == text:
        return
    with atomic_replace(shim) as fresh:  # executable before it is in place: servers may be starting
        fresh.write_text(text)
        fresh.chmod(0o755)


def portable_path(environ: Mapping[str, str]) -> str:
    """The PYTHONPATH a managed script runs with: atoll-core's portable modules, then `environ`'s.

    The managed environment has none of atoll installed; the standard-library
    modules atoll-core shares with its scripts (`chat_stream`, which
    `openai_serve` streams with) are imported from their folder in this
    installation, so the server never runs a copy older than the atoll that
    launched it.
    """
    folder = str(Path(chat_stream.__file__).resolve().parent)
    return os.pathsep.join(p for p in (folder, environ.get("PYTHONPATH", "")) if p)


def managed_script(name: str) -> Path:
    """A module of `atoll.pi_train.managed`, as a file the managed interpreter runs."""
    path = Path(str(resources.files("atoll.pi_train") / "managed" / f"{name}.py"))
    if not path.is_file():
        raise EnvironmentUnavailable(f"atoll-pi-train is incomplete: {path.name} is missing")
    return path
