"""The atoll-local environment through Harbor's BaseEnvironment interface."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest
from harbor.models.task.config import NetworkMode
from support.processes import processes_of_uid

from atoll.core.environments import dockerfile
from atoll.core.environments.local import LocalEnvironment
from atoll.core.sandbox.bwrap_argv import NAMESPACE_ROOT_CAPS
from atoll.core.sandbox.cgroups import created_groups

pytestmark = pytest.mark.timeout(120)


def run(make_env, scenario, **env_options):
    """Start an environment, run `scenario(env)`, always stop it, return its value."""

    box_paths = ("/app", "/logs", "/tests", "/solution", "/installed-agent", "/opt/extra")
    absent = [p for p in box_paths if not os.path.lexists(p)]

    async def main():
        # Groups this process already holds (a judge of an earlier test in this worker keeps
        # its sessions' next groups made) are not this environment's to remove.
        before = set(created_groups())
        env: LocalEnvironment = make_env(**env_options)
        await env.start(force_build=False)
        try:
            return await scenario(env)
        finally:
            root = env.root.path
            uids = env.root.uids
            await env.stop(delete=True)
            assert not root.exists()
            assert not processes_of_uid(uids, zombies=True)
            assert set(created_groups()) - before == set()

    value = asyncio.run(main())
    assert [p for p in absent if os.path.lexists(p)] == [], "the box created paths on the host"
    return value


def test_box_layout_dockerfile_and_users(make_env):
    async def scenario(env):
        root = await env.exec("id -u; id -un; pwd; cat seed.txt; echo $GREETING")
        agent = await env.exec("id -u; id -un; echo $HOME", user="agent")
        dirs = await env.exec(
            "for d in /app /logs/agent /logs/verifier /tests /solution /installed-agent /tmp; "
            "do test -d $d || echo missing $d; done"
        )
        return root, agent, dirs

    root, agent, dirs = run(make_env, scenario)
    root_uid, root_name, cwd, seed, greeting = root.stdout.split()
    # Root is id 0 of the trial's user namespace (an unprivileged host uid: see below).
    assert int(root_uid) == 0 and root_name == "root"
    assert (cwd, seed, greeting) == ("/app", "bubblewrap", "hello")
    agent_uid, agent_name, home = agent.stdout.split()
    assert int(agent_uid) != 0 and agent_name == "agent"
    assert home == "/home/agent"
    assert dirs.return_code == 0 and dirs.stdout is None


def test_host_private_files_are_invisible(make_env, tmp_path):
    async def scenario(env):
        checks = {}
        checkout = str(Path(__file__).resolve().parents[3])
        for path in ("/etc/shadow", "/root/.bashrc", checkout, "/var", "/srv", str(tmp_path)):
            checks[path] = await env.exec(f"test -e {path} && echo visible")
        listing = await env.exec("ls -A /root /home /etc")
        return checks, listing

    checks, listing = run(make_env, scenario)
    assert {path: r.stdout for path, r in checks.items()} == dict.fromkeys(checks)
    assert "shadow" not in listing.stdout and "ssh" not in listing.stdout


def test_network_modes(make_env):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo reached"

    async def scenario(env):
        return await env.exec(probe)

    try:
        closed = run(make_env, scenario, network=NetworkMode.NO_NETWORK)
        public = run(make_env, scenario, network=NetworkMode.PUBLIC)
    finally:
        server.close()
    assert closed.return_code != 0 and closed.stdout is None
    assert public.return_code == 0 and public.stdout == "reached\n"


@pytest.mark.slow
def test_exec_timeout_kills_the_command(make_env):
    async def scenario(env):
        with pytest.raises(RuntimeError, match="timed out after 1 seconds"):
            await env.exec("sleep 30 & sleep 30", timeout_sec=1)
        return await env.exec("echo alive")

    assert run(make_env, scenario).stdout == "alive\n"


def test_cancelled_exec_leaves_nothing_running(make_env):
    async def scenario(env):
        task = asyncio.create_task(env.exec("sleep 60"))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return processes_of_uid(env.root.uids, zombies=True)

    assert run(make_env, scenario) == []


def test_memory_limit_from_the_task(make_env):
    async def scenario(env):
        return await env.exec("python3 -c 'b = bytearray(400 * 2**20)'")

    result = run(make_env, scenario, memory_mb=128)
    assert result.return_code == 137


def test_upload_and_download_round_trip(make_env, tmp_path):
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "data.txt").write_text("payload")
    (source / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (source / "run.sh").chmod(0o755)
    single = tmp_path / "single.txt"
    single.write_text("one file")

    async def scenario(env):
        await env.upload_dir(source, "/tests")
        await env.upload_file(single, "/opt/extra/renamed.txt")
        ran = await env.exec("/tests/run.sh && cat /opt/extra/renamed.txt")
        await env.exec("mkdir -p /app/out && echo result > /app/out/r.txt")
        await env.download_dir("/app/out", tmp_path / "down")
        await env.download_file("/tests/sub/data.txt", tmp_path / "down" / "data.txt")
        return ran

    ran = run(make_env, scenario)
    assert ran.stdout == "ran\none file"
    assert (tmp_path / "down" / "r.txt").read_text() == "result\n"
    assert (tmp_path / "down" / "data.txt").read_text() == "payload"


def test_uploads_into_system_directories_are_refused(make_env, tmp_path):
    single = tmp_path / "x"
    single.write_text("x")

    async def scenario(env):
        for target in ("/etc/x", "/usr/bin/x", "/app/../etc/x"):
            with pytest.raises(ValueError, match="read-only system directories"):
                await env.upload_file(single, target)

    run(make_env, scenario)
    assert not Path("/etc/x").exists()


def test_symlinks_in_uploaded_directories_do_not_escape(make_env, tmp_path):
    source = tmp_path / "evil"
    source.mkdir()
    (source / "shadow").symlink_to("/etc/shadow")
    (source / "up").symlink_to("../../../../../../etc")
    host_canary = tmp_path / "canary"
    host_canary.write_text("host")

    async def scenario(env):
        await env.upload_dir(source, "/app/evil")
        read = await env.exec("cat /app/evil/shadow; ls /app/evil/up/shadow")
        # Content planted by the code under test: links to host paths, then a download.
        await env.exec(
            f"ln -s {host_canary} /app/evil/canary && ln -s /etc/shadow /tmp/leak "
            "&& mkdir -p /app/dl && ln -s /etc/shadow /app/dl/s && ln -s ../../.. /app/dl/up"
        )
        # An upload through a planted symlink must land inside the box, not the host.
        await env.exec("ln -s /tmp /app/evil/redirect")
        await env.upload_file(host_canary, "/app/evil/redirect/written")
        await env.download_dir("/app/dl", tmp_path / "dl")
        with pytest.raises(RuntimeError):
            await env.download_file("/tmp/leak", tmp_path / "leak")
        inside = await env.exec("cat /tmp/written")
        return read, inside

    read, inside = run(make_env, scenario)
    assert "root:" not in (read.stdout or "") and read.return_code != 0
    assert inside.stdout == "host"
    assert host_canary.read_text() == "host"
    assert not (tmp_path / "leak").exists()
    downloaded = tmp_path / "dl"
    for entry in downloaded.rglob("*"):
        assert not entry.is_symlink() or entry.resolve().is_relative_to(downloaded)


def test_dockerfile_plan(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text(
        "FROM atoll/base:bookworm\n"
        "ARG X=1\n"
        "WORKDIR /srv\n"
        "WORKDIR app\n"
        "ENV A=1 B=two\n"
        "ENV C $A-x\n"
        "COPY --chown=agent a.txt b/ ./\n"
        'COPY ["c.txt", "/opt/c.txt"]\n'
        "COPY --from=builder /out /out\n"
        "ADD https://example.invalid/x.tgz /x\n"
        "RUN apt-get update && \\\n    apt-get install -y gcc\n"
        "USER agent\n"
    )
    plan = dockerfile.parse(path)
    assert plan.workdir == "/srv/app"
    assert plan.env == {"A": "1", "B": "two", "C": "1-x"}
    assert plan.user == "agent"
    assert [(c.sources, c.dest, c.dest_is_dir, c.chown) for c in plan.copies] == [
        (("a.txt", "b/"), "/srv/app", True, "agent"),
        (("c.txt",), "/opt/c.txt", False, None),
    ]
    assert [line.split()[0] for line in plan.skipped] == ["COPY", "ADD", "RUN"]


def _capabilities(status: str) -> int:
    line = next(x for x in status.splitlines() if x.startswith("CapEff:"))
    return int(line.split(":", 1)[1], 16)


def test_runs_are_not_root_on_the_host(make_env):
    async def scenario(env):
        root = await env.exec("cat /proc/self/uid_map /proc/self/gid_map /proc/self/status")
        agent = await env.exec("cat /proc/self/status", user="agent")
        return root, agent, env.root.uids

    root, agent, uids = run(make_env, scenario)
    # Every id of the box is one of the trial's unprivileged host uids: root (0) included.
    uid_map, gid_map = root.stdout.splitlines()[:2]
    assert uid_map.split() == gid_map.split() == ["0", str(uids.start), str(len(uids))]
    assert uids.start >= 200_000
    # Root keeps a container's capabilities (in that namespace only); other users none.
    expected = 0
    for name in NAMESPACE_ROOT_CAPS:
        expected |= 1 << CAPABILITY_NUMBERS[name]
    assert _capabilities(root.stdout) == expected
    assert _capabilities(agent.stdout) == 0
    assert os.getuid() == 0  # the host side runs as root; the box never does


# Linux capability numbers (include/uapi/linux/capability.h) of the namespace root's set.
CAPABILITY_NUMBERS = {
    "chown": 0,
    "dac_override": 1,
    "fowner": 3,
    "fsetid": 4,
    "kill": 5,
    "setgid": 6,
    "setuid": 7,
    "setpcap": 8,
    "net_bind_service": 10,
    "sys_chroot": 18,
    "audit_write": 29,
    "setfcap": 31,
}


def test_root_acts_as_root_over_the_trial_users_only(make_env):
    """A verifier can drop to another trial uid, chown to it and kill it; never beyond the trial."""

    async def scenario(env):
        await env.exec("id", user="agent")  # the agent's account exists (id 1)
        switched = await env.exec(
            "mkdir /tmp/drop && chown 15:15 /tmp/drop && "
            "setpriv --reuid 15 --regid 15 --clear-groups sh -c 'id -u; touch /tmp/drop/x' && "
            "stat -c %u /tmp/drop/x"
        )
        unmapped = await env.exec("setpriv --reuid 4242 --regid 4242 --clear-groups id -u")
        killed = await env.exec(
            "setpriv --reuid 1 --regid 1 --clear-groups sleep 30 & sleep 0.3; "
            "kill -9 $! && wait $!; echo status=$?"
        )
        return switched, unmapped, killed, env.root.uids

    switched, unmapped, killed, uids = run(make_env, scenario)
    assert switched.return_code == 0 and switched.stdout.split() == ["15", "15"]
    assert unmapped.return_code != 0  # ids outside the trial's block do not exist in the box
    assert killed.stdout.strip().endswith("status=137")


def test_workdir_is_created_as_the_user_in_effect(make_env, tmp_path):
    """As BuildKit does: a missing WORKDIR belongs to the USER of that point of the Dockerfile."""
    environment = tmp_path / "environment"
    environment.mkdir()
    (environment / "Dockerfile").write_text(
        "FROM atoll/base:bookworm\nWORKDIR /srv/built-by-root\nUSER agent\nWORKDIR /workspace\n"
    )

    async def scenario(env):
        owners = await env.exec("stat -c '%n %U' /srv/built-by-root /workspace; pwd")
        wrote = await env.exec("echo ok > /workspace/solution.py && cat solution.py")
        return owners, wrote

    owners, wrote = run(make_env, scenario, environment_dir=environment)
    assert owners.stdout.splitlines() == [
        "/srv/built-by-root root",
        "/workspace agent",
        "/workspace",
    ]
    assert wrote.stdout == "ok\n"
