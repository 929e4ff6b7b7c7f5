"""The trainer's hidden-variant Env against tinker-cookbook's tool environment, turn by turn.

The design follows the cookbook's recipes/code_rl, whose episodes come from
`build_agent_tool_env` (a `check_solution` tool, `max_turns`, a trajectory
token bound). atoll's `HiddenEnv` is its own (see the README's "Differences
from the reference"); this test holds it to the cookbook where the two must
agree. The managed interpreter builds both over the tiny model's tokenizer
and the qwen3 renderer: the cookbook's env with `submit_solution` as its
tool (the same spec, posting to the same `/check` route), the same turn
budget (`max_turns` = the submissions) and the same bound
(`max_trajectory_tokens`, `max_generation_tokens` = `max_tokens`,
`context_overflow_reward`). The policy's turns are scripted token sequences
(the policy is what is replaced); the checks run in the real sandbox through
the real scoring service. Both envs get the same turns and must give the
same prompt tokens, end at the same turn, and end an overflowing trajectory
the same way, with the same reward and stop metrics.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from atoll.core.sandbox.fusion import EmbeddedFusionServer
from atoll.pi_train import env as managed_env
from atoll.pi_train.hidden.families import FAMILIES
from atoll.pi_train.hidden.harness import check_submission
from atoll.pi_train.training import run
from atoll.pi_train.training.scoring import ScoringService
from atoll.pi_train.training.tasks import HIDDEN_SYSTEM_PROMPT, hidden_tasks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

MAX_TOKENS = 16

_DRIVER = """
import asyncio, json, os, sys
sys.path.insert(0, sys.argv[1])
from tinker_cookbook import renderers
from tinker_cookbook.rl.types import InitialObservationOverflow
from tinker_cookbook.tokenizer_utils import get_tokenizer
from tinker_cookbook.tool_use import build_agent_tool_env
from tinker_cookbook.tool_use.types import ToolResult
from train import SUBMIT_SPEC, SUBMIT_TOOL, HiddenEnv, Scorer, repair_feedback

job = json.loads(sys.stdin.read())
tokenizer = get_tokenizer(job["base_model"])
renderer = renderers.get_renderer("qwen3", tokenizer)
scorer = Scorer(job["scorer_url"], os.environ["ATOLL_SCORER_TOKEN"])


class SubmitSolution:
    # code_rl's check_solution in the cookbook's Tool protocol, as `submit_solution`.
    name = SUBMIT_TOOL
    description = SUBMIT_SPEC["description"]
    parameters_schema = SUBMIT_SPEC["parameters"]

    def __init__(self):
        self.last = None

    def to_spec(self):
        return SUBMIT_SPEC

    async def run(self, call):
        body = {"task": job["task"]["id"], "code": call.arguments["code"]}
        self.last = await scorer.post("/check", body)
        passed, total = self.last["passed"], self.last["total"]
        message = {"role": "tool", "content": repair_feedback(passed, total),
                   "tool_call_id": call.call_id or "", "name": SUBMIT_TOOL}
        return ToolResult(messages=[message], should_stop=passed == total)


def cookbook_env(bound):
    tool = SubmitSolution()
    prefix = renderer.create_conversation_prefix_with_tools(
        tools=[tool.to_spec()], system_prompt=job["system_prompt"])

    async def reward_fn(history):
        if tool.last is None:
            return 0.0, {}
        passed, total = tool.last["passed"], tool.last["total"]
        return passed / total + (job["all_cases_bonus"] if passed == total else 0.0), {}

    return build_agent_tool_env(
        renderer=renderer, tools=[tool],
        initial_messages=[*prefix, {"role": "user", "content": job["task"]["prompt"]}],
        reward_fn=reward_fn, max_turns=job["max_submissions"], max_trajectory_tokens=bound,
        max_generation_tokens=job["max_tokens"],
        context_overflow_reward=job["context_overflow_reward"])


def atoll_env(bound):
    return HiddenEnv(job["task"], renderer, scorer, max_submissions=job["max_submissions"],
                     all_cases_bonus=job["all_cases_bonus"], system_prompt=job["system_prompt"],
                     max_tokens=job["max_tokens"], max_trajectory_tokens=bound,
                     context_overflow_reward=job["context_overflow_reward"])


async def play(env, turns):
    first = await env.initial_observation()
    if isinstance(first, InitialObservationOverflow):
        return {"overflow": {"reward": first.reward, "metrics": first.metrics}}
    observation, _stop = first
    steps = []
    for text in turns:
        action = tokenizer.encode(text + "<|im_end|>", add_special_tokens=False)
        result = await env.step(action)
        steps.append({"reward": result.reward, "done": result.episode_done,
                      "metrics": {k: v for k, v in result.metrics.items()},
                      "next": result.next_observation.to_ints()})
        if result.episode_done:
            break
    return {"prompt": observation.to_ints(), "steps": steps}


async def main():
    first = atoll_env(10**9)
    observation, _ = await first.initial_observation()
    length = observation.length
    out = {"first_prompt_tokens": length}
    for scenario in job["scenarios"]:
        bound = length + job["max_tokens"] + scenario["spare"]
        out[scenario["name"]] = {
            "atoll": await play(atoll_env(bound), scenario["turns"]),
            "cookbook": await play(cookbook_env(bound), scenario["turns"]),
        }
    print(json.dumps(out))

asyncio.run(main())
"""


def _submit(code: str) -> str:
    call = {"name": "submit_solution", "arguments": {"code": code}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


WRONG = _submit("def solve(factors, limit):\n    return 1\n")
RIGHT = _submit(FAMILIES["multiples"].solutions["python"])
PLAIN = "```python\ndef solve(factors, limit):\n    return 1\n```"
ROOMY = 10**6  # far more than any of these trajectories needs


def _play(tiny_model: Path, scenarios: list[dict]) -> dict:
    managed = managed_env.installed()
    assert managed is not None  # the tiny_model fixture built it
    task = hidden_tasks(("python",), 1)[0]
    assert task.instance.family == "multiples"
    with EmbeddedFusionServer(workers=2) as sandbox:

        def check(body: dict) -> dict:
            result = check_submission(str(body["code"]), "python", task.instance, sandbox.url)
            return result.to_json()

        with ScoringService({"/check": check}) as service:
            job = {
                "task": task.public(),
                "base_model": str(tiny_model),
                "scorer_url": service.url,
                "system_prompt": HIDDEN_SYSTEM_PROMPT,
                "max_tokens": MAX_TOKENS,
                "max_submissions": run.MAX_SUBMISSIONS,
                "all_cases_bonus": run.ALL_CASES_BONUS,
                "context_overflow_reward": run.CONTEXT_OVERFLOW_REWARD,
                "scenarios": scenarios,
            }
            done = subprocess.run(
                [
                    str(managed.python),
                    "-c",
                    _DRIVER,
                    str(managed_env.managed_script("train").parent),
                ],
                input=json.dumps(job),
                env={**os.environ, "ATOLL_SCORER_TOKEN": service.token, "HF_HUB_OFFLINE": "1"},
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            assert service.errors == []
    return dict(json.loads(done.stdout.splitlines()[-1]))


def test_the_hidden_env_agrees_with_the_cookbooks_tool_env(tiny_model: Path) -> None:
    played = _play(
        tiny_model,
        [
            {"name": "budget", "turns": [WRONG, WRONG, WRONG], "spare": ROOMY},
            {"name": "solved", "turns": [RIGHT, WRONG], "spare": ROOMY},
            # The first turn fits exactly (the bound is not exceeded); the repair turn would not.
            {"name": "overflow", "turns": [WRONG, WRONG], "spare": 0},
            # One token short of the first turn: the episode ends before it is sampled.
            {"name": "no_room", "turns": [WRONG], "spare": -1},
            {"name": "plain", "turns": [PLAIN, WRONG], "spare": ROOMY},
        ],
    )

    # The same token prefix: the tool-aware system prompt and the task, rendered alike.
    budget = played["budget"]
    assert budget["atoll"]["prompt"] == budget["cookbook"]["prompt"]
    assert len(budget["atoll"]["prompt"]) == played["first_prompt_tokens"]

    # The same turn budget: two submissions, the repair prompt alike, the third never asked for.
    for side in ("atoll", "cookbook"):
        assert [s["done"] for s in budget[side]["steps"]] == [False, True], side
    assert budget["atoll"]["steps"][0]["next"] == budget["cookbook"]["steps"][0]["next"]
    assert budget["atoll"]["steps"][-1]["reward"] == budget["cookbook"]["steps"][-1]["reward"]
    # A submission that passes everything ends the episode in both, with the full reward.
    for side in ("atoll", "cookbook"):
        assert [(s["done"], s["reward"]) for s in played["solved"][side]["steps"]] == [(True, 2.0)]

    # Reaching the bound: the episode ends where the cookbook ends it, as it ends it.
    overflow = played["overflow"]
    for side in ("atoll", "cookbook"):
        [step] = overflow[side]["steps"]
        assert step["done"] and step["reward"] == pytest.approx(run.CONTEXT_OVERFLOW_REWARD), side
        assert step["metrics"]["context_overflow"] == 1.0
        assert step["metrics"]["stop/context_overflow"] == 1.0
    no_room = played["no_room"]
    assert no_room["atoll"] == no_room["cookbook"]
    assert no_room["atoll"]["overflow"] == {
        "reward": pytest.approx(run.CONTEXT_OVERFLOW_REWARD),
        "metrics": {"max_tokens_reached": 1.0, "stop/max_tokens": 1.0},
    }

    # The one deliberate difference (README): a turn without a tool call is still a
    # submission here, checked and repairable; the cookbook ends the episode on it.
    plain = played["plain"]
    assert [s["done"] for s in plain["atoll"]["steps"]] == [False, True]
    assert plain["atoll"]["steps"][0]["metrics"]["used_tool"] == 0.0
    assert [s["done"] for s in plain["cookbook"]["steps"]] == [True]
