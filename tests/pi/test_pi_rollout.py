"""Standalone rollouts end to end: the real Pi 0.73.1, a scripted streaming provider, real containers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pi_support import KEY_ENV, call, rollout_containers, say, turns
from support.openai_server import Reply, ToolCall

from atoll.pi import install, session
from atoll.pi.record import RolloutRecord
from atoll.pi.rollout import RolloutRefused, RolloutRequest, run
from atoll.pi.settings import PiSettings

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(180)]

SOLVE = "print(sum(int(line) for line in open('numbers.txt')))\n"


def settings(provider, **extra) -> PiSettings:
    return PiSettings(base_url=provider.base_url, model="scripted", api_key_env=KEY_ENV, **extra)


def rollout(provider, run_dir: Path, **fields) -> object:
    request_fields = {"prompt": "Sum the numbers in numbers.txt.", "language": "python"}
    request_fields.update(fields)
    overrides = request_fields.pop("settings", {})
    return run(
        RolloutRequest(settings=settings(provider, **overrides), run_dir=run_dir, **request_fields)
    )


def files_holding(text: str, *roots: Path) -> list[Path]:
    """Every file under `roots` whose bytes contain `text`."""
    needle = text.encode()
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                found.append(path)
    return found


@pytest.fixture
def ready(pi, docker_client, rollout_image, provider, api_key):
    """Everything a rollout needs: Pi, the engine, the image, a provider, a key."""
    return provider


def test_a_program_written_and_run_lives_in_the_container(
    ready, docker_client, rollout_image, api_key, tmp_path
):
    provider = ready
    provider.script = turns(
        call("write", path="solve.py", content=SOLVE),
        call("bash", command="python3 solve.py > out.txt; cat out.txt; id -u; pwd"),
        call("bash", command="node -e 'console.log(6 * 7)'"),
        call("edit", path="solve.py", edits=[{"oldText": "sum(", "newText": "max("}]),
        call("bash", command="python3 solve.py; exit 3"),
        say("The sum is 42."),
    )
    run_dir = tmp_path / "rollout"
    record = rollout(provider, run_dir, files={"numbers.txt": "40\n2\n"})

    assert (record.outcome, record.scorable, record.disqualified) == ("completed", True, False)
    assert (record.stop_reason, record.final_text, record.turns) == ("stop", "The sum is 42.", 6)
    # The bridge's own record of what the container did.
    ops = [(c["op"], c.get("path") or c.get("command")) for c in record.commands]
    assert ops == [
        ("write", "/workspace/solve.py"),
        ("bash", "python3 solve.py > out.txt; cat out.txt; id -u; pwd"),
        ("bash", "node -e 'console.log(6 * 7)'"),
        ("read", "/workspace/solve.py"),
        ("write", "/workspace/solve.py"),
        ("bash", "python3 solve.py; exit 3"),
    ]
    bash = [c for c in record.commands if c["op"] == "bash"]
    assert (bash[0]["exit_code"], bash[0]["stdout"]) == (0, "42\n10001\n/workspace\n")
    assert (bash[1]["exit_code"], bash[1]["stdout"]) == (0, "42\n")
    assert (bash[2]["exit_code"], bash[2]["stdout"]) == (3, "40\n")
    assert record.commands[4]["content"] == SOLVE.replace("sum(", "max(")
    # Pi's view of the same calls: arguments and results, the failing command an error.
    assert [c["name"] for c in record.tool_calls] == ["write", "bash", "bash", "edit", "bash"]
    assert record.tool_calls[1]["result"].startswith("42\n10001")
    assert record.tool_calls[4]["is_error"] is True
    assert "Command exited with code 3" in record.tool_calls[4]["result"]
    # The files were made in the container's workspace: only its copy holds them.
    assert (run_dir / "workspace" / "out.txt").read_text() == "42\n"
    assert {f["path"] for f in record.workspace_files} == {"numbers.txt", "solve.py", "out.txt"}
    assert files_holding("print(max(", run_dir / "pi") == []
    assert not any(p.name in ("solve.py", "out.txt") for p in (run_dir / "pi").rglob("*"))
    # The raw event stream, usage, and the receipts.
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[0]["type"] == "session" and events[-1]["type"] == "agent_end"
    updates = [e for e in events if e["type"] == "message_update"]
    assert len(updates) == record.pi["compacted_updates"] > 0
    assert not any("message" in e or "partial" in e["assistantMessageEvent"] for e in updates)
    assert record.usage["llm_calls"] == 6 and record.usage["output_tokens"] == 5 * 12 + 6
    assert record.container["image_id"] == rollout_image.image_id
    assert record.container["lacks"] == ["julia"]
    assert record.container["cleanup"]["verified_gone"] is True
    assert rollout_containers(docker_client, record.rollout_id) == []
    assert record.hashes.pi_version == install.PI_VERSION == "0.73.1"
    extension = session.extension_path().read_bytes()
    assert record.hashes.extension_sha256 == hashlib.sha256(extension).hexdigest()
    assert "Current working directory: /workspace" in record.system_prompt
    assert {t["name"] for t in record.tools} == {"read", "write", "edit", "bash"}
    # What the provider got: a streamed request with Pi's four tools and the key as bearer.
    first = provider.chat_requests()[0]
    assert first.body["stream"] is True
    assert {t["function"]["name"] for t in first.body["tools"]} == {"read", "write", "edit", "bash"}
    assert first.headers["authorization"] == f"Bearer {api_key}"
    assert RolloutRecord.read(run_dir) == record


def test_the_api_key_is_nowhere_on_disk(ready, pi, api_key, tmp_path):
    provider = ready
    provider.script = turns(call("bash", command="env; cat /proc/1/environ"), say("done"))
    run_dir = tmp_path / "rollout"
    record = rollout(provider, run_dir)
    assert record.outcome == "completed"
    assert provider.chat_requests()[0].headers["authorization"] == f"Bearer {api_key}"
    assert KEY_ENV not in record.commands[0]["stdout"]  # the container never sees it
    # The rollout dir (records, Pi's config dir and HOME) and Pi's install hold no key.
    assert (run_dir / "pi" / "config" / "models.json").is_file()
    assert files_holding(api_key, run_dir, pi.root) == []


def test_an_absolute_path_read_disqualifies_though_the_container_blocked_it(ready, tmp_path):
    provider = ready
    marker = f"atoll-escape-{tmp_path.name}"
    provider.script = turns(
        call("read", path="/etc/shadow"),
        call("bash", command="cat ~/.profile; ls .."),
        call("write", path=f"/tmp/{marker}", content="escaped?"),
        say("done"),
    )
    record = rollout(provider, tmp_path / "rollout")

    assert record.outcome == "completed" and record.disqualified is True
    hits = [(h["tool"], h["kind"], h["text"]) for h in record.audit.hits]
    assert hits == [
        ("read", "absolute", "/etc/shadow"),
        ("bash", "home", "~/.profile"),
        ("bash", "parent", ".."),
        ("write", "absolute", f"/tmp/{marker}"),
    ]
    # The container refused the read (the rollout user may not read it) ...
    assert record.tool_calls[0]["is_error"] is True
    assert "EACCES" in record.tool_calls[0]["result"]
    assert record.commands[0]["error"].startswith("EACCES")
    # ... and the write went to the container's own /tmp, never the host's.
    assert record.commands[-1]["op"] == "write" and "error" not in record.commands[-1]
    assert not (Path("/tmp") / marker).exists()


def test_the_container_has_no_network(ready, tmp_path):
    provider = ready
    port = provider.port
    probe = (
        f"curl -sS --max-time 5 http://127.0.0.1:{port}/v1/models; echo curl=$?; "
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)\" "
        "2>&1 | tail -1; ls /sys/class/net"
    )
    provider.script = turns(call("bash", command=probe), say("no network"))
    record = rollout(provider, tmp_path / "rollout")

    out = record.commands[0]["stdout"]
    assert "curl=7" in out  # curl: could not connect
    assert "Connection refused" in out  # the host's loopback service is not the container's
    assert out.strip().splitlines()[-1] == "lo"  # no interface but loopback
    assert not any(r.path.endswith("/models") for r in provider.requests)


def test_a_provider_error_is_an_infrastructure_error(ready, docker_client, tmp_path):
    provider = ready
    provider.script = lambda request: Reply(status=500, error_message="upstream exploded")
    record = rollout(provider, tmp_path / "rollout")

    assert (record.outcome, record.scorable, record.stop_reason) == ("error", False, "error")
    assert "upstream exploded" in record.error
    assert record.container["cleanup"]["verified_gone"] is True
    assert rollout_containers(docker_client, record.rollout_id) == []


def test_the_wall_clock_aborts_pi_and_kills_the_command(ready, docker_client, tmp_path):
    provider = ready
    provider.script = turns(call("bash", command="sleep 120; echo never"), say("late"))
    # Long enough for Pi to start and the command to run on a busy machine.
    record = rollout(provider, tmp_path / "rollout", settings={"timeout_s": 12})

    assert (record.outcome, record.limit, record.stop_reason) == ("limit", "timeout", "aborted")
    assert record.scorable is True
    assert [c["op"] for c in record.commands] == ["cancel", "bash"]  # the cancel, then its command
    command = record.commands[1]
    assert command["cancelled"] is True and command["stdout"] == ""
    assert command["duration_s"] < 30
    assert record.timings["total_s"] < 60
    assert record.container["cleanup"]["verified_gone"] is True
    assert rollout_containers(docker_client, record.rollout_id) == []


def test_max_turns_and_output_size_end_pi_cleanly(ready, tmp_path):
    provider = ready
    provider.script = turns(call("bash", command="echo again"))  # never stops by itself
    record = rollout(provider, tmp_path / "turns", settings={"max_turns": 3})
    assert (record.outcome, record.limit, record.stop_reason) == ("limit", "max_turns", "aborted")
    assert len(record.commands) == 3 and record.pi["terminated"] is False

    provider.script = turns(say("x" * 200_000))
    record = rollout(provider, tmp_path / "output", settings={"max_output_bytes": 100_000})
    assert (record.outcome, record.limit) == ("limit", "output")
    assert record.container["cleanup"]["verified_gone"] is True


def test_a_command_timeout_is_the_models_error_not_the_runs(ready, tmp_path):
    provider = ready
    provider.script = turns(call("bash", command="sleep 30", timeout=2), say("gave up"))
    record = rollout(provider, tmp_path / "rollout")
    assert record.outcome == "completed"
    assert record.commands[0]["timed_out"] is True
    assert "timed out after 2 seconds" in record.tool_calls[0]["result"]


def test_a_julia_rollout_is_refused_before_anything_runs(ready, tmp_path):
    provider = ready
    with pytest.raises(RolloutRefused) as refused:
        rollout(provider, tmp_path / "rollout", language="julia")
    assert "lacks Julia" in str(refused.value) and "\n" not in str(refused.value)
    assert provider.requests == [] and not (tmp_path / "rollout").exists()


def test_only_named_files_go_in_and_bad_names_are_refused(ready, tmp_path):
    provider = ready
    provider.script = turns(call("bash", command="find . -type f | sort"), say("ok"))
    source = tmp_path / "input.txt"
    source.write_text("data\n")
    record = rollout(provider, tmp_path / "rollout", files={"in/data.txt": source, "note.md": "hi"})
    assert record.commands[0]["stdout"] == "./in/data.txt\n./note.md\n"
    assert [f["path"] for f in record.files_in] == ["in/data.txt", "note.md"]
    for bad in ("../x", "/etc/x", "a//b"):
        with pytest.raises(ValueError, match="must be relative"):
            rollout(provider, tmp_path / "bad", files={bad: "x"})


def test_the_container_is_hardened_as_promised(ready, tmp_path):
    provider = ready
    probe = "; ".join(
        [
            "id -u",
            "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | tr -s '\\t' ' '",
            # cgroup v2, else v1
            "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
            "cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max",
            "cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)"
            " $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)",
            "touch /etc/x 2>&1 | sed 's/.*: //'",
            "touch /workspace/ok && echo workspace writable",
            "findmnt -n -o TARGET,OPTIONS /workspace | cut -d, -f1",
            "ulimit -f",
        ]
    )
    provider.script = turns(call("bash", command=probe), say("checked"))
    record = rollout(provider, tmp_path / "rollout")

    lines = record.commands[0]["stdout"].splitlines()
    assert lines == [
        "10001",
        "CapEff: 0000000000000000",
        "NoNewPrivs: 1",
        str(2048 * 1024 * 1024),
        "256",
        "100000 100000",
        "Read-only file system",
        "workspace writable",
        "/workspace rw",
        str(256 * 1024 * 1024 // 1024),  # ulimit -f counts KiB
    ]
    assert record.container["network"] == "none" and record.container["image_id"].startswith(
        "sha256:"
    )


def test_thinking_and_a_system_prompt_file_reach_the_provider(ready, tmp_path):
    provider = ready
    prompt_file = tmp_path / "system.md"
    prompt_file.write_text("You solve Project Euler problems. Be brief.")
    provider.script = turns(say("ok"))
    record = rollout(
        provider,
        tmp_path / "rollout",
        settings={"system_prompt": prompt_file, "thinking": "high"},
    )
    assert record.outcome == "completed"
    body = provider.chat_requests()[0].body
    system = body["messages"][0]
    assert system["role"] in ("system", "developer")
    assert system["content"].startswith("You solve Project Euler problems. Be brief.")
    assert "Current working directory: /workspace" in system["content"]
    assert body["reasoning_effort"] == "high"
    assert record.system_prompt == system["content"]
    assert record.settings["thinking"] == "high"
    # The same configuration hashes the same, whatever the run's private paths.
    again = rollout(
        provider, tmp_path / "again", settings={"system_prompt": prompt_file, "thinking": "high"}
    )
    assert again.hashes.config_sha256 == record.hashes.config_sha256


def test_seq_follows_the_order_pi_started_two_parallel_calls(ready, tmp_path):
    """Pi 0.73.1 runs one message's tool calls in parallel: the quick write ends first, yet
    `seq` puts the slow command (started first) first; `completed_seq` keeps the end order."""
    provider = ready
    provider.script = turns(
        Reply(
            tool_calls=(
                ToolCall("bash", {"command": "sleep 2; echo slow-done"}),
                ToolCall("write", {"path": "solve.py", "content": SOLVE}),
            ),
            completion_tokens=12,
        ),
        say("done"),
    )
    record = rollout(provider, tmp_path / "rollout")
    assert record.outcome == "completed"
    assert [c["name"] for c in sorted(record.tool_calls, key=lambda c: c["start_order"])] == [
        "bash",
        "write",
    ]
    ops = [(c["op"], c["seq"], c["completed_seq"]) for c in record.commands]
    assert ops == [("bash", 1, 2), ("write", 2, 1)]
    assert record.commands[0]["stdout"].strip() == "slow-done"
