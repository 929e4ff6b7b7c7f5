"""The trainer's side of `atoll pi train shell`: a cookbook Env relaying Pi's tools.

Run by the managed interpreter beside train.py. The workspace, the rules and
the answer live in the launching atoll process (`atoll.pi_train.shell.episode`);
this Env renders the conversation, parses the policy's tool calls with the
cookbook renderer, posts each to the run's scoring service and shows the
result back as a tool message. The episode ends when a turn has no tool call
(its text is the final response), or at a hard bound: policy turns, tool
calls, or the episode's tokens (prompt and turns together).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tinker
from tinker_cookbook import renderers
from tinker_cookbook.exceptions import AllTrajectoriesFailedError
from tinker_cookbook.rl.types import Env, StepResult


class ShellInfrastructureFailure(AllTrajectoriesFailedError):
    """The sandbox could not run a program: the group leaves the update (no reward exists)."""


class EpisodeBoundTooSmall(ValueError):
    """The episode's token bound cannot hold a task's first turn: the run's bounds are wrong.

    Raised before anything is sampled; the trainer reports it as a refusal of the run's
    settings (exit status `REFUSED`), not as a failed training.
    """


@dataclass
class ShellEnv(Env):
    task: dict[str, Any]
    renderer: Any
    scorer: Any
    job: dict[str, Any]
    phase: str = "train"
    messages: list[Any] = field(default_factory=list)
    episode: str = ""
    turns: int = 0

    @property
    def stop_condition(self) -> Any:
        return self.renderer.get_stop_sequences()

    async def initial_observation(self) -> tuple[tinker.ModelInput, Any]:
        started = await self.scorer.post(
            "/shell/start", {"task": self.task["id"], "phase": self.phase}
        )
        self.episode = started["episode"]
        prefix = self.renderer.create_conversation_prefix_with_tools(
            tools=self.job["shell_tools"], system_prompt=self.job["system_prompt"]
        )
        self.messages = [*prefix, {"role": "user", "content": self.task["prompt"]}]
        observation = self.renderer.build_generation_prompt(self.messages)
        needed = observation.length + int(self.job["max_tokens"])
        if needed > int(self.job["bounds"]["episode_tokens"]):
            raise EpisodeBoundTooSmall(
                f"--max-episode-tokens {self.job['bounds']['episode_tokens']} cannot hold the "
                f"first turn of {self.task['id']} (its prompt is {observation.length} tokens, "
                f"--max-tokens {self.job['max_tokens']}): give at least {needed}"
            )
        return observation, self.stop_condition

    async def step(self, action: list[int], *, extra: Any = None) -> StepResult:
        bounds = self.job["bounds"]
        message, _termination = self.renderer.parse_response(action)
        text = renderers.get_text_content(message)
        self.turns += 1
        calls = message.get("tool_calls") or []
        if not calls:
            return await self._finish(text, "answered")
        self.messages.append(message)
        budget_left = 1
        for call in calls:
            result = await self.scorer.post(
                "/shell/tool",
                {
                    "episode": self.episode,
                    "name": call.function.name,
                    "arguments": call.function.arguments,
                    "id": call.id or "",
                },
            )
            if result.get("infrastructure"):
                raise ShellInfrastructureFailure(
                    f"task {self.task['id']}: the sandbox could not run a program; "
                    "its group is left out of this update"
                )
            self.messages.append(
                {
                    "role": "tool",
                    "content": result["content"],
                    "tool_call_id": call.id or "",
                    "name": call.function.name,
                }
            )
            budget_left = int(result["budget_left"])
        if self.turns >= int(bounds["steps"]):
            return await self._finish(text, "steps")
        if budget_left <= 0:
            return await self._finish(text, "tool_calls")
        observation = self.renderer.build_generation_prompt(self.messages)
        if observation.length + int(self.job["max_tokens"]) > int(bounds["episode_tokens"]):
            return await self._finish(text, "tokens")
        return StepResult(
            reward=0.0,
            episode_done=False,
            next_observation=observation,
            next_stop_condition=self.stop_condition,
            metrics={},
        )

    async def _finish(self, text: str, end: str) -> StepResult:
        result = await self.scorer.post(
            "/shell/finish",
            {"episode": self.episode, "text": text, "end": end, "turns": self.turns},
        )
        metrics = {k: float(v) for k, v in result["metrics"].items()}
        metrics["turns"] = float(self.turns)
        return StepResult(
            reward=float(result["reward"]),
            episode_done=True,
            next_observation=tinker.ModelInput.empty(),
            next_stop_condition=self.stop_condition,
            metrics=metrics,
        )
