"""Checks of isolation: what a program in the box cannot reach, read, write or become.

Each check plants something on the host (a listener, a secret, a setuid
binary, a symlink) that a leaky backend would let the program reach, and
looks on the host afterwards for what the program tried to change.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
from pathlib import Path

from atoll.core.sandbox.conformance.limits import py
from atoll.core.sandbox.conformance.suite import Box, describe, expect, skip
from atoll.core.sandbox.spec import Mount, Network, SandboxError, SandboxSpec, Status


def _pending_connections(server: socket.socket) -> list[bytes]:
    """What each connection waiting in the listener's queue sent (each one got through)."""
    server.setblocking(False)
    received: list[bytes] = []
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return received
        with conn:
            conn.settimeout(1.0)
            try:
                received.append(conn.recv(100))
            except OSError:
                received.append(b"")


def host_loopback(box: Box) -> None:
    """A listener on the host's loopback is unreachable with the network off or private."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        code = (
            "import socket\n"
            f"socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'escaped')\n"
            "print('connected')"
        )
        for network in (Network.NONE, Network.LOOPBACK):
            result = box.run(py(code), dataclasses.replace(box.spec, network=network))
            expect(
                result.status is Status.RUNTIME_ERROR and b"connected" not in result.stdout,
                f"network {network.value}: connected to the host: {describe(result)}",
            )
        # A connection that got through waits in the queue even after its program is gone.
        reached = _pending_connections(server)
    expect(reached == [], f"the host's listener was reached: {reached}")


def root_only_file(box: Box) -> None:
    """A mounted file only its owner may read stays unreadable, and so does /etc/shadow."""
    private = box.scratch / "private"
    private.mkdir()
    secret = private / "secret"
    secret.write_text("s3cret")
    secret.chmod(0o600)
    result = box.run(["cat", "/data/secret"], box.mounting(Mount(private, "/data")))
    expect(b"s3cret" not in result.stdout, "a file only its owner may read was read")
    expect(result.status is Status.RUNTIME_ERROR, f"reading a 0600 file: {describe(result)}")
    result = box.run(["cat", "/etc/shadow"])
    expect(b"root:" not in result.stdout, "/etc/shadow was read")
    expect(result.status is Status.RUNTIME_ERROR, f"reading /etc/shadow: {describe(result)}")


def home_canary(box: Box) -> None:
    """Nothing of the host outside the mounts is in the box, even a world-readable file."""
    canaries = [
        Path.home() / f".atoll-sandbox-canary-{os.getpid()}",
        box.scratch / "canary",  # the host's temporary directory
    ]
    try:
        for canary in canaries:
            canary.write_text("host-home-secret")
            canary.chmod(0o644)
        result = box.run(["cat", *map(str, canaries)])
    finally:
        canaries[0].unlink(missing_ok=True)
    expect(b"host-home-secret" not in result.stdout, "a host file outside the mounts was read")
    expect(result.status is Status.RUNTIME_ERROR, f"reading host files: {describe(result)}")


def writes_outside_mounts(box: Box) -> None:
    """Only writable mounts take writes: not the root, /usr, /etc, nor a read-only mount."""
    if os.geteuid() != 0:
        skip("needs root on the host, to give the writable mount to the check's uid")
    readonly = box.scratch / "readonly"
    readonly.mkdir()
    (readonly / "keep").write_text("original")
    (readonly / "keep").chmod(0o666)  # even a world-writable file stays unchanged
    work = box.scratch / "work"
    work.mkdir()
    os.chown(work, box.uid, box.uid)
    spec = box.mounting(
        Mount(readonly, "/box-ro"), Mount(work, "/box-work", writable=True), workdir="/box-work"
    )
    for target in ("/escaped", "/usr/escaped", "/etc/escaped", "/box-ro/new", "/box-ro/keep"):
        result = box.run(["sh", "-c", f"echo x > {target}"], spec)
        expect(result.status is Status.RUNTIME_ERROR, f"writing {target}: {describe(result)}")
    expect((readonly / "keep").read_text() == "original", "a read-only mount's file changed")
    expect(sorted(p.name for p in readonly.iterdir()) == ["keep"], "a read-only mount took a file")
    for host_path in ("/escaped", "/usr/escaped", "/etc/escaped", "/box-ro", "/box-work"):
        expect(not os.path.lexists(host_path), f"the run created {host_path} on the host")
    result = box.run(["sh", "-c", "echo made > /box-work/out && cat out"], spec)
    expect(
        result.ok and result.stdout == b"made\n", f"writing the writable mount: {describe(result)}"
    )
    expect((work / "out").read_text() == "made\n", "the write did not reach the host's directory")


def setuid_binaries(box: Box) -> None:
    """A setuid-root binary, setuid(0) and capabilities give the program no privilege."""
    if os.geteuid() != 0:
        skip("needs root on the host, to make a setuid-root binary")
    tools = box.scratch / "tools"
    tools.mkdir()
    suid = tools / "id"
    shutil.copy("/usr/bin/id", suid)
    os.chown(suid, 0, 0)
    suid.chmod(0o4755)
    spec = box.mounting(Mount(tools, "/tools"))
    result = box.run(["/tools/id", "-u"], spec)
    expect(result.stdout == f"{box.uid}\n".encode(), f"setuid root took effect: {describe(result)}")
    code = "import os\ntry:\n    os.setuid(0)\nexcept PermissionError:\n    print('refused')"
    result = box.run(py(code), spec)
    expect(
        result.ok and result.stdout == b"refused\n", f"setuid(0) was allowed: {describe(result)}"
    )
    result = box.run(["sh", "-c", "grep CapEff /proc/self/status"], spec)
    caps = result.stdout.split()[-1:] if result.ok else []
    expect(caps == [b"0000000000000000"], f"effective capabilities left: {describe(result)}")


def symlink_escapes(box: Box) -> None:
    """Symlinks and `..` in a mount lead nowhere outside it, in either direction."""
    outside = box.scratch / "outside"
    outside.mkdir()
    outside.chmod(0o777)
    (outside / "secret").write_text("outside-secret")
    (outside / "secret").chmod(0o644)
    shared = box.scratch / "shared"
    shared.mkdir()
    (shared / "abs").symlink_to(outside / "secret")
    (shared / "rel").symlink_to("../outside/secret")
    work = box.scratch / "work"
    work.mkdir()
    os.chmod(work, 0o777)
    spec = box.mounting(Mount(shared, "/data"), Mount(work, "/box-work", writable=True))
    reads = [
        "/data/abs",
        "/data/rel",
        "/data/../outside/secret",
        f"/data/{'../' * 8}{outside}/secret",
    ]
    for path in reads:
        result = box.run(["cat", path], spec)
        expect(
            b"outside-secret" not in result.stdout,
            f"reading {path} reached a host file outside the mounts",
        )
    # Links the program plants in its writable mount point nowhere on the host either.
    writes = [
        f"ln -s {outside} /box-work/abs && echo planted > /box-work/abs/planted",
        "ln -s ../outside /box-work/rel && echo planted > /box-work/rel/planted",
        "echo planted > /box-work/../outside/planted",
    ]
    for script in writes:
        result = box.run(["sh", "-c", script], spec)
        expect(result.status is Status.RUNTIME_ERROR, f"`{script}` succeeded: {describe(result)}")
    expect(
        sorted(p.name for p in outside.iterdir()) == ["secret"],
        f"a write through a link reached the host: {sorted(p.name for p in outside.iterdir())}",
    )


def invalid_specs(box: Box) -> None:
    """A spec no backend may run is refused with SandboxError, never run."""
    missing = box.scratch / "missing"
    bad: list[tuple[str, list[str], SandboxSpec]] = [
        ("an empty command", [], box.spec),
        ("uid 0", ["true"], dataclasses.replace(box.spec, uid=0, gid=0)),
        ("a mount target with ..", ["true"], box.mounting(Mount(box.scratch, "/a/../etc"))),
        ("a relative mount target", ["true"], box.mounting(Mount(box.scratch, "data"))),
        ("a mount over /", ["true"], box.mounting(Mount(box.scratch, "/"))),
        ("a missing mount source", ["true"], box.mounting(Mount(missing, "/data"))),
    ]
    for what, argv, spec in bad:
        try:
            result = box.run(argv, spec)
        except SandboxError:
            continue
        expect(False, f"{what} was run instead of refused: {describe(result)}")
