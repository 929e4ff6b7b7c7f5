"""The Tinker RL trainer, run by the managed Python 3.11 interpreter.

Reads its job (JSON) on stdin: mode (`hidden` or `answer`), the tasks (ids and
prompts only — no expected value ever reaches this process), the training
settings, and the URL of the scoring service the launching `atoll pi train`
process runs on loopback. Builds tinker-cookbook Envs, EnvGroupBuilders and an
RLDataset over those tasks and runs the cookbook's own RL loop
(`tinker_cookbook.rl.train.main`) with the run directory as its log path, so
`metrics.jsonl`, `checkpoints.jsonl` and resuming are the cookbook's. The
Tinker key comes from `TINKER_API_KEY` in the environment, never from the job.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import chz
import httpx
import tinker
from pass_at_k import SOLVED, group_metrics, solved  # beside this script
from tinker_cookbook import renderers
from tinker_cookbook.exceptions import AllTrajectoriesFailedError
from tinker_cookbook.rl import train
from tinker_cookbook.rl.types import (
    STOP_METRIC_PREFIX,
    Env,
    EnvGroupBuilder,
    InitialObservationOverflow,
    Metrics,
    RLDataset,
    RLDatasetBuilder,
    StepResult,
    StopReason,
    Trajectory,
)
from tinker_cookbook.tokenizer_utils import get_tokenizer

SUBMIT_TOOL = "submit_solution"
SUBMIT_SPEC = {
    "name": SUBMIT_TOOL,
    "description": "Submit the complete source of `solve` for checking on hidden cases.",
    "parameters": {
        "type": "object",
        "properties": {"code": {"type": "string", "description": "The source."}},
        "required": ["code"],
    },
}
# tinker-cookbook's bound on a trajectory (recipes/code_rl's `max_trajectory_tokens` and
# `context_overflow_reward`, applied as its EnvFromMessageEnv applies them): a turn may start
# only while the conversation so far plus the turn's `max_tokens` fits.
MAX_TRAJECTORY_TOKENS = 32 * 1024
CONTEXT_OVERFLOW_REWARD = -0.1
# A refusal of the run's settings found by the trainer before anything is sampled: its
# exit status and the prefix of its one stderr line (atoll reports it as bad input).
REFUSED = 3
REFUSAL_PREFIX = "atoll-refusal: "
_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n(.*?)```", re.DOTALL)


class InfrastructureFailure(AllTrajectoriesFailedError):
    """A check the sandbox could not run: there is no score, so the whole group leaves the update.

    A reward of 0 here would be centred against its group's real scores and
    push the policy away from a submission nobody judged. The cookbook's
    rollout pipeline skips a group whose rollout raises
    `AllTrajectoriesFailedError`, whatever the rollout strategy, so raising
    this drops the group; the launching process counts it apart in
    `infrastructure_failures.jsonl` and the summary.
    """


class Scorer:
    """The launching process's scoring service: checks, rewards and progress, over loopback."""

    def __init__(self, url: str, token: str) -> None:
        self._client = httpx.AsyncClient(
            base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=600
        )

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self._client.post(path, json=body)
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result


def repair_feedback(passed: int, total: int) -> str:
    """All the policy learns of a check that fell short: the counts, and that it may repair."""
    return (
        f"{passed} of {total} hidden cases passed. "
        "You have one more submission: fix `solve` and submit it again."
    )


def last_code_block(text: str) -> str:
    """The last fenced code block of a message, else the whole message."""
    blocks = _FENCE.findall(text)
    return blocks[-1] if blocks else text


@dataclass
class HiddenEnv(Env):
    """One hidden-variant episode: submit a function, get aggregate counts, one repair attempt.

    The policy submits with the `submit_solution` tool; a turn without a tool
    call submits its last fenced code block (or its text). After a submission
    that does not pass every hidden case the policy sees only `passed of
    total` and may submit once more; the episode's reward is the last
    submission's coverage plus a bonus when it passed every case. A check the
    sandbox could not run raises `InfrastructureFailure`: never a reward.

    The trajectory is bounded as the cookbook's tool environment bounds it: a
    prompt that leaves no room for `max_tokens` more ends the episode before
    its first turn (`InitialObservationOverflow`), and a repair turn that
    would not fit ends it with `context_overflow_reward` instead of sampling.
    """

    task: dict[str, Any]
    renderer: Any
    scorer: Scorer
    max_submissions: int
    all_cases_bonus: float
    system_prompt: str
    max_tokens: int = 0  # sampled tokens per turn: reserved before each turn
    max_trajectory_tokens: int = MAX_TRAJECTORY_TOKENS
    context_overflow_reward: float = CONTEXT_OVERFLOW_REWARD
    messages: list[Any] = field(default_factory=list)
    submissions: int = 0

    @property
    def stop_condition(self) -> Any:
        return self.renderer.get_stop_sequences()

    def _overflows(self, observation: tinker.ModelInput) -> bool:
        return observation.length + self.max_tokens > self.max_trajectory_tokens

    async def initial_observation(
        self,
    ) -> tuple[tinker.ModelInput, Any] | InitialObservationOverflow:
        prefix = self.renderer.create_conversation_prefix_with_tools(
            tools=[SUBMIT_SPEC], system_prompt=self.system_prompt
        )
        self.messages = [*prefix, {"role": "user", "content": self.task["prompt"]}]
        observation = self.renderer.build_generation_prompt(self.messages)
        if self._overflows(observation):
            return InitialObservationOverflow(
                reward=self.context_overflow_reward,
                metrics={"max_tokens_reached": 1.0, _stop(StopReason.MAX_TOKENS): 1.0},
                logs={
                    "initial_observation_overflow": (
                        f"the prompt ({observation.length} tokens) + max_tokens "
                        f"({self.max_tokens}) exceeds {self.max_trajectory_tokens}"
                    )
                },
            )
        return observation, self.stop_condition

    async def step(self, action: list[int], *, extra: Any = None) -> StepResult:
        message, _termination = self.renderer.parse_response(action)
        code, used_tool, call_id = self._submission(message)
        self.submissions += 1
        started = time.monotonic()
        result = await self.scorer.post("/check", {"task": self.task["id"], "code": code})
        check_seconds = time.monotonic() - started
        passed, total = int(result["passed"]), int(result["total"])
        failure = result.get("failure")
        all_passed = total > 0 and passed == total
        metrics = {
            "check_seconds": check_seconds,
            "used_tool": float(used_tool),
            "submissions": float(self.submissions),
        }
        if failure == "infrastructure":
            raise InfrastructureFailure(
                f"task {self.task['id']}: the sandbox could not run the check; "
                "its group is left out of this update"
            )
        if all_passed or self.submissions >= self.max_submissions:
            coverage = passed / total if total else 0.0
            reward = coverage + (self.all_cases_bonus if all_passed else 0.0)
            metrics.update(
                {
                    "pass_fraction": coverage,
                    "all_cases": float(all_passed),
                    "submission_failure": float(failure == "submission"),
                }
            )
            return StepResult(
                reward=reward,
                episode_done=True,
                next_observation=tinker.ModelInput.empty(),
                next_stop_condition=self.stop_condition,
                metrics=metrics,
            )
        feedback = repair_feedback(passed, total)
        self.messages.append(message)
        if used_tool:
            self.messages.append(
                {"role": "tool", "content": feedback, "tool_call_id": call_id, "name": SUBMIT_TOOL}
            )
        else:
            self.messages.append({"role": "user", "content": feedback})
        observation = self.renderer.build_generation_prompt(self.messages)
        if self._overflows(observation):
            return StepResult(
                reward=self.context_overflow_reward,
                episode_done=True,
                next_observation=tinker.ModelInput.empty(),
                next_stop_condition=self.stop_condition,
                metrics={
                    **metrics,
                    "context_overflow": 1.0,
                    _stop(StopReason.CONTEXT_OVERFLOW): 1.0,
                },
            )
        return StepResult(
            reward=0.0,
            episode_done=False,
            next_observation=observation,
            next_stop_condition=self.stop_condition,
            metrics=metrics,
        )

    def _submission(self, message: Any) -> tuple[str, bool, str]:
        for call in message.get("tool_calls") or []:
            if call.function.name != SUBMIT_TOOL:
                continue
            try:
                arguments = json.loads(call.function.arguments)
            except ValueError:
                continue
            if isinstance(arguments, dict) and isinstance(arguments.get("code"), str):
                return arguments["code"], True, call.id or ""
        return last_code_block(renderers.get_text_content(message)), False, ""


def _stop(reason: StopReason) -> str:
    """The cookbook's one-hot stop-reason metric key (`stop/<reason>`)."""
    return f"{STOP_METRIC_PREFIX}{reason}"


@dataclass
class AnswerEnv(Env):
    """One answer-only episode: the response states the answer; code in it is judged for format only."""

    task: dict[str, Any]
    renderer: Any
    scorer: Scorer
    system_prompt: str

    @property
    def stop_condition(self) -> Any:
        return self.renderer.get_stop_sequences()

    async def initial_observation(self) -> tuple[tinker.ModelInput, Any]:
        messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": self.task["prompt"]},
        ]
        return self.renderer.build_generation_prompt(messages), self.stop_condition

    async def step(self, action: list[int], *, extra: Any = None) -> StepResult:
        message, _termination = self.renderer.parse_response(action)
        text = renderers.get_text_content(message)
        result = await self.scorer.post("/reward", {"task": self.task["id"], "text": text})
        return StepResult(
            reward=float(result["reward"]),
            episode_done=True,
            next_observation=tinker.ModelInput.empty(),
            next_stop_condition=self.stop_condition,
            metrics={k: float(v) for k, v in result["metrics"].items()},
        )


@dataclass(frozen=True)
class TaskGroupBuilder(EnvGroupBuilder):
    """`group_size` episodes of one task: the GRPO group whose rewards are compared."""

    job: dict[str, Any]
    task: dict[str, Any]
    renderer: Any
    scorer: Scorer

    async def make_envs(self) -> Sequence[Env]:
        size = int(self.job["group_size"])
        if self.job["mode"] == "hidden":
            return [
                HiddenEnv(
                    self.task,
                    self.renderer,
                    self.scorer,
                    max_submissions=int(self.job["max_submissions"]),
                    all_cases_bonus=float(self.job["all_cases_bonus"]),
                    system_prompt=self.job["system_prompt"],
                    max_tokens=int(self.job["max_tokens"]),
                    max_trajectory_tokens=int(
                        self.job.get("max_trajectory_tokens", MAX_TRAJECTORY_TOKENS)
                    ),
                    context_overflow_reward=float(
                        self.job.get("context_overflow_reward", CONTEXT_OVERFLOW_REWARD)
                    ),
                )
                for _ in range(size)
            ]
        if self.job["mode"] == "shell":
            from shell_episode import ShellEnv  # beside this script (atoll pi train shell)

            phase = str(self.job.get("phase", "train"))
            return [
                ShellEnv(self.task, self.renderer, self.scorer, self.job, phase)
                for _ in range(size)
            ]
        return [
            AnswerEnv(self.task, self.renderer, self.scorer, self.job["system_prompt"])
            for _ in range(size)
        ]

    async def compute_group_rewards(
        self, trajectory_group: list[Trajectory], env_group: Sequence[Env]
    ) -> list[tuple[float, Metrics]]:
        """No reward beyond the episodes' own; a held-out group gets its pass@k (pass_at_k)."""
        if self.job.get("phase") != "eval":
            return [(0.0, {}) for _ in trajectory_group]
        key = SOLVED[self.job["mode"]]
        outcomes = [solved([t.metrics for t in traj.transitions], key) for traj in trajectory_group]
        metrics: Metrics = dict(group_metrics(outcomes))
        return [(0.0, dict(metrics)) for _ in trajectory_group]

    def logging_tags(self) -> list[str]:
        return [self.job["mode"], *self.task.get("tags", [])]


class TaskDataset(RLDataset):
    """Batch i = `groups_per_batch` tasks, taken in order and wrapping around.

    An evaluation-only set (shell's held-out split, the replay's regression
    window) is a dataset of its own (`_held_out`): the cookbook samples and
    scores it every `eval_every` iterations and never trains on it.
    """

    def __init__(self, job: dict[str, Any], renderer: Any, scorer: Scorer) -> None:
        self.job, self.renderer, self.scorer = job, renderer, scorer
        self.tasks: list[dict[str, Any]] = job["tasks"]

    def get_batch(self, index: int) -> Sequence[EnvGroupBuilder]:
        per = int(self.job["groups_per_batch"])
        return [
            TaskGroupBuilder(
                self.job,
                self.tasks[(index * per + j) % len(self.tasks)],
                self.renderer,
                self.scorer,
            )
            for j in range(per)
        ]

    def __len__(self) -> int:
        return int(self.job["iterations"])


@chz.chz
class TaskDatasetBuilder(RLDatasetBuilder):
    job_json: str  # chz fields are plain values; the job travels as its JSON text

    @property
    def job(self) -> dict[str, Any]:
        return dict(json.loads(self.job_json))

    async def __call__(self) -> tuple[RLDataset, RLDataset | None]:
        tokenizer = get_tokenizer(self.job["base_model"])
        renderer = renderers.get_renderer(self.job["renderer"], tokenizer)
        scorer = Scorer(self.job["scorer_url"], os.environ["ATOLL_SCORER_TOKEN"])
        return TaskDataset(self.job, renderer, scorer), _held_out(self.job, renderer, scorer)


def _held_out(job: dict[str, Any], renderer: Any, scorer: Scorer) -> RLDataset | None:
    """The job's evaluation tasks (`eval_tasks`) as one batch, if any: `eval_group_size`
    episodes of each (shell's held-out split: 1, one episode each; the replay's regression
    window: `--group-size`, as a training group).

    The cookbook evaluates it at the iterations `eval_every` divides, before their update.
    """
    tasks = job.get("eval_tasks") or []
    if not tasks:
        return None
    held_out = {
        **job,
        "tasks": tasks,
        "phase": "eval",
        "group_size": int(job.get("eval_group_size", 1)),
        "groups_per_batch": len(tasks),
        "iterations": 1,
    }
    return TaskDataset(held_out, renderer, scorer)


def config(job: dict[str, Any]) -> train.Config:
    """The cookbook's RL configuration for a job: the loss, optimizer and sampling settings
    every training command trains with (its dataset is the job's tasks)."""
    return train.Config(
        learning_rate=float(job["learning_rate"]),
        dataset_builder=TaskDatasetBuilder(job_json=json.dumps(job)),
        model_name=job["base_model"],
        recipe_name=f"atoll-pi-train-{job['mode']}",
        renderer_name=job["renderer"],
        max_tokens=int(job["max_tokens"]),
        log_path=job["run_dir"],
        lora_rank=int(job["lora_rank"]),
        base_url=job["base_url"],
        # Weights of an earlier run's training state; a resume loads this run's own last state
        # instead (the cookbook looks in the log path's checkpoints.jsonl first).
        load_checkpoint_path=job.get("load_checkpoint_path"),
        save_every=1,
        eval_every=int(job.get("eval_every", 0)),
        num_groups_to_log=0,
        rollout_json_export=False,
    )


def main() -> None:
    job = json.loads(sys.stdin.read())
    try:
        asyncio.run(train.main(config(job)))
    except Exception as exc:
        refusal = _bound_refusal(exc)
        if refusal is None:
            raise
        print(f"{REFUSAL_PREFIX}{refusal}", file=sys.stderr, flush=True)
        sys.exit(REFUSED)


def _bound_refusal(exc: BaseException) -> BaseException | None:
    """shell_episode's EpisodeBoundTooSmall in `exc`, its causes or its group, if any."""
    seen: list[BaseException] = [exc]
    while seen:
        current = seen.pop()
        if type(current).__name__ == "EpisodeBoundTooSmall":  # imported lazily, by name
            return current
        seen += [e for e in (current.__cause__, current.__context__) if e is not None]
        seen += list(getattr(current, "exceptions", ()))
    return None


if __name__ == "__main__":
    main()
