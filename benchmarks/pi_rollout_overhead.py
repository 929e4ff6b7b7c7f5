"""What running Pi in a hardened container costs per rollout and per tool call.

Each rollout is the real thing (the pinned Pi, the bridge extension, a fresh
workspace and container of the rollout image on the private engine) driven
by a scripted OpenAI-compatible provider on loopback that answers at once:
five tool calls (write, bash, read, edit, bash) and a final answer. So the
time measured is atoll's and Pi's alone. Per rollout: container start (it
overlaps Pi's start), Pi's start until the extension is connected, teardown
(container removal and check, workspace copy), and the fixed overhead: the
whole rollout less its tool calls. Per tool call: the round trip Pi sees
(tool_execution_start to _end) through the bridge, next to a plain
`docker exec` of a command in the same kind of container. Targets on 2
cores: fixed overhead <= 1.5 s per rollout, <= 100 ms per tool call.

    uv run python benchmarks/pi_rollout_overhead.py [--rollouts 20] [--execs 50]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.openai_server import Reply, ScriptedOpenAIServer, ToolCall  # noqa: E402

from atoll.pi import container, image, install, workspace  # noqa: E402
from atoll.pi.rollout import RolloutRequest, run  # noqa: E402
from atoll.pi.settings import PiSettings  # noqa: E402

app = typer.Typer(add_completion=False)
console = Console(width=120)

KEY_ENV = "ATOLL_PI_BENCH_KEY"
SOLVE = "print(sum(int(x) for x in open('numbers.txt')))\n"
STEPS = (
    ToolCall("write", {"path": "solve.py", "content": SOLVE}),
    ToolCall("bash", {"command": "python3 solve.py"}),
    ToolCall("read", {"path": "solve.py"}),
    ToolCall("edit", {"path": "solve.py", "edits": [{"oldText": "sum(", "newText": "max("}]}),
    ToolCall("bash", {"command": "python3 solve.py"}),
)
FILE_BYTES = {"numbers.txt": "40\n2\n"}


def script(request: dict[str, Any]) -> Reply:
    done = sum(1 for m in request.get("messages") or [] if m.get("role") == "assistant")
    if done < len(STEPS):
        return Reply(tool_calls=(STEPS[done],))
    return Reply(content="42")


def _ms(values: list[float]) -> tuple[str, str]:
    if not values:
        return "-", "-"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.median(values) * 1000:.0f} ms", f"{p90 * 1000:.0f} ms"


def _plain_execs(client: Any, image_id: str, count: int) -> list[float]:
    """`docker exec` of `python3 solve.py` in a rollout container, one after another."""
    space = workspace.create({"numbers.txt": FILE_BYTES["numbers.txt"], "solve.py": SOLVE})
    box = container.RolloutContainer.start(
        client, image_id, space, "benchmark", container.ContainerLimits()
    )
    try:
        box.exec_sync("python3 solve.py")  # warm
        samples = []
        for _ in range(count):
            began = time.perf_counter()
            result = box.exec_sync("python3 solve.py")
            samples.append(time.perf_counter() - began)
            assert result.return_code == 0 and result.stdout == "42\n"
        return samples
    finally:
        box.remove()
        workspace.remove(space)


@app.command()
def main(rollouts: int = 20, execs: int = 50) -> None:
    pi = install.ensure(lambda line: console.print(line))
    client = container.connect()
    built = image.ensure(client, lambda line: console.print(line))
    os.environ[KEY_ENV] = "benchmark-key"
    records = []
    with ScriptedOpenAIServer(script) as provider, tempfile.TemporaryDirectory() as scratch:
        settings = PiSettings(base_url=provider.base_url, model="instant", api_key_env=KEY_ENV)
        for number in range(rollouts + 1):  # the first one warms caches and is not counted
            record = run(
                RolloutRequest(
                    prompt="Sum the numbers.",
                    settings=settings,
                    run_dir=Path(scratch) / f"r{number}",
                    language="python",
                    files=FILE_BYTES,
                )
            )
            if record.outcome != "completed" or len(record.tool_calls) != len(STEPS):
                raise SystemExit(f"rollout {number} went wrong: {record.outcome} {record.error}")
            if number:
                records.append(record)
    plain = _plain_execs(client, built.image_id, execs)

    def timing(name: str) -> list[float]:
        return [r.timings[name] for r in records if name in r.timings]

    calls: dict[str, list[float]] = {}
    for record in records:
        for index, call in enumerate(record.tool_calls):
            calls.setdefault(f"{call['name']} #{index + 1}", []).append(call["duration_s"])
    all_calls = [d for values in calls.values() for d in values]
    fixed = [r.timings["total_s"] - sum(c["duration_s"] for c in r.tool_calls) for r in records]

    table = Table(
        title=f"Pi rollout overhead: {len(records)} rollouts of {len(STEPS)} tool calls each, "
        f"instant scripted provider (Pi {pi.version}, image {built.image_id[7:19]})"
    )
    for column in ("measure", "median", "p90", "target"):
        table.add_column(column)
    rows: list[tuple[str, list[float], str]] = [
        ("rollout, whole", timing("total_s"), ""),
        ("  container start (overlaps Pi start)", timing("container_start_s"), ""),
        ("  Pi start, to extension connected", timing("pi_start_s"), ""),
        ("  teardown (remove + check + copy)", timing("teardown_s"), ""),
        ("  fixed overhead (whole - tool calls)", fixed, "<= 1500 ms"),
        ("tool call through the bridge, all", all_calls, "<= 100 ms"),
    ]
    rows += [(f"  {name}", values, "") for name, values in calls.items()]
    rows += [("plain docker exec (python3 solve.py)", plain, "")]
    for name, values, target in rows:
        median, p90 = _ms(values)
        table.add_row(name, median, p90, target)
    console.print(table)
    bridge_bash = [d for name, v in calls.items() if name.startswith("bash") for d in v]
    console.print(
        f"bash through the bridge vs plain docker exec: "
        f"{statistics.median(bridge_bash) / statistics.median(plain):.2f}x "
        f"(+{(statistics.median(bridge_bash) - statistics.median(plain)) * 1000:.0f} ms)"
    )


if __name__ == "__main__":
    app()
