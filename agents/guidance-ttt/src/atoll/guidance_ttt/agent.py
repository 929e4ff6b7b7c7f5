"""The `guidance-ttt` Harbor agent: one trial owns a whole Guidance-TTT run.

Harbor hands the agent the task's instruction and an environment; the search
itself runs on the host (it talks to Reef, the executor and the judge, none
of which live in the trial's sandbox), and only its result goes into the
trial: the best program is uploaded to the task's workspace, where the task's
own verifier re-scores it. The task's `contract.json` and seed program are
read from the task directory, which is the parent of the environment
directory Harbor builds the trial from. Settings come from agent kwargs
(`--ak key=value`) through the run config; credentials and service addresses
from the environment: the agent's process environment overlaid with Harbor's
agent environment (`--ae KEY=VALUE`). When Harbor cancels the agent (a trial
timeout, Ctrl-C), the search is stopped and waited for before the
cancellation goes on, so no thread, judge or request outlives the trial and
the next run resumes where this one stopped.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shlex
import tempfile
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from rich.console import Console

from atoll.guidance_ttt.config import GuidanceConfig, from_agent_kwargs
from atoll.guidance_ttt.contract import CONTRACT_FILE, Task, load_contract
from atoll.guidance_ttt.harbor import trajectory as atif
from atoll.guidance_ttt.harbor.trial_outputs import write_outputs
from atoll.guidance_ttt.presets import preset
from atoll.guidance_ttt.search import controller
from atoll.guidance_ttt.search.node import Node
from atoll.guidance_ttt.services.cancel import Cancellation, RunCancelled
from atoll.guidance_ttt.services.scorer import check_installed
from atoll.guidance_ttt.services.wiring import run_search, with_reef_url
from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.run_history import HistoryError, read_history

__all__ = [
    "GuidanceTTTAgent",
    "agent_config",
    "check_training_stack",
    "stack_settings",
    "with_reef_url",
]

AGENT_NAME = "guidance-ttt"
DISTRIBUTION = "atoll-guidance-ttt"
DEFAULT_WORKDIR = "/workspace"
RUN_LOG = "guidance-ttt.log"


class RunWithoutProgram(RuntimeError):
    """The run finished but its archive holds no program to hand to the verifier."""


class TrainingUnavailable(RuntimeError):
    """Training was asked for, but this machine cannot observe Reef's trainer."""


# Agent-kwarg spellings that name a config setting differently.
KWARG_ALIASES = {"executor": "executor_preset"}


class GuidanceTTTAgent(BaseAgent):
    """Runs the whole multi-step search of one task inside one Harbor trial."""

    def __init__(
        self,
        logs_dir: Path,
        model_name: str | None = None,
        logger: Any = None,
        mcp_servers: Any = None,
        skills_dir: str | None = None,
        *args: Any,
        extra_env: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(logs_dir, model_name, logger, mcp_servers, skills_dir, extra_env=extra_env)
        self.config = agent_config(kwargs, model_name)

    @staticmethod
    def name() -> str:
        return AGENT_NAME

    def version(self) -> str | None:
        try:
            return metadata.version(DISTRIBUTION)
        except metadata.PackageNotFoundError:
            return None

    async def setup(self, environment: BaseEnvironment) -> None:
        """Nothing to install: the search runs on the host, the trial only receives its result."""

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        task_dir = Path(environment.environment_dir).parent
        task = Task(
            statement=instruction.strip(),
            contract=load_contract(task_dir / CONTRACT_FILE),
            directory=task_dir,
        )
        check_installed(task.contract)  # one line naming a scorer no plugin registers
        environ = {**os.environ, **self.extra_env}
        check_training_stack(self.config)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        cancellation = Cancellation()
        search = asyncio.ensure_future(
            asyncio.to_thread(self._search, task, task_dir, environ, cancellation)
        )
        try:
            result = await asyncio.shield(search)
        except asyncio.CancelledError:
            cancellation.cancel()
            await asyncio.wait([search])  # the search unwinds in seconds once cancelled
            failure = None if search.cancelled() else search.exception()
            if failure is not None and not isinstance(failure, RunCancelled):
                self.logger.warning("guidance-ttt: the cancelled search also failed: %s", failure)
            self._record_committed(task, context, environ)
            raise
        except BaseException:
            self._record_committed(task, context, environ)
            raise
        self._write_outputs(task, context, environ)
        if result.best is None or result.best.entry.program is None:
            raise RunWithoutProgram("the run ended without any program in its archive")
        await install_program(environment, task, result.best)

    def _write_outputs(self, task: Task, context: AgentContext, environ: Mapping[str, str]) -> None:
        """The trial's record of the run, and its trajectory for `harbor view`.

        The trajectory only shows what the state directory holds: a failure to
        write it is logged, and costs the trial neither its outputs nor its reward.
        """
        write_outputs(self.config, task, self.logs_dir, context)
        try:
            history = read_history(self.config.state_dir)
            atif.write(
                self.logs_dir / atif.FILE,
                atif.trajectory(history, statement=task.statement, version=self.version()),
                environ,
            )
        except (HistoryError, OSError, ValueError) as exc:
            self.logger.warning("guidance-ttt: no trajectory.json for this trial: %s", exc)

    def _record_committed(
        self, task: Task, context: AgentContext, environ: Mapping[str, str]
    ) -> None:
        """After a failure: the outputs of the steps committed so far, never masking the failure."""
        try:
            if resume.load(self.config.state_dir) is not None:
                self._write_outputs(task, context, environ)
        except Exception as exc:
            self.logger.warning("guidance-ttt: no outputs for the committed steps: %s", exc)

    def _search(
        self,
        task: Task,
        task_dir: Path,
        environ: Mapping[str, str],
        cancellation: Cancellation,
    ) -> controller.RunResult:
        with open(self.logs_dir / RUN_LOG, "a", encoding="utf-8") as log:
            return run_search(
                self.config,
                task,
                task_dir,
                environ=environ,
                cancellation=cancellation,
                console=Console(file=log, width=120),
            )


def agent_config(kwargs: Mapping[str, Any], model_name: str | None = None) -> GuidanceConfig:
    """The run config from agent kwargs; Harbor's `--model` names the guidance model if unset."""
    settings = {KWARG_ALIASES.get(str(k), str(k)): v for k, v in kwargs.items()}
    if model_name and "guidance_model" not in settings:
        settings["guidance_model"] = model_name
    config = from_agent_kwargs(settings)
    state_dir = config.state_dir.expanduser().absolute()
    return config.model_copy(update={"state_dir": state_dir})


#: The run config's settings that the Reef stack reads, under the stack's own names.
STACK_SETTINGS = (
    "groups",
    "rollouts",
    "steps",
    "max_guidance_tokens",
    "sequence_length",
    "lora_rank",
    "tensor_parallel_size",
    "guidance_model",
    "training",
    "state_dir",
    "reef_url",
    "guidance_base_url",
    "guidance_upstream_model",
    "executor_base_url",
    "executor_model",
)


def stack_settings(kwargs: Mapping[str, Any], model_name: str | None = None) -> dict[str, Any]:
    """What the Reef stack reads of the run config (the agent's `StackUse` handoff).

    A plain mapping of the stack's settings, which the stack validates into
    its own config type, so that neither distribution imports the other.
    Whether the executor is served on this machine, and with which reasoning
    parser, comes from the executor preset.
    """
    config = agent_config(kwargs, model_name)
    server = preset(config.executor_preset).local_server
    settings = {name: getattr(config, name) for name in STACK_SETTINGS}
    if config.training == "tinker":
        # atoll trains through Tinker: Reef records every call and score in upstream mode,
        # in front of the run's own Tinker policy server, which the agent starts.
        settings.update(training="off", guidance_base_url=config.tinker_policy_url)
    return {
        **settings,
        "executor_served_locally": server is not None,
        "executor_reasoning_parser": server.reasoning_parser if server is not None else None,
    }


def check_training_stack(config: GuidanceConfig) -> None:
    """Fail before the first sample, not after a whole step, when training cannot be observed."""
    if config.training == "tinker" and importlib.util.find_spec("atoll.pi_train") is None:
        raise TrainingUnavailable(
            "training=tinker runs its trainer in atoll-pi-train's managed Tinker environment, "
            "which is not installed: install atoll-guidance-ttt[tinker]"
        )
    if config.training == "on" and importlib.util.find_spec("ray") is None:
        raise TrainingUnavailable(
            "training=on waits for Reef's trainer through Ray, which is not installed: install "
            "atoll-guidance-ttt[ray] on the GPU stack, or pass --ak training=off for a search-only run"
        )


def solution_path(environment: BaseEnvironment, task: Task) -> str:
    """Where the task's verifier looks for the answer: `<workdir>/solution.<ext>`."""
    workdir = environment.task_env_config.workdir or DEFAULT_WORKDIR
    return f"{workdir.rstrip('/')}/{task.contract.solution_language.solution_file}"


async def install_program(environment: BaseEnvironment, task: Task, best: Node) -> str:
    """Upload the best program to the trial's workspace; returns its path there."""
    assert best.entry.program is not None
    target = solution_path(environment, task)
    await environment.exec(f"mkdir -p {shlex.quote(target.rsplit('/', 1)[0])}")
    with tempfile.TemporaryDirectory(prefix="guidance-ttt-") as scratch:
        local = Path(scratch) / Path(target).name
        local.write_text(best.entry.program, encoding="utf-8")
        await environment.upload_file(local, target)
    return target
