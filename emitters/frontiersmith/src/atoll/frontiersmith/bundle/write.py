"""Writing a bundle: all of it or nothing, and never over a different one.

The files go into a temporary directory beside the target, each fsync'd,
then the directory is renamed into place and its parent fsync'd, all under
an exclusive lock on the parent directory itself (`atoll.core.run_lock.wait`,
so no lock file is left among the tasks).
A target that already exists is kept only if it is the same bundle (same
hash): that is how a resumed run finds the bundle it wrote before a crash.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
from pathlib import Path

from atoll.checker import layout
from atoll.checker.layout import BundleFile, LayoutError
from atoll.core import run_lock
from atoll.core.durable import fsync_dir
from atoll.frontiersmith.bundle.render import render_files, render_task_toml, task_toml_data
from atoll.frontiersmith.bundle.spec import BundleError, BundleInfo, BundleSpec
from atoll.frontiersmith.bundle.validate import check_harbor_schema

_PARTIAL = ".partial-"


def render_bundle(spec: BundleSpec) -> tuple[dict[str, BundleFile], str]:
    """Every file of the bundle, task.toml included, and the bundle hash."""
    files = render_files(spec)
    unsigned = layout.parse_task_toml(render_task_toml(task_toml_data(spec, None)).encode())
    bundle_hash = layout.digest(unsigned, files)
    text = render_task_toml(task_toml_data(spec, bundle_hash))
    signed = layout.parse_task_toml(text.encode())
    if layout.declared_hash(signed) != bundle_hash or layout.digest(signed, files) != bundle_hash:
        raise BundleError("task.toml does not round-trip through its own hash")  # a writer bug
    check_harbor_schema(text)
    files[layout.TASK_TOML] = BundleFile(
        layout.TASK_TOML, layout.FILES[layout.TASK_TOML], text.encode()
    )
    return files, bundle_hash


def write_bundle(out_dir: Path, spec: BundleSpec) -> BundleInfo:
    """Write `spec` as a bundle at `out_dir` (atomically); keep an identical one already there.

    BundleError when `out_dir` holds anything else (a different bundle, a
    damaged one, a file): nothing is overwritten.
    """
    out_dir = Path(out_dir).absolute()
    files, bundle_hash = render_bundle(spec)
    names = tuple(sorted(files))
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    with run_lock.wait(parent):
        _remove_stale_partials(parent, out_dir.name)
        if os.path.lexists(out_dir):
            try:
                existing = layout.verify(out_dir).bundle_hash
            except (LayoutError, OSError) as exc:
                raise BundleError(
                    f"{out_dir} exists and is not a sound bundle ({exc}); remove it or write elsewhere"
                ) from None
            if existing != bundle_hash:
                raise BundleError(
                    f"{out_dir} already holds a different bundle ({existing}, this one is "
                    f"{bundle_hash}); remove it or write elsewhere"
                )
            return BundleInfo(str(out_dir), bundle_hash, names, resumed=True)
        partial = (
            parent
            / f".{out_dir.name}{_PARTIAL}{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        )
        try:
            _write_tree(partial, files)
            os.rename(partial, out_dir)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        fsync_dir(parent)
    return BundleInfo(str(out_dir), bundle_hash, names)


def _write_tree(root: Path, files: dict[str, BundleFile]) -> None:
    os.mkdir(root, 0o755)
    os.chmod(root, 0o755)
    for directory in layout.DIRS:
        os.mkdir(root / directory, layout.DIR_MODE)
        os.chmod(root / directory, layout.DIR_MODE)  # whatever the umask
    for file in files.values():
        fd = os.open(
            root / file.path,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            file.mode,
        )
        try:
            os.fchmod(fd, file.mode)
            view = memoryview(file.data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    for directory in layout.DIRS:
        fsync_dir(root / directory)
    fsync_dir(root)


def _remove_stale_partials(parent: Path, name: str) -> None:
    """Temporary directories of writers on this host whose process is gone (nobody else's)."""
    prefix = f".{name}{_PARTIAL}{socket.gethostname()}-"
    for entry in os.scandir(parent):
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        pid_text = entry.name[len(prefix) :].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(entry.path, ignore_errors=True)
        except PermissionError:
            pass  # alive, someone else's
