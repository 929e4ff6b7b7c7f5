"""A task's compose volumes on atoll-local: Compose's own reading, then real binds in the box.

The phase test is the task shape polyomino_packing uses: a public agent phase,
a verifier phase with no network, and a host directory holding a unix socket
bound through the compose file; the verifier reaches the socket's server and
nothing else.
"""

from __future__ import annotations

import asyncio
import socket
import tempfile
import threading
from pathlib import Path

import pytest
from harbor.models.task.config import NetworkMode, NetworkPolicy

from atoll.core.environments.compose_volumes import (
    BindVolume,
    ComposeVolumeError,
    interpolate,
    parse,
    resolve,
)

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${A}", "a"),
        ("$A/x", "a/x"),
        ("${UNSET}", ""),
        ("${UNSET:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${EMPTY-fallback}", ""),
        ("${A:+alt}", "alt"),
        ("${UNSET:+alt}", ""),
        ("$$A", "$A"),
        ("/p/${A}:/q", "/p/a:/q"),
    ],
)
def test_interpolation_follows_compose(text: str, expected: str) -> None:
    assert interpolate(text, {"A": "a", "EMPTY": ""}) == expected


@pytest.mark.parametrize("text", ["${UNSET:?say this}", "${EMPTY:?say this}", "${UNSET?say this}"])
def test_required_variables_fail_with_the_files_message(text: str) -> None:
    with pytest.raises(ComposeVolumeError, match="say this"):
        interpolate(text, {"EMPTY": ""})


def test_bind_entries_are_read_and_the_rest_reported(tmp_path: Path) -> None:
    compose = tmp_path / "docker-compose.yaml"
    compose.write_text(
        "services:\n"
        "  main:\n"
        "    volumes:\n"
        "      - ${DATA:?set DATA}:/data:ro\n"
        "      - ./local:/local\n"
        "      - named:/cache\n"
        "      - /anonymous\n"
        "      - {type: bind, source: /srv/x, target: /x, read_only: true}\n"
        "      - {type: tmpfs, target: /scratch}\n"
        "  other:\n"
        "    volumes: [/elsewhere:/elsewhere]\n"
    )
    volumes = parse(compose)
    assert volumes.binds == (
        BindVolume("${DATA:?set DATA}", "/data", True),
        BindVolume("./local", "/local", False),
        BindVolume("/srv/x", "/x", True),
    )
    assert len(volumes.skipped) == 3
    (tmp_path / "local").mkdir()
    assert resolve(volumes.binds[1], tmp_path, {}) == (tmp_path / "local", "/local")
    with pytest.raises(ComposeVolumeError, match="does not exist"):
        resolve(volumes.binds[2], tmp_path, {})


def _serve_once(listener: socket.socket, reply: bytes) -> threading.Thread:
    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_a_socket_bound_by_the_compose_file_outlives_the_network(make_env, tmp_path: Path) -> None:
    task_env = tmp_path / "environment"
    task_env.mkdir()
    (task_env / "docker-compose.yaml").write_text(
        "services:\n  main:\n    volumes:\n      - ${PROBE_SOCKET_DIR:?set it}:/run/probe:ro\n"
    )
    socket_dir = Path(tempfile.mkdtemp(prefix="atoll-probe-"))
    socket_dir.chmod(0o755)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(socket_dir / "probe.sock"))
    (socket_dir / "probe.sock").chmod(0o666)
    unix.listen(1)
    server = _serve_once(unix, b"judge\n")
    tcp = socket.create_server(("127.0.0.1", 0))
    port = tcp.getsockname()[1]
    tcp_probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo reached"
    unix_probe = (
        'python3 -c "import socket; s=socket.socket(socket.AF_UNIX); '
        "s.connect('/run/probe/probe.sock'); print(s.recv(16).decode().strip())\""
    )

    async def scenario() -> tuple:
        env = make_env(network=NetworkMode.PUBLIC, environment_dir=task_env)
        await env.start(force_build=False)
        try:
            agent_phase = await env.exec(tcp_probe)
            await env.set_network_policy(NetworkPolicy(network_mode=NetworkMode.NO_NETWORK))
            verifier_tcp = await env.exec(tcp_probe)
            verifier_unix = await env.exec(unix_probe)
            read_only = await env.exec("touch /run/probe/x")
            return agent_phase, verifier_tcp, verifier_unix, read_only
        finally:
            await env.stop(delete=True)

    import os

    os.environ["PROBE_SOCKET_DIR"] = str(socket_dir)
    try:
        agent_phase, verifier_tcp, verifier_unix, read_only = asyncio.run(scenario())
    finally:
        os.environ.pop("PROBE_SOCKET_DIR", None)
        tcp.close()
        unix.close()
        server.join(timeout=5)
    assert agent_phase.return_code == 0 and agent_phase.stdout == "reached\n"
    assert verifier_tcp.return_code != 0 and verifier_tcp.stdout is None
    assert verifier_unix.return_code == 0, verifier_unix.stderr
    assert verifier_unix.stdout == "judge\n"
    assert read_only.return_code != 0


def test_an_unset_required_variable_stops_the_start_with_its_message(
    make_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_env = tmp_path / "environment"
    task_env.mkdir()
    (task_env / "docker-compose.yaml").write_text(
        "services:\n  main:\n    volumes:\n      - ${PROBE_UNSET_DIR:?point it at the data}:/d\n"
    )
    monkeypatch.delenv("PROBE_UNSET_DIR", raising=False)
    env = make_env(environment_dir=task_env)
    with pytest.raises(ComposeVolumeError, match="PROBE_UNSET_DIR: point it at the data"):
        asyncio.run(env.start(force_build=False))
