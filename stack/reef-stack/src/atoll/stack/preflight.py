"""Checks made before anything starts, each failing with one line that names the fix.

Starting Reef and finding out a minute later, from a log, that `git-lfs` is
missing or that the checkout has no `tttd` recipe wastes GPU time; these
checks run first and cost milliseconds.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from atoll.core import reef_env
from atoll.core.executables import find_executable
from atoll.stack.errors import StackError

TTTD_RECIPE = Path("recipes") / "tttd" / "recipe.py"


def reef_executable(env: Mapping[str, str]) -> str:
    """The `reef` command on the PATH of `env`, or beside the interpreter running atoll."""
    found = find_executable("reef", path=env.get("PATH", ""))
    if found is None:
        raise StackError(
            "no `reef` executable on PATH or beside this Python; install the Reef server "
            "(pip install reef-infra) in the environment that runs atoll"
        )
    return found


def require_git_lfs(env: Mapping[str, str]) -> None:
    if shutil.which("git-lfs", path=env.get("PATH", "")) is None:
        raise StackError(
            "git-lfs is not installed; Reef's artifact store needs it (apt-get install git-lfs)"
        )


def reef_home(option: str | None, env: Mapping[str, str]) -> Path:
    """The Reef source checkout whose `recipes/` cookbook holds the tttd recipe.

    `--reef-home` (`option`), else `REEF_HOME` in `env`.
    """
    name = reef_env.HOME_ENV
    value = option or env.get(name)
    if not value:
        raise StackError(
            f"{name} is not set; point it at a Reef source checkout (it holds recipes/tttd, "
            "which the reef-infra wheel lacks)"
        )
    home = Path(value).expanduser().resolve()
    if not home.is_dir():
        raise StackError(f"{name}={value} is not a directory; point it at a Reef source checkout")
    if not (home / TTTD_RECIPE).is_file():
        raise StackError(
            f"{name}={value} has no tttd recipe ({TTTD_RECIPE} is missing); "
            f"point {name} at a Reef source checkout"
        )
    return home


#: What Reef's driver and workers import for the method: the recipe (with the checkout's) and the hooks.
METHOD_MODULES = ("atoll.guidance_ttt.tttd.recipe", "atoll.guidance_ttt.tttd.slime.objective")


def method_importable(reef: str, home: Path, env: Mapping[str, str]) -> None:
    """The method's recipe and worker hooks import in the Python that runs `reef`, with the checkout.

    Reef's training driver and its Megatron workers import them by the names
    serve.yaml gives; a missing package would otherwise surface minutes
    later, from a worker's log, after the GPUs were taken.
    """
    beside = Path(reef).parent / "python"
    python = str(beside) if beside.exists() else sys.executable
    search = os.pathsep.join(p for p in (str(home), env.get("PYTHONPATH", "")) if p)
    code = "import importlib, sys\nfor name in sys.argv[1:]: importlib.import_module(name)"
    try:
        done = subprocess.run(
            [python, "-c", code, *METHOD_MODULES],
            env={**env, "PYTHONPATH": search}, capture_output=True, text=True, timeout=300,
            check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError(
            f"could not run Reef's Python ({python}) to check the method: {exc}"
        ) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        reason = lines[-1].strip() if lines else f"exit status {done.returncode}"
        raise StackError(
            f"Reef's Python ({python}) cannot import the method's recipe and hooks: {reason}; "
            f"install atoll-guidance-ttt[reef] there, with {reef_env.HOME_ENV} at the Reef checkout "
            "that matches its reef-infra"
        )


def port_free(host: str, port: int) -> bool:
    """Whether `port` can be bound on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def gpu_count(env: Mapping[str, str]) -> int:
    """How many GPUs `nvidia-smi` lists (0 without a driver)."""
    smi = shutil.which("nvidia-smi", path=env.get("PATH", ""))
    if smi is None:
        return 0
    try:
        out = subprocess.run(
            [smi, "-L"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))
