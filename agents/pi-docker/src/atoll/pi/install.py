"""The pinned Pi coding agent in atoll's cache, installed with npm from a shipped lockfile.

Pi is the system under test, so which Pi ran must never drift: the plugin
ships a `package.json` naming exactly @mariozechner/pi-coding-agent 0.73.1 and
a `package-lock.json` that pins every transitive dependency by integrity
hash, and `npm ci` installs exactly that (no install scripts run). The
install lands in a directory named by the lockfile's hash, is built in a
temporary sibling and renamed into place, so a reader sees a whole install or
none, and two processes installing at once do it once (`atoll.core.run_lock.wait`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from atoll.core import run_lock
from atoll.core.durable import atomic_write_json
from atoll.core.user_dirs import cache_dir

PI_PACKAGE = "@mariozechner/pi-coding-agent"
PI_VERSION = "0.73.1"
MIN_NODE_MAJOR = 20
HOME_ENV = "ATOLL_PI_HOME"
NODE_ENV = "ATOLL_PI_NODE"
RECORD = "atoll-install.json"
NPM_TIMEOUT_S = 900


class PiUnavailable(RuntimeError):
    """Node.js or the pinned Pi is missing or broken; the message says how to fix it."""


@dataclass(frozen=True)
class Node:
    path: Path
    version: str  # "v20.20.2"

    @property
    def major(self) -> int:
        return int(self.version.lstrip("v").split(".")[0])


@dataclass(frozen=True)
class PiInstall:
    """One installed Pi: where its command line is and what exactly it is."""

    root: Path
    version: str
    lock_sha256: str
    node: Node

    @property
    def package_dir(self) -> Path:
        return self.root / "node_modules" / Path(*PI_PACKAGE.split("/"))

    @property
    def cli(self) -> Path:
        return self.package_dir / "dist" / "cli.js"


def cache_root() -> Path:
    """`$ATOLL_PI_HOME`, else `pi/` in atoll's cache (~/.cache/atoll/pi)."""
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        return Path(explicit).expanduser().absolute()
    return cache_dir("pi")


def _runtime_file(name: str) -> bytes:
    return resources.files("atoll.pi").joinpath("runtime", name).read_bytes()


@functools.cache
def lock_sha256() -> str:
    """The hash of the shipped package.json and lockfile: what an install is of."""
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update(name.encode() + b"\0" + _runtime_file(name) + b"\0")
    return digest.hexdigest()


def install_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / f"pi-{PI_VERSION}-{lock_sha256()[:12]}"


def find_node() -> Node:
    """Node.js >= 20: `$ATOLL_PI_NODE`, else `node` on PATH."""
    explicit = os.environ.get(NODE_ENV)
    found = explicit or shutil.which("node")
    if not found:
        raise PiUnavailable(
            f"Node.js >= {MIN_NODE_MAJOR} is needed to run Pi and none is on PATH: install it "
            f"(Debian's nodejs is too old) or point {NODE_ENV} at a node binary"
        )
    return _node_at(str(Path(found).absolute()))


@functools.cache
def _node_at(found: str) -> Node:
    """The Node.js at `found`, checked once per process (a rollout must not pay for it)."""
    if not Path(found).is_file():
        raise PiUnavailable(f"{found} ({NODE_ENV}) is not a file; point it at a node binary")
    try:
        done = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=20, check=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise PiUnavailable(f"{found} --version failed ({exc}); is it a Node.js binary?") from exc
    version = done.stdout.strip()
    if not re.match(r"^v\d+\.", version):
        raise PiUnavailable(f"{found} --version printed {version!r}, not a Node.js version")
    node = Node(Path(found).absolute(), version)
    if node.major < MIN_NODE_MAJOR:
        raise PiUnavailable(
            f"Pi {PI_VERSION} needs Node.js >= {MIN_NODE_MAJOR}; {node.path} is {version}"
        )
    return node


def installed(root: Path | None = None, node: Node | None = None) -> PiInstall | None:
    """The pinned Pi if a whole install of the shipped lockfile is there, else None."""
    target = install_dir(root)
    try:
        record = json.loads((target / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if record.get("lock_sha256") != lock_sha256() or record.get("version") != PI_VERSION:
        return None
    pi = PiInstall(target, PI_VERSION, lock_sha256(), node or find_node())
    return pi if pi.cli.is_file() else None


def ensure(say: Callable[[str], None] = lambda _line: None, root: Path | None = None) -> PiInstall:
    """The pinned Pi, installed first if missing (`say` gets one progress line)."""
    node = find_node()
    present = installed(root, node)
    if present is not None:
        return _with_transpile_cache(present)
    base = root or cache_root()
    what = f"the Pi install in {base}"
    with run_lock.wait(
        base / ".install.lock", timeout=NPM_TIMEOUT_S + 60, what=what, error=PiUnavailable
    ):
        present = installed(root, node)
        if present is not None:
            return present
        target = install_dir(root)
        say(f"installing Pi {PI_VERSION} into {target} with npm (once; about 10 s) ...")
        began = time.monotonic()
        _npm_ci(node, target)
        pi = installed(root, node)
        if pi is None:
            raise PiUnavailable(f"npm finished but {target} holds no Pi command line")
        say(f"installed Pi {_reported_version(pi)} in {time.monotonic() - began:.0f} s")
        return _with_transpile_cache(pi)


def _with_transpile_cache(pi: PiInstall) -> PiInstall:
    """Give Pi's extension loader (jiti) a cache directory inside the install.

    jiti keeps transpiled TypeScript in `node_modules/.cache/jiti` beside the
    loader if that `node_modules` exists, else under TMPDIR, which is private
    to each run: so without this the extension would be transpiled afresh on
    every run. Entries are keyed by content and checked whole when read.
    """
    loader_dir = pi.package_dir / "dist" / "core" / "extensions"
    (loader_dir / "node_modules" / ".cache" / "jiti").mkdir(parents=True, exist_ok=True)
    return pi


def _npm(node: Node) -> str:
    beside = node.path.parent / "npm"
    found = str(beside) if beside.exists() else shutil.which("npm")
    if not found:
        raise PiUnavailable(
            "npm is needed to install Pi and none is on PATH (it ships with Node.js)"
        )
    return found


def _npm_ci(node: Node, target: Path) -> None:
    """`npm ci` of the shipped lockfile into a temporary sibling, then renamed to `target`."""
    npm = _npm(node)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for name in ("package.json", "package-lock.json"):
            (staging / name).write_bytes(_runtime_file(name))
        env = {**os.environ, "PATH": f"{node.path.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        argv = [npm, "ci", "--ignore-scripts", "--omit=dev", "--no-audit", "--no-fund"]
        try:
            done = subprocess.run(
                argv + ["--loglevel=error"],
                cwd=staging,
                env=env,
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise PiUnavailable(f"npm ci did not finish in {NPM_TIMEOUT_S} s") from exc
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise PiUnavailable(
                f"npm ci failed (status {done.returncode}); can npm reach its registry? "
                + " | ".join(tail)
            )
        atomic_write_json(
            staging / RECORD,
            {
                "package": PI_PACKAGE,
                "version": PI_VERSION,
                "lock_sha256": lock_sha256(),
                "node": node.version,
                "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        )
        if target.exists():  # an incomplete install of the same lockfile: replace it
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _reported_version(pi: PiInstall) -> str:
    """What the installed command line says it is (the pinned version, or an error)."""
    try:
        done = subprocess.run(
            [str(pi.node.path), str(pi.cli), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise PiUnavailable(f"the installed Pi does not start: {exc}") from exc
    version = (done.stdout or done.stderr).strip()
    if done.returncode != 0 or version != PI_VERSION:
        raise PiUnavailable(f"the installed Pi reports {version!r}, not {PI_VERSION}")
    return version
