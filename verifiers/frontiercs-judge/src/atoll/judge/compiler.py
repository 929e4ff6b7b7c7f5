"""Compile C++ once, with the authority's flags, inside the sandbox.

Two kinds of source are compiled, with the same flags (`FLAGS`, the ones the
authority's engine runs): submissions, and the testlib checkers and
interactors of a FrontierCS checkout (with `-I` the checkout's testlib headers). The compiler
reads untrusted source: in the sandbox it sees only that source and the
headers directory (so `#include "/etc/shadow"` finds nothing), has no
network, and is held to CPU, wall-clock, memory and file-size limits.
Binaries are cached by the sha256 of source, flags, headers and compiler
version, so a resubmission, or the next submission to a checker-judged
problem, skips the compile entirely.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from atoll.core.sandbox import (
    Limits,
    Mount,
    Network,
    SandboxBackend,
    SandboxResult,
    SandboxSession,
    SandboxSpec,
    SessionPool,
    Status,
)
from atoll.core.sizes import KiB, MiB
from atoll.judge.compile_publish import StagedBuild
from atoll.judge.precompiled import PREFIX, Precompiled, PrefixCache, Toolchain

log = logging.getLogger(__name__)

COMPILER = "g++"
# What the authority's judge engine runs (`gojudge.js`) for programs, checkers and
# interactors alike (the latter with -I its testlib). Its `langs.yaml` also lists
# `-static -s`, but nothing in the engine reads that file.
FLAGS = ("-O2", "-pipe", "-std=gnu++17")
INCLUDE = "/include"  # where a recipe's headers directory is mounted for the compiler
COMPILE_LIMITS = Limits(
    cpu_seconds=60.0,
    wall_seconds=90.0,
    memory_bytes=2048 * MiB,
    processes=16,
    file_size_bytes=256 * MiB,
    open_files=256,
    stdout_bytes=64 * KiB,
    stderr_bytes=64 * KiB,
)
MAX_MESSAGE = 8 * KiB
# The compiler's box: the source's directory and the headers are mounted per compile.
BUILD = "/build"
COMPILE_BOX = SandboxSpec(
    workdir=BUILD,
    env={"PATH": "/usr/bin:/bin", "LANG": "C", "TMPDIR": "/tmp"},
    network=Network.NONE,
)
COMPILE_SLOTS = (BUILD, INCLUDE, PREFIX)


class CompileError(Exception):
    """The source does not compile: the candidate's fault, reported as a normal outcome."""


class CompilerMissing(Exception):
    """No C++ compiler on this machine: an infrastructure failure."""


@dataclass(frozen=True)
class Recipe:
    """How to build one kind of binary: flags, an optional headers directory, file names."""

    flags: tuple[str, ...] = FLAGS
    include_dir: Path | None = None
    source_name: str = "solution.cpp"
    binary_name: str = "solution"

    def key_parts(self) -> list[bytes]:
        parts = [" ".join(self.flags).encode()]
        if self.include_dir is not None:
            parts.append(b"-I " + headers_digest(self.include_dir).encode())
        return parts

    def argv(self, extra: tuple[str, ...] = ()) -> list[str]:
        """The compiler's command line, with `extra` options after the recipe's own."""
        include = ["-I", INCLUDE] if self.include_dir is not None else []
        return [COMPILER, self.source_name, *self.flags, *include, *extra, "-o", self.binary_name]


PROGRAM = Recipe()


def tool_recipe(role: str, include_dir: Path) -> Recipe:
    """A checker (`chk.cc` -> `chk`) or interactor, compiled as the authority compiles it."""
    name = "chk" if role == "checker" else role
    return Recipe(FLAGS, include_dir, f"{name}.cc", name)


@cache
def headers_digest(include_dir: Path) -> str:
    """The sha256 of every file under a headers directory (its names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in include_dir.rglob("*") if p.is_file()):
        name = path.relative_to(include_dir).as_posix().encode()
        data = path.read_bytes()
        for part in (name, data):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    return digest.hexdigest()


def _keep() -> None:
    """A cached binary is the cache's: nothing to give back."""


@dataclass(frozen=True)
class Compiled:
    """A binary to run: the cache's, or a fresh build's own copy until the cache has it.

    Call `release()` once done running it (a fresh build's copy then goes).
    """

    binary: Path
    key: str
    cached: bool
    seconds: float
    release: Callable[[], None] = field(default=_keep, repr=False, compare=False)


@cache
def compiler_version() -> str:
    """The compiler's identity, part of the cache key (a new g++ recompiles everything)."""
    path = shutil.which(COMPILER)
    if path is None:
        raise CompilerMissing(f"{COMPILER} is not installed; install it (apt-get install g++)")
    out = subprocess.run(
        [path, "--version"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return out.splitlines()[0].strip() if out else path


def prefix_cache(directory: Path, sessions: SessionPool) -> PrefixCache:
    """Precompiled leading includes for programs, made in the compiler's box with `FLAGS`."""
    tools = Toolchain(COMPILER, FLAGS, compiler_version, COMPILE_LIMITS, BUILD)
    return PrefixCache(directory, sessions, tools)


def cache_key(source: bytes, recipe: Recipe = PROGRAM) -> str:
    digest = hashlib.sha256()
    for part in (source, *recipe.key_parts(), compiler_version().encode()):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


class CompileCache:
    """Binaries by cache key under `directory`; concurrent compiles of one key run once.

    Compiles run in sandbox sessions of `COMPILE_BOX` (`sessions`, else a pool
    of its own on `backend`): the box is built once, not per compile. With
    `prefixes`, a program whose leading includes are precompiled compiles with
    them (see `precompiled`).
    """

    def __init__(
        self,
        directory: Path,
        backend: SandboxBackend,
        sessions: SessionPool | None = None,
        prefixes: PrefixCache | None = None,
    ) -> None:
        self.directory = directory
        self.backend = backend
        self.sessions = sessions or SessionPool(backend, COMPILE_BOX, COMPILE_SLOTS)
        self.prefixes = prefixes
        self._own_sessions = sessions is None
        directory.mkdir(parents=True, exist_ok=True)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._publisher = ThreadPoolExecutor(1, thread_name_prefix="judge-publish")

    def close(self) -> None:
        """Finish publishing, and close the sessions this cache opened itself (not a pool it was given)."""
        self._publisher.shutdown(wait=True)
        if self._own_sessions:
            self.sessions.close()

    def path_for(self, key: str, recipe: Recipe = PROGRAM) -> Path:
        """The binary for `key`, alone in its own directory (the sandbox mounts that directory)."""
        return self.directory / key / recipe.binary_name

    def cached(self, source: bytes, recipe: Recipe = PROGRAM) -> bool:
        """Whether `source` is compiled already (`compile` would take it from the cache)."""
        return self.path_for(cache_key(source, recipe), recipe).is_file()

    def compile(self, source: bytes, recipe: Recipe = PROGRAM) -> Compiled:
        """The binary for `source`: cached, or compiled now; CompileError if it does not build.

        A fresh build is published to the cache in the background (see
        `compile_publish`); a compile of the same source waits for that.
        """
        key = cache_key(source, recipe)
        target = self.path_for(key, recipe)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        lock.acquire()
        publishing = False
        try:
            if target.is_file():
                return Compiled(target, key, cached=True, seconds=0.0)
            staged = self._build(source, recipe)
            publishing = self._publish_later(staged, target, lock)
            return Compiled(staged.binary, key, False, staged.seconds, staged.release)
        finally:
            if not publishing:
                lock.release()

    def _publish_later(self, staged: StagedBuild, target: Path, lock: threading.Lock) -> bool:
        """Publish `staged` in the background, `lock` held until done; False: it was done now."""

        def publish() -> None:
            try:
                staged.publish(target, self.directory)
            except OSError as exc:  # the next compile of this source builds it again
                log.warning("could not keep %s in the compile cache: %s", target, exc)
            finally:
                lock.release()
                staged.release()

        try:
            self._publisher.submit(publish)
        except RuntimeError:  # closing: publish now, the lock still ours to release
            with contextlib.suppress(OSError):
                staged.publish(target, self.directory)
            staged.release()
            return False
        return True

    def _build(self, source: bytes, recipe: Recipe) -> StagedBuild:
        work_dir = Path(tempfile.mkdtemp(prefix=".compile-", dir=self.directory))
        try:
            return self._build_in(work_dir, source, recipe)
        except BaseException:
            shutil.rmtree(work_dir, ignore_errors=True)
            raise

    def _build_in(self, work_dir: Path, source: bytes, recipe: Recipe) -> StagedBuild:
        build_dir = work_dir / "build"
        build_dir.mkdir()
        (build_dir / recipe.source_name).write_bytes(source)
        os.chmod(build_dir, 0o777)  # the compiler runs as an unprivileged uid
        mounts = [Mount(build_dir, BUILD, writable=True)]
        if recipe.include_dir is not None:
            mounts.append(Mount(recipe.include_dir, INCLUDE))
        built = build_dir / recipe.binary_name
        with self.sessions.lease() as box:
            result, seconds = self._run_compiler(box, recipe, mounts, built, source)
        if result.status is not Status.OK or not built.is_file():
            raise CompileError(_describe_failure(result.status, result.stderr))
        # A copy of our own: the build directory is the untrusted compiler's.
        staged = work_dir / "staged"
        staged.mkdir(mode=0o755)
        shutil.copyfile(built, staged / recipe.binary_name)
        os.chmod(staged / recipe.binary_name, 0o755)
        return StagedBuild(work_dir, staged / recipe.binary_name, seconds, self._later)

    def _run_compiler(
        self, box: SandboxSession, recipe: Recipe, mounts: list[Mount], built: Path, source: bytes
    ) -> tuple[SandboxResult, float]:
        """The compile and its seconds: with the source's precompiled leading includes if
        there are some, and a compile that fails with them repeated without them, so that
        a compile error and its message are the plain compile's."""
        seconds = 0.0
        prefix = self._prefix_for(source, recipe)
        if prefix is not None:
            argv = recipe.argv(prefix.flags())
            result = box.run(argv, COMPILE_LIMITS, mounts=(*mounts, prefix.mount()))
            if result.status is Status.OK and built.is_file():
                return result, result.wall_seconds
            seconds = result.wall_seconds
            log.info("%s; compiling it again without precompiled headers", result.status.value)
            with contextlib.suppress(OSError):
                built.unlink()
        result = box.run(recipe.argv(), COMPILE_LIMITS, mounts=tuple(mounts))
        return result, seconds + result.wall_seconds

    def _prefix_for(self, source: bytes, recipe: Recipe) -> Precompiled | None:
        if self.prefixes is None or recipe.include_dir is not None or recipe.flags != FLAGS:
            return None
        return self.prefixes.usable(source)

    def _later(self, work: Callable[[], None]) -> None:
        """`work` in the publisher's thread (now, if it has stopped)."""
        try:
            self._publisher.submit(work)
        except RuntimeError:
            work()


def _describe_failure(status: Status, stderr: bytes) -> str:
    text = stderr.decode("utf-8", errors="replace").strip()
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "\n[... compiler output truncated]"
    reasons = {
        Status.CPU_TIME_LIMIT: "compilation exceeded its CPU time limit",
        Status.WALL_TIME_LIMIT: "compilation exceeded its wall-clock limit",
        Status.MEMORY_LIMIT: "compilation exceeded its memory limit",
        Status.OUTPUT_LIMIT: "compilation wrote too much output",
    }
    head = reasons.get(status, "compilation failed")
    return f"{head}\n{text}" if text else head
