"""bubblewrap runs in a given user namespace: root there, never root of the host."""

from __future__ import annotations

import os

import pytest

from atoll.core.sandbox import Limits, Mount, SandboxError, SandboxSpec, Status, get_backend
from atoll.core.sandbox.userns import UserNamespace

# A block of host ids no account uses, distinct per test process.
HOST_FIRST = 400_000 + (os.getpid() % 1000) * 16


@pytest.fixture
def namespace():
    with UserNamespace(HOST_FIRST, 16) as userns:
        yield userns


def _spec(userns: UserNamespace, uid: int, mounts=()) -> SandboxSpec:
    return SandboxSpec(
        uid=uid, gid=uid, user_namespace=userns.path, mounts=tuple(mounts), limits=Limits()
    )


def test_root_of_the_namespace_is_an_unprivileged_host_uid(namespace, tmp_path):
    # The source sits below a directory only the host's root may enter: bubblewrap
    # binds it before it enters the namespace.
    private = tmp_path / "private"
    share = private / "share"
    share.mkdir(parents=True)
    private.chmod(0o700)
    os.chown(share, HOST_FIRST, HOST_FIRST)
    result = get_backend("bwrap").run(
        [
            "sh",
            "-c",
            "id -u; cat /proc/self/uid_map; ls /proc/self/fd | wc -l; "
            "touch /share/made-by-root; chown 3:3 /share/made-by-root",
        ],
        _spec(namespace, 0, [Mount(share, "/share", writable=True)]),
    )
    assert result.status is Status.OK, result.stderr
    uid, mapping, fds = result.stdout.decode().splitlines()
    assert uid == "0"
    assert mapping.split() == ["0", str(HOST_FIRST), "16"]
    assert fds == "4"  # stdin, stdout, stderr and ls's own: the namespace's fd did not leak
    made = share / "made-by-root"
    assert (made.stat().st_uid, made.stat().st_gid) == (HOST_FIRST + 3, HOST_FIRST + 3)


def test_other_ids_have_no_capabilities(namespace):
    result = get_backend("bwrap").run(
        ["sh", "-c", "id -u; grep CapEff /proc/self/status"], _spec(namespace, 5)
    )
    assert result.status is Status.OK, result.stderr
    uid, caps = result.stdout.decode().splitlines()
    assert uid == "5" and int(caps.split()[1], 16) == 0


def test_ids_outside_the_block_do_not_exist_in_the_box(namespace):
    result = get_backend("bwrap").run(
        ["setpriv", "--reuid", "16", "--regid", "16", "--clear-groups", "id"],
        _spec(namespace, 0),
    )
    assert result.status is Status.RUNTIME_ERROR


def test_docker_backend_refuses_a_user_namespace(namespace):
    spec = _spec(namespace, 1)
    with pytest.raises(SandboxError, match="namespaces"):
        from atoll.core.sandbox.docker_backend import _validate

        _validate(["true"], spec)


def test_a_closed_namespace_cannot_be_used():
    userns = UserNamespace(HOST_FIRST, 16)
    userns.close()
    with pytest.raises(SandboxError, match="closed"):
        _ = userns.path
