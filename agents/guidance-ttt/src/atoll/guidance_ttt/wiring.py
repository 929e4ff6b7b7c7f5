"""Build a run's services from its config: guidance through Reef, executor, judge, training bridge.

One place decides which concrete client each setting selects, so the agent,
the command line and tests start a run the same way. Credentials come from
the environment (or an explicit token argument) and stay inside the clients.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from atoll.guidance_ttt.bridge import ReefTrainingBridge, SearchOnlyBridge, TrainingBridge
from atoll.guidance_ttt.config import GuidanceConfig
from atoll.guidance_ttt.contract import Task
from atoll.guidance_ttt.executor import Executor, executor_spec
from atoll.guidance_ttt.guidance import GuidanceClient, ReefEndpoint
from atoll.guidance_ttt.scorer import Scorer, judge_url


@dataclass
class Services:
    guidance: GuidanceClient
    executor: Executor
    scorer: Scorer
    bridge: TrainingBridge


@contextmanager
def open_services(
    config: GuidanceConfig,
    task: Task,
    *,
    scenario: str,
    reef_token: str | None = None,
    judge: str | None = None,
) -> Iterator[Services]:
    """The run's clients; an embedded judge is started for the run when no judge URL is known."""
    endpoint = ReefEndpoint.resolve(config.reef_url, reef_token)
    guidance = GuidanceClient(
        endpoint,
        scenario=scenario,
        model=config.guidance_model,
        max_completion_tokens=config.max_guidance_tokens,
    )
    executor = Executor(
        executor_spec(
            config.executor_preset,
            base_url=config.executor_base_url,
            model=config.executor_model,
            max_completion_tokens=config.max_executor_tokens,
        )
    )
    bridge: TrainingBridge
    if config.training == "off":
        bridge = SearchOnlyBridge()
    else:
        bridge = ReefTrainingBridge(guidance.status, scenario)
    with judge_url(judge, state_dir=config.state_dir / "judge") as url:
        scorer = Scorer(url, task.contract)
        try:
            scorer.check()
            yield Services(guidance, executor, scorer, bridge)
        finally:
            scorer.close()
