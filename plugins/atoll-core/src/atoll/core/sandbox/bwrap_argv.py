"""The bubblewrap command line for a SandboxSpec, built in one place.

The root is bubblewrap's own tmpfs, never the host's `/`: only the system
directories programs need are bound in (read-only), then the spec's mounts.
Binding `/` and mounting over it would create mount points on the host (a
bind of X to /logs creates /logs on the host) and expose every private file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import PurePosixPath

from atoll.core.sandbox.spec import Mount, Network, SandboxError, SandboxSpec, mount_target

# Directories that hold programs and their libraries. On merged-/usr systems
# the top-level ones are symlinks into /usr and are recreated as symlinks.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

# The few public files of /etc that programs read to start, name users and
# resolve names; never shadow, ssh keys or anything else private.
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",  # only of use with the host's network
    "/etc/ssl/certs",  # public CA certificates, for TLS clients (not /etc/ssl/private)
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
)

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

# What root inside a user namespace keeps: Docker's default set, minus NET_RAW and MKNOD.
# Each applies only to the namespace's own ids, never to the host's.
NAMESPACE_ROOT_CAPS = (
    "chown",
    "dac_override",
    "fowner",
    "fsetid",
    "kill",
    "setgid",
    "setuid",
    "setpcap",
    "net_bind_service",
    "sys_chroot",
    "audit_write",
    "setfcap",
)
# What bubblewrap itself keeps to hand on: setpriv needs SETUID, SETGID and SETPCAP to
# switch uid and empty the bounding set.
_SWITCH_CAPS = ("setuid", "setgid", "setpcap")


def _system_binds() -> list[str]:
    args: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    made = {"/etc"}
    args += ["--perms", "0755", "--dir", "/etc"]
    for f in ETC_FILES:
        if os.path.lexists(f):
            parent = os.path.dirname(f)
            if parent not in made:
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
            if os.path.islink(f):
                args += ["--symlink", os.readlink(f), f]
            else:
                args += ["--ro-bind", f, f]
    return args


def _mount_args(mounts: Sequence[Mount]) -> list[str]:
    args: list[str] = []
    # bubblewrap would create missing parents of a mount point with mode 0700;
    # make those that live on the root tmpfs traversable instead.
    targets = {PurePosixPath(mount_target(m.target)) for m in mounts}
    parents = {p for t in targets for p in t.parents if str(p) != "/"}
    for parent in sorted(parents, key=lambda p: len(p.parts)):
        if not any(parent == t or parent.is_relative_to(t) for t in targets):
            args += ["--perms", "0755", "--dir", str(parent)]
    # Parents before children, so a nested mount lands on top of its parent.
    for m in sorted(mounts, key=lambda m: len(PurePosixPath(mount_target(m.target)).parts)):
        source = os.fspath(m.source)
        if not os.path.exists(source):
            raise SandboxError(f"sandbox mount source does not exist: {source}")
        args += ["--bind" if m.writable else "--ro-bind", source, mount_target(m.target)]
    return args


def box_env(spec: SandboxSpec) -> dict[str, str]:
    """The program's whole environment: a default PATH, then the spec's variables."""
    env = {"PATH": DEFAULT_PATH, **spec.env}
    for key in env:
        if not key or "=" in key:
            raise SandboxError(f"invalid environment variable name: {key!r}")
    return env


def _mount_point_args(points: Sequence[str]) -> list[str]:
    """Empty directories (and their parents) made on the box's root, for later mounts."""
    wanted = {PurePosixPath(mount_target(p)) for p in points}
    made = {parent for p in wanted for parent in p.parents if str(parent) != "/"} | wanted
    args: list[str] = []
    for path in sorted(made, key=lambda p: len(p.parts)):
        args += ["--perms", "0755", "--dir", str(path)]
    return args


def box_options(
    spec: SandboxSpec,
    *,
    caps: Sequence[str],
    status_fd: int | None = None,
    tmpfs_bytes: int | None = None,
    userns_fd: int | None = None,
    mount_points: Sequence[str] = (),
) -> list[str]:
    """`bwrap` and its options for the spec's box, up to the command it runs.

    `caps` are what bubblewrap keeps to hand on to the command; `mount_points`
    are empty directories made on the (then read-only) root for mounts that
    come later (a session's per-run mounts).
    """
    targets = {mount_target(m.target) for m in spec.mounts}
    args = [
        "bwrap",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    for cap in caps:
        args += ["--cap-add", f"CAP_{cap.upper()}"]
    if spec.user_namespace is not None:
        if userns_fd is None or not 0 <= userns_fd <= 9:
            raise SandboxError("a user namespace needs its descriptor as a single digit")
        args += ["--userns2", str(userns_fd)]
    if spec.network is not Network.HOST:
        # A fresh network namespace: loopback only, nothing reaches the host.
        args.append("--unshare-net")
    if status_fd is not None:
        args += ["--json-status-fd", str(status_fd)]
    args += _system_binds()
    args += ["--proc", "/proc", "--dev", "/dev"]
    if "/tmp" not in targets:
        if tmpfs_bytes is not None:
            args += ["--size", str(tmpfs_bytes)]
        args += ["--perms", "1777", "--tmpfs", "/tmp"]
    args += _mount_point_args(mount_points)
    args += _mount_args(spec.mounts)
    args += ["--remount-ro", "/", "--chdir", spec.workdir, "--clearenv"]
    for key, value in box_env(spec).items():
        args += ["--setenv", key, value]
    return args


def bwrap_argv(
    argv: Sequence[str],
    spec: SandboxSpec,
    *,
    status_fd: int | None = None,
    tmpfs_bytes: int | None = None,
    userns_fd: int | None = None,
) -> list[str]:
    """`bwrap ... setpriv ... -- argv` running `argv` as the spec's uid in the spec's box.

    With `spec.user_namespace`, `userns_fd` (a single digit) must hold that
    namespace open: bubblewrap sets the box up as root of the host (so any
    path root can reach can be bound) and only then enters the namespace
    (`--userns2`); the descriptor is closed before `argv` starts.
    """
    if not argv:
        raise SandboxError("nothing to run: the command is empty")
    namespace_root = spec.user_namespace is not None and spec.uid == 0
    kept = NAMESPACE_ROOT_CAPS if namespace_root else _SWITCH_CAPS
    args = box_options(
        spec, caps=kept, status_fd=status_fd, tmpfs_bytes=tmpfs_bytes, userns_fd=userns_fd
    )
    # setpriv drops every capability before exec, except that a namespace's root keeps
    # its container set (as root, exec grants it whatever the bounding set holds).
    bounding = "-all" + "".join(f",+{cap}" for cap in kept) if namespace_root else "-all"
    args += [
        "setpriv",
        "--reuid",
        str(spec.uid),
        "--regid",
        str(spec.gid),
        "--clear-groups",
        "--no-new-privs",
        "--bounding-set",
        bounding,
        "--inh-caps",
        "-all",
        "--",
    ]
    if spec.user_namespace is not None:
        # The namespace's descriptor must not reach the program (dash takes single digits).
        args += ["/bin/sh", "-c", f'exec {userns_fd}<&-; exec "$@"', "sandbox"]
    return [*args, *argv]
