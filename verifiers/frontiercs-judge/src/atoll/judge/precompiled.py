"""The standard headers a submission starts with, compiled once for the submissions after it.

Most of a fast program's judging is its compile, and most of that compile
is g++ reading the headers it includes: the shelf packer's four headers are
0.08 s of its 0.32 s, `<bits/stdc++.h>` 0.54 s of 0.90 s. An agent's programs
start with the same few lines, submission after submission. So once two
submissions have started with the same `#include <...>` lines, the judge
compiles those lines into a precompiled header while it is idle, and
compiles each later submission that starts with them with `-include` of it.

The binary is the same, byte for byte: the header's text is the
submission's own first lines, so g++ sees the same tokens in the same
order (the submission's own includes then find their guards defined), and
a precompiled header that g++ cannot use it ignores, reading the text. A
compile with it that fails is repeated without it, so that a compile
error, and its message, are the plain compile's. A precompiled header
records the headers it read; one whose headers changed since (a new libc)
is not used, and goes. Only the sandbox that compiles with this machine's
own headers (bubblewrap) uses them: a Docker image's headers are not the
ones this process can look at.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atoll.core.durable import fsync_dir, fsync_file
from atoll.core.sandbox import CancelToken, Limits, Mount, SandboxError, SessionPool, Status

log = logging.getLogger(__name__)

PREFIX = "/prefix"  # where the compiler's box mounts a precompiled header's directory
HEADER = "prefix.h"
PRECOMPILED = HEADER + ".gch"
DEPENDENCIES = "headers.json"
#: Precompiled headers kept on disk (one of `<bits/stdc++.h>` is about 100 MB).
KEEP = 4
#: Submissions that start with the same headers before those are precompiled.
SEEN_BEFORE_BUILD = 2
MAX_HEADERS = 64
_SIGHTINGS_KEPT = 1024
_INCLUDE = re.compile(rb"#[ \t]*include[ \t]*<([A-Za-z0-9_+./-]+)>[ \t]*(//.*)?")


def leading_includes(source: bytes) -> tuple[str, ...]:
    """The `#include <...>` lines a source starts with, before anything else but blank
    lines and `//` comments; () where anything could read them otherwise.

    Conservative by design: a line continued by a backslash, a block comment, a
    carriage return that does not end its line, a quoted include or any other line
    ends the prefix (what comes before it still counts).
    """
    headers: list[str] = []
    for raw in source.split(b"\n"):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        stripped = line.strip(b" \t")
        if b"\r" in line or stripped.endswith(b"\\"):
            break
        if not stripped or stripped.startswith(b"//"):
            continue
        match = _INCLUDE.fullmatch(stripped)
        if match is None or b".." in match[1] or len(headers) == MAX_HEADERS:
            break
        headers.append(match[1].decode())
    return tuple(headers)


@dataclass(frozen=True)
class Precompiled:
    """A precompiled header on disk: what to add to a compile that uses it."""

    directory: Path

    def mount(self) -> Mount:
        return Mount(self.directory, PREFIX)

    def flags(self) -> tuple[str, ...]:
        return ("-include", f"{PREFIX}/{HEADER}")


@dataclass(frozen=True)
class Toolchain:
    """How the compiler's box compiles: which compiler (and version), with which flags and
    limits, in which mounted build directory."""

    compiler: str
    flags: tuple[str, ...]
    version: Callable[[], str]
    limits: Limits
    build_dir: str


class PrefixCache:
    """Precompiled headers of submissions' leading includes, under `directory`, made in
    `sessions` of the compiler's box with `toolchain`.

    `usable` is asked by each compile; `run` by the judge when it is idle (`warming`).
    """

    def __init__(self, directory: Path, sessions: SessionPool, toolchain: Toolchain) -> None:
        self.directory = directory
        self.sessions = sessions
        self.toolchain = toolchain
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, int] = OrderedDict()  # key -> submissions seen
        self._wanted: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._failed: set[str] = set()  # headers that do not compile: never tried again

    def key(self, headers: tuple[str, ...]) -> str:
        digest = hashlib.sha256()
        tools = self.toolchain
        for part in ("\n".join(headers), " ".join(tools.flags), tools.version()):
            data = part.encode()
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
        return digest.hexdigest()

    def usable(self, source: bytes) -> Precompiled | None:
        """The precompiled header of `source`'s leading includes, if there is a fresh one;
        else None, and the source counts towards having them precompiled."""
        headers = leading_includes(source)
        if not headers:
            return None
        key = self.key(headers)
        directory = self.directory / key
        if (directory / PRECOMPILED).is_file() and self._still_fresh(directory):
            try:
                os.utime(directory)  # the least recently used goes first
            except OSError:
                return None
            return Precompiled(directory)
        self._sighted(key, headers)
        return None

    def pending(self) -> bool:
        """Whether some headers were seen often enough and are not precompiled yet."""
        with self._lock:
            return bool(self._wanted)

    def run(self, cancel: CancelToken) -> None:
        """Precompile the headers seen often enough, until `cancel` (a submission arriving)."""
        while not cancel.cancelled:
            with self._lock:
                if not self._wanted:
                    return
                key, headers = next(iter(self._wanted.items()))
            done = self._build(key, headers, cancel)
            with self._lock:
                if done or not cancel.cancelled:
                    self._wanted.pop(key, None)

    def _sighted(self, key: str, headers: tuple[str, ...]) -> None:
        with self._lock:
            if key in self._failed or key in self._wanted:
                return
            seen = self._seen.pop(key, 0) + 1
            if seen >= SEEN_BEFORE_BUILD:
                self._wanted[key] = headers
                return
            self._seen[key] = seen
            if len(self._seen) > _SIGHTINGS_KEPT:
                self._seen.popitem(last=False)

    def _still_fresh(self, directory: Path) -> bool:
        """Whether every header the precompiled one read is as it was when it was made
        (about 0.7 ms for `<bits/stdc++.h>`'s 422); a stale one is removed."""
        try:
            recorded = json.loads((directory / DEPENDENCIES).read_bytes())
            fresh = all(_stamp(path) == [size, mtime] for path, size, mtime in recorded)
        except (OSError, ValueError, TypeError):
            fresh = False
        if not fresh:
            log.info("precompiled headers in %s are stale; compiling without them", directory)
            shutil.rmtree(directory, ignore_errors=True)
        return fresh

    def _build(self, key: str, headers: tuple[str, ...], cancel: CancelToken) -> bool:
        """Precompile `headers` (in the compiler's box) and publish them; whether it is done."""
        work = Path(tempfile.mkdtemp(prefix=".prefix-", dir=self.directory))
        try:
            build = work / "build"
            build.mkdir()
            text = "".join(f"#include <{name}>\n" for name in headers)
            (build / HEADER).write_text(text)
            os.chmod(build, 0o777)  # the compiler runs as an unprivileged uid
            tools = self.toolchain
            argv = [tools.compiler, "-x", "c++-header", HEADER, *tools.flags]
            argv += ["-MD", "-MF", "headers.d", "-o", PRECOMPILED]
            with self.sessions.lease() as box:
                result = box.run(
                    argv,
                    tools.limits,
                    mounts=(Mount(build, tools.build_dir, writable=True),),
                    cancel=cancel,
                )
            if cancel.cancelled:
                log.info("precompiling headers %s gave way to a submission", headers)
                return False
            built = build / PRECOMPILED
            if result.status is not Status.OK or not _regular(built):
                with self._lock:
                    if len(self._failed) >= _SIGHTINGS_KEPT:
                        self._failed.clear()
                    self._failed.add(key)
                log.info("headers %s do not precompile; compiling without them", headers)
                return True
            self._publish(key, text, built, _dependencies(build / "headers.d"), work)
            return True
        except (OSError, SandboxError) as exc:
            log.warning("could not precompile headers %s: %s", headers, exc)
            return True
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _publish(self, key: str, text: str, built: Path, headers: list[str], work: Path) -> None:
        """Our own copies of the header, the precompiled one and the manifest, made
        durable, then in the cache with one rename (whole or not at all)."""
        staged = work / "published"
        staged.mkdir(mode=0o755)
        (staged / HEADER).write_text(text)
        shutil.copyfile(built, staged / PRECOMPILED)
        manifest = [[path, *_stamp(path)] for path in headers]
        (staged / DEPENDENCIES).write_text(json.dumps(manifest))
        for name in (HEADER, PRECOMPILED, DEPENDENCIES):
            os.chmod(staged / name, 0o644)
            fsync_file(staged / name)
        try:
            os.rename(staged, self.directory / key)
        except OSError:
            if not (self.directory / key / PRECOMPILED).is_file():
                raise
        fsync_dir(self.directory)
        self._evict()

    def _evict(self) -> None:
        """Keep the `KEEP` most recently used."""
        kept = []
        for entry in self.directory.iterdir():
            if not entry.name.startswith("."):
                try:
                    kept.append((entry.stat().st_mtime_ns, entry))
                except OSError:
                    continue
        kept.sort(reverse=True)
        for _, entry in kept[KEEP:]:
            shutil.rmtree(entry, ignore_errors=True)


def _regular(path: Path) -> bool:
    """A file of its own, not a link the compiler left to something else."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _stamp(path: str) -> list[int]:
    found = os.stat(path)
    return [found.st_size, found.st_mtime_ns]


def _dependencies(rules: Path) -> list[str]:
    """The headers a `-MD` rule names, those of the machine's own (absolute paths)."""
    text = rules.read_text().replace("\\\n", " ")
    _, _, names = text.partition(":")
    return sorted({name for name in names.split() if name.startswith("/")})
