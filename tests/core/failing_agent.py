"""A Harbor agent whose run raises, as an agent that hits a bug or a refused setting does."""

from __future__ import annotations

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext


class SettingRefused(RuntimeError):
    """The agent's own failure, by a type the job result records."""


class FailingAgent(BaseAgent):
    @staticmethod
    def name() -> str:
        return "failing"

    def version(self) -> str:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        raise SettingRefused("steps=2 is the final total, not an increment")
