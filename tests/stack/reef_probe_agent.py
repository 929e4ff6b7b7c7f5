"""A tiny Harbor agent that makes one chat completion through Reef and keeps the receipt.

It finds Reef the way every agent of a `reef-stack` job does, through
`REEF_URL` and `REEF_TOKEN` in its environment, and speaks to it with
`reef_client`. The receipt goes to the trial's workspace (for the verifier)
and to the agent's log directory (for the test).
"""

from __future__ import annotations

import asyncio
import json
import os

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from reef_client import ReefClient

SCENARIO = "reef-stack-test"


class ReefProbeAgent(BaseAgent):
    def __init__(self, *args, linger_s: float = 0.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.linger_s = float(linger_s)

    @staticmethod
    def name() -> str:
        return "reef-probe"

    def version(self) -> str:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        client = ReefClient(os.environ["REEF_URL"], token=os.environ["REEF_TOKEN"])
        payload = {"model": "guide", "messages": [{"role": "user", "content": instruction}]}
        body, receipt = await asyncio.to_thread(
            client.inference_with_record, SCENARIO, "/v1/chat/completions", payload
        )
        answer = body["choices"][0]["message"]["content"]
        (self.logs_dir / "receipt.json").write_text(
            json.dumps(
                {
                    "receipt": receipt,
                    "answer": answer,
                    "reef_url": os.environ["REEF_URL"],
                    "reef_run_dir": os.environ.get("REEF_RUN_DIR"),
                }
            )
        )
        await environment.exec(f"echo {receipt} > /app/receipt.txt")
        await asyncio.sleep(self.linger_s)  # lets a test interrupt the job mid-run
