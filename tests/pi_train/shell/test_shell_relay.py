"""The trainer's shell Env, driven by a scripted policy: tool calls relayed, results shown, reward.

The tiny model almost never emits a tool call, so the training run alone
would leave the relay untried. Here the managed interpreter runs the real
`ShellEnv` with tinker-cookbook's qwen3 renderer over the tiny model's
tokenizer, and the policy's turns are scripted token sequences (the policy
is what is replaced, as a scripted model server replaces a provider). The
workspace, the sandbox and the scoring service are the real ones.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from atoll.core.sandbox.fusion import EmbeddedFusionServer
from atoll.pi_train import env as managed_env
from atoll.pi_train.shell.episode import TOOL_SPECS, Bounds, fusion_runner
from atoll.pi_train.shell.families import FAMILIES
from atoll.pi_train.shell.train import SYSTEM_PROMPT, EpisodeStore, ShellTask
from atoll.pi_train.training.scoring import ScoringService

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

INSTANCE = FAMILIES["weighted-checksum"].instance("train", 1)
ANSWER = str(INSTANCE.answer)
PROGRAM = f"""lines = open({INSTANCE.params["file"]!r}).read().split("\\n")
if lines and lines[-1] == "":
    lines.pop()
start, modulus = {INSTANCE.params["start"]}, {INSTANCE.params["modulus"]}
print(sum((start + i) * sum(l.encode()) for i, l in enumerate(lines)) % modulus)
"""

_DRIVER = """
import asyncio, json, os, sys
sys.path.insert(0, sys.argv[1])
from tinker_cookbook import renderers
from tinker_cookbook.tokenizer_utils import get_tokenizer
from train import Scorer
from shell_episode import ShellEnv

job = json.loads(sys.stdin.read())
tokenizer = get_tokenizer(job["base_model"])
renderer = renderers.get_renderer("qwen3", tokenizer)
scorer = Scorer(job["scorer_url"], os.environ["ATOLL_SCORER_TOKEN"])


prefix = renderer.create_conversation_prefix_with_tools(
    tools=job["shell_tools"], system_prompt=job["system_prompt"]
)
FIRST = renderer.build_generation_prompt(
    [*prefix, {"role": "user", "content": job["task"]["prompt"]}]
).length


async def play(turns, bounds):
    if "spare" in bounds:  # room for the first turn and `spare` tokens more
        bounds = {"episode_tokens": FIRST + job["max_tokens"] + bounds.pop("spare")}
    env = ShellEnv(job["task"], renderer, scorer, {**job, "bounds": {**job["bounds"], **bounds}})
    try:
        observation, _stop = await env.initial_observation()
    except ValueError as exc:
        return {"refused": f"{type(exc).__name__}: {exc}", "first": FIRST}
    steps = []
    for text in turns:
        action = tokenizer.encode(text + "<|im_end|>", add_special_tokens=False)
        result = await env.step(action)
        steps.append({"reward": result.reward, "done": result.episode_done,
                      "metrics": result.metrics,
                      "next_tokens": result.next_observation.length})
        if result.episode_done:
            break
    tools = [m["content"] for m in env.messages if m.get("role") == "tool"]
    return {"prompt_tokens": observation.length, "steps": steps, "tool_results": tools}


async def main():
    print(json.dumps([await play(s["turns"], s["bounds"]) for s in job["scenarios"]]))

asyncio.run(main())
"""


def _call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


WRITE = _call("write", {"path": "solution.py", "content": PROGRAM})
RUN = _call("bash", {"command": "python3 solution.py"})


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    with EmbeddedFusionServer(workers=2) as server:
        yield server.url


def test_a_scripted_policy_solves_a_task_through_the_trainers_env(
    tiny_model: Path, sandbox_url: str, tmp_path: Path
) -> None:
    managed = managed_env.installed()
    assert managed is not None  # the tiny_model fixture built it
    task = ShellTask("weighted-checksum/train/1/python", INSTANCE, "python")
    bounds = Bounds(tool_calls=5)
    store = EpisodeStore(tmp_path, {task.id: task}, fusion_runner(sandbox_url), bounds)
    scenarios = [
        # write, run, answer: every part.
        {"turns": [WRITE, RUN, f"The checksum is {ANSWER}."], "bounds": {}},
        # a refused command, then the step bound ends the episode before any answer.
        {
            "turns": [WRITE, _call("bash", {"command": "cat notes.txt"}), RUN],
            "bounds": {"steps": 2},
        },
        # the tool-call budget (5, kept by the atoll side) ends it.
        {"turns": [WRITE, RUN, RUN, RUN, RUN, RUN], "bounds": {}},
        # the episode's token bound ends it: the first turn fits, the second does not.
        {"turns": [WRITE, RUN], "bounds": {"spare": 0}},
        # a bound that cannot hold the first turn: refused before anything is sampled.
        {"turns": [WRITE], "bounds": {"episode_tokens": 100}},
    ]
    routes = {"/shell/start": store.start, "/shell/tool": store.tool, "/shell/finish": store.finish}
    with ScoringService(routes) as service:
        job = {
            "task": task.public(),
            "base_model": str(tiny_model),
            "scorer_url": service.url,
            "shell_tools": TOOL_SPECS,
            "system_prompt": SYSTEM_PROMPT,
            "bounds": {"steps": bounds.steps, "episode_tokens": 100_000},
            "max_tokens": 16,
            "scenarios": scenarios,
        }
        done = subprocess.run(
            [str(managed.python), "-c", _DRIVER, str(managed_env.managed_script("train").parent)],
            input=json.dumps(job),
            env={**os.environ, "ATOLL_SCORER_TOKEN": service.token, "HF_HUB_OFFLINE": "1"},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert service.errors == []
    solved, stepped, budgeted, tokened, refused = json.loads(done.stdout.splitlines()[-1])

    assert [s["done"] for s in solved["steps"]] == [False, False, True]
    assert solved["tool_results"][0] == f"Successfully wrote {len(PROGRAM)} bytes to solution.py"
    assert solved["tool_results"][1] == f"{ANSWER}\n"  # Pi's bash result: the output alone
    final = solved["steps"][-1]
    assert final["reward"] == pytest.approx(1.4) and final["metrics"]["conjunction"] == 1.0
    assert final["metrics"]["turns"] == 3.0 and final["metrics"]["tool_calls"] == 2.0

    assert stepped["tool_results"][1].startswith(
        "Not allowed in this training workspace: the only command is"
    )
    assert len(stepped["steps"]) == 2 and stepped["steps"][-1]["done"]
    assert stepped["steps"][-1]["metrics"]["mutation"] == 1.0
    assert stepped["steps"][-1]["metrics"]["execution"] == 0.0

    assert len(budgeted["steps"]) == 5 and budgeted["steps"][-1]["done"]
    assert budgeted["steps"][-1]["metrics"]["tool_calls"] == 5.0
    assert budgeted["steps"][-1]["metrics"]["exact_output"] == 1.0
    assert budgeted["steps"][-1]["metrics"]["answer"] == 0.0

    assert len(tokened["steps"]) == 1 and tokened["steps"][0]["done"]
    first = refused["first"]
    assert refused["refused"] == (
        f"EpisodeBoundTooSmall: --max-episode-tokens 100 cannot hold the first turn of "
        f"{task.id} (its prompt is {first} tokens, --max-tokens 16): give at least {first + 16}"
    )

    rows = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    assert [r["end"] for r in rows] == ["answered", "steps", "tool_calls", "tokens"]
    assert rows[0]["conjunction"] and rows[0]["reward"] == pytest.approx(1.4)
    assert [r["refused_calls"] for r in rows] == [0, 1, 0, 0]
