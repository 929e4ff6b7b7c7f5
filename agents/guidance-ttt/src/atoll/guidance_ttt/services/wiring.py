"""Build a run's services from its config: guidance through Reef, executor, scorer, training barrier.

One place decides which concrete client each setting selects, so the agent,
the command line and tests start a run the same way. Credentials and service
addresses come from the environment the caller passes (the agent passes its
own process environment overlaid with Harbor's `--ae` variables) and stay
inside the clients. All clients share the run's `Cancellation`: cancelling it
aborts their calls in flight, and closing the services closes the task's
scorer (stopping an embedded judge), so a cancelled run leaves no thread or process behind. With training
on, the barrier reads Reef's trainer through the Ray cluster named in Reef's
runtime files (`atoll.core.reef_runtime`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from atoll.core import reef_env, reef_runtime
from atoll.guidance_ttt.config import ConfigError, GuidanceConfig
from atoll.guidance_ttt.contract import Task
from atoll.guidance_ttt.search import controller
from atoll.guidance_ttt.search.seed import read_seed
from atoll.guidance_ttt.services.cancel import Cancellation
from atoll.guidance_ttt.services.executor import Executor, executor_spec
from atoll.guidance_ttt.services.reef_guidance import GuidanceClient, ReefEndpoint
from atoll.guidance_ttt.services.scorer import (
    JUDGE_URL_ENV,
    Scorer,
    check_installed,
    open_task_scorer,
    task_judge,
)
from atoll.guidance_ttt.services.training_barrier import (
    RayActorHealth,
    ReefTrainingBarrier,
    SearchOnlyBarrier,
    TrainingBarrier,
)
from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.run_dir import RunDir

# How often the training barrier reads Reef's status: also how long a
# cancelled run may take to notice the cancellation while it waits there.
BARRIER_POLL_S = 2.0


class ReefRuntimeMissing(ConfigError):
    """Training was asked for, but no Reef runtime file names the trainer's Ray cluster."""


@dataclass
class Services:
    guidance: GuidanceClient
    executor: Executor
    scorer: Scorer
    barrier: TrainingBarrier
    cancellation: Cancellation


def with_reef_url(config: GuidanceConfig, environ: Mapping[str, str]) -> GuidanceConfig:
    """`REEF_URL` from the environment, unless a kwarg or the config file named Reef's URL."""
    named = reef_env.named_url(environ)
    if "reef_url" in config.model_fields_set or named is None:
        return config
    return config.model_copy(update={"reef_url": named})


@contextmanager
def open_services(
    config: GuidanceConfig,
    task: Task,
    *,
    scenario: str,
    environ: Mapping[str, str] = os.environ,
    reef_token: str | None = None,
    judge: str | None = None,
    cancellation: Cancellation | None = None,
) -> Iterator[Services]:
    """The run's clients, and the scorer the task's contract names, open for the run.

    With the `frontiercs-judge` scorer an embedded judge is started for the run
    when no judge URL is known. `reef_token` and `judge` override `REEF_TOKEN`
    and `FRONTIERCS_JUDGE_URL` from `environ`; `REEF_URL` applies unless the
    config names Reef's URL.
    """
    cancellation = cancellation or Cancellation()
    endpoint = ReefEndpoint.resolve(with_reef_url(config, environ).reef_url, reef_token, environ)
    executor = Executor(
        executor_spec(
            config.executor_preset,
            base_url=config.executor_base_url,
            model=config.executor_model,
            max_completion_tokens=config.max_executor_tokens,
        ),
        environ=environ,
        cancellation=cancellation,
    )
    guidance = GuidanceClient(
        endpoint,
        scenario=scenario,
        model=config.guidance_model,
        max_completion_tokens=config.max_guidance_tokens,
        cancellation=cancellation,
    )
    if judge:
        environ = {**environ, JUDGE_URL_ENV: judge}
    try:
        with contextlib.ExitStack() as stack:
            if config.training == "tinker":
                barrier: TrainingBarrier = stack.enter_context(
                    tinker_barrier(config, environ, cancellation)
                )
            else:
                barrier = training_barrier(config, guidance, scenario, environ, cancellation)
            scorer = stack.enter_context(
                open_task_scorer(task, RunDir(config.state_dir).scorer_state, environ)
            )
            # A closed scorer fails its next poll: no wait outlives a cancel.
            cancellation.on_cancel(scorer.close)
            yield Services(guidance, executor, scorer, barrier, cancellation)
    finally:
        guidance.close()
        executor.close()


def training_barrier(
    config: GuidanceConfig,
    guidance: GuidanceClient,
    scenario: str,
    environ: Mapping[str, str],
    cancellation: Cancellation,
) -> TrainingBarrier:
    """Search-only when training is off; else Reef's status plus the actor in Reef's Ray cluster."""
    if config.training == "off":
        return SearchOnlyBarrier()
    paths = RunDir(config.state_dir.expanduser().resolve())
    reef_run_dir = paths.reef_run_dir(environ)
    runtime = reef_runtime.read_ray_runtime(reef_run_dir)
    if runtime is None:
        raise ReefRuntimeMissing(
            f"training=on reads the Ray cluster of Reef's trainer from Reef's runtime files, and "
            f"{reef_run_dir} has none: start Reef with the reef-stack job plugin or `atoll stack up`, "
            f"or set {reef_env.RUN_DIR_ENV} to the run directory of the Reef that trains this run"
        )
    return ReefTrainingBarrier(
        guidance.status,
        scenario,
        health=RayActorHealth(runtime),
        checkpoint_marker=paths.trainer_checkpoint_marker,
        job_marker=paths.trainer_job_marker,
        poll_interval_s=BARRIER_POLL_S,
        cancellation=cancellation,
    )


@contextmanager
def tinker_barrier(
    config: GuidanceConfig, environ: Mapping[str, str], cancellation: Cancellation
) -> Iterator[TrainingBarrier]:
    """training=tinker: the run's Tinker policy server, started from its checkpoint chain."""
    from atoll.guidance_ttt.training.tinker_barrier import (
        TinkerTrainingBarrier,
        TinkerUpdate,
        policy_start,
    )
    from atoll.guidance_ttt.training.tinker_policy import (
        PolicySettings,
        loopback,
        serving_policy,
    )

    paths = RunDir(config.state_dir.expanduser().resolve())
    url = tinker_url(config, environ)
    base_model = str(config.tinker_base_model)
    settings = PolicySettings(
        base_model=base_model,
        renderer=config.renderer,
        tinker_url=url,
        lora_rank=config.lora_rank,
        port=config.tinker_policy_port,
        served_name=config.guidance_upstream_model or config.guidance_model,
    )
    start = policy_start(paths, base_model, config.tinker_load_checkpoint)
    with serving_policy(settings, start, paths.tinker_policy_log, environ, cancellation) as policy:
        update = TinkerUpdate(config.learning_rate, config.kl_coef, loopback(url))
        yield TinkerTrainingBarrier(policy, paths, update, start)


def tinker_url(config: GuidanceConfig, environ: Mapping[str, str]) -> str:
    """The Tinker service: the setting, else `TINKER_BASE_URL`, else hosted Tinker."""
    if config.tinker_base_url:
        return config.tinker_base_url
    named = environ.get("TINKER_BASE_URL")
    if named:
        return named
    from atoll.pi_train import default_tinker_url

    return default_tinker_url()


def run_search(
    config: GuidanceConfig,
    task: Task,
    task_dir: Path,
    *,
    environ: Mapping[str, str] = os.environ,
    cancellation: Cancellation | None = None,
    console: Console | None = None,
) -> controller.RunResult:
    """Start or resume the run in `config.state_dir` on the task in `task_dir`, to its last step.

    A first start chooses the run's name and scores the task's seed program
    with the scorer the task's contract names (refused at once when that scorer
    is not installed); a resume takes both from the state directory. Which
    judge scores is read first: a first start records it, a resume under
    another judge is refused before any service starts.
    """
    if task.directory is None:
        task = replace(task, directory=task_dir)
    check_installed(task.contract)
    start = resume.read_start(config.state_dir)
    judge = task_judge(task.contract, environ)
    if start.saved is not None:  # before any service starts (an embedded judge, a sandbox)
        start.saved.check_task(task, config.state_dir)
        start.saved.check_judge(judge, config.state_dir)
    fresh = start.saved is None
    with open_services(
        config, task, scenario=start.name.scenario, environ=environ, cancellation=cancellation
    ) as services:
        seed = read_seed(task_dir, task.contract, services.scorer if fresh else None)
        return controller.run(
            config,
            task,
            seed,
            guidance=services.guidance,
            executor=services.executor,
            scorer=services.scorer,
            barrier=services.barrier,
            start=start,
            judge=judge,
            cancellation=services.cancellation,
            console=console,
        )
