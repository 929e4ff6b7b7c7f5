"""A trial's private root on the host, and the unprivileged uids that use it.

Every top-level directory of the trial's box (/app, /tests, /solution,
/installed-agent, /tmp, /root, /home, or any other a task uploads to) is a
directory under `<root>/fs` bound at that path; the host's system directories
stay read-only and nothing else of the host is visible. Users named by the
task (root included) are mapped to a block of unprivileged host uids drawn at
random per trial, so two trials never share a uid and none is a real account.
Inside the box the trial runs in a user namespace that maps that block onto
ids 0..15: root is id 0 there (with a container root's powers over the
trial's ids only), the task's other users 1, 2, ... in the order they appear.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from atoll.core.sandbox.bwrap_argv import SYSTEM_DIRS

UID_BASE = 200_000
BLOCK = 16  # users per trial: root plus up to 15 named ones
BLOCKS = 1 << 16

# Top-level names that belong to the host's read-only system or the kernel.
RESERVED = {PurePosixPath(d).name for d in SYSTEM_DIRS} | {"etc", "proc", "dev", "sys", "run"}

ROOT_PREFIX = "atoll-local-"  # every trial root's folder name starts so

STANDARD_DIRS = ("app", "tests", "solution", "installed-agent", "tmp", "root", "home")


class TrialRootError(Exception):
    """A path the trial's box cannot hold."""


@dataclass(frozen=True)
class User:
    """A user of the box: `uid` inside the trial's user namespace, `host_uid` on the host."""

    name: str
    uid: int
    host_uid: int
    home: str


def top_level(path: str) -> str:
    """The first component of an absolute in-box path, after normalisation."""
    parts = PurePosixPath(os.path.normpath("/" + path.lstrip("/"))).parts
    if len(parts) < 2:
        raise TrialRootError("cannot write to / itself; choose a directory below it")
    top = parts[1]
    if top in RESERVED:
        raise TrialRootError(
            f"{path} is in the host's read-only system directories; atoll-local only "
            "writes below task directories such as /app, /tmp or /tests "
            "(use --env docker for tasks that change the system)"
        )
    return top


class TrialRoot:
    """The host directories of one trial's box and the users that may run in it."""

    def __init__(self, parent: Path | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX, dir=parent))
        self.fs = self.path / "fs"
        self.etc = self.path / "etc"
        self.fs.mkdir()
        self.etc.mkdir()
        self._base_uid = UID_BASE + BLOCK * secrets.randbelow(BLOCKS)
        self._users: dict[str, User] = {}
        self.root_user = self.user("root")
        for name in STANDARD_DIRS:
            self.ensure_top(name)
        (self.fs / "tmp").chmod(0o1777)
        (self.fs / "home").chmod(0o755)

    @property
    def uids(self) -> range:
        return range(self._base_uid, self._base_uid + BLOCK)

    def user(self, who: str | int | None) -> User:
        """The box user for a task's user name or uid (None and 0 mean root)."""
        key = "root" if who in (None, 0, "0", "root") else str(who)
        found = self._users.get(key)
        if found is not None:
            return found
        if len(self._users) >= BLOCK:
            raise TrialRootError(f"a trial may use at most {BLOCK} distinct users")
        name = key if not key.isdigit() else f"user{key}"
        home = "/root" if key == "root" else f"/home/{name}"
        inside = len(self._users)
        found = User(name, inside, self._base_uid + inside, home)
        self._users[key] = found
        if key != "root":
            home_dir = self.fs / "home" / name
            home_dir.mkdir(exist_ok=True)
            os.chown(home_dir, found.host_uid, found.host_uid)
        self._write_accounts()
        return found

    def _write_accounts(self) -> None:
        passwd = ["nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"]
        group = ["nogroup:x:65534:"]
        for user in self._users.values():
            passwd.append(f"{user.name}:x:{user.uid}:{user.uid}::{user.home}:/bin/bash")
            group.append(f"{user.name}:x:{user.uid}:")
        for name, lines in (("passwd", passwd), ("group", group)):
            tmp = self.etc / f".{name}.tmp"
            tmp.write_text("\n".join(lines) + "\n")
            tmp.chmod(0o644)
            tmp.replace(self.etc / name)

    def ensure_top(self, name: str) -> Path:
        """The host directory behind /<name>, created (owned by root's uid) if new."""
        directory = self.fs / name
        if not directory.is_dir():
            directory.mkdir()
            os.chown(directory, self.root_user.host_uid, self.root_user.host_uid)
            directory.chmod(0o755)
        return directory

    def tops(self) -> list[str]:
        return sorted(p.name for p in self.fs.iterdir() if p.is_dir() and not p.is_symlink())

    def chown_tree(self, host_path: Path, uid: int) -> None:
        """Give a freshly copied tree to host uid `uid`, never following a symlink."""
        if host_path.is_symlink() or not host_path.exists():
            return
        os.lchown(host_path, uid, uid)
        if not host_path.is_dir():
            return
        for _, dirs, files, dir_fd in os.fwalk(host_path, follow_symlinks=False):
            for entry in dirs + files:
                with contextlib.suppress(FileNotFoundError):
                    os.chown(entry, uid, uid, dir_fd=dir_fd, follow_symlinks=False)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
