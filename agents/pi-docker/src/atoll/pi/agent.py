"""The `pi-docker` Harbor agent: the real Pi on the host, its tools in the trial's environment.

Any Harbor task and environment works (`docker`, `atoll-local`, others): the
tool bridge runs every read, write, edit and bash of Pi through the
environment's `exec`, as the trial's default user, in its working directory.
Settings come from agent kwargs (`--ak base_url=... --ak model=...
--ak api_key_env=NAME`, see `atoll.pi.settings.PiSettings`); Harbor's `--model`
names the model when `model` is not given. The key is read from the agent's
process environment overlaid with Harbor's agent environment (`--ae`).

Into the trial's agent log directory go the raw event stream, the bridge's
log, the rollout record (with the path audit) and an ATIF `trajectory.json`;
the token counts and cost go into Harbor's agent context. Pi's own config
dir, HOME and working directory are kept outside that directory (which a
Docker trial mounts into its container) and deleted afterwards. A provider
error ends the trial with an error, never with a score.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from atoll.pi import atif, install
from atoll.pi.record import RolloutRecord, from_session, now
from atoll.pi.session import SessionRequest, run_session
from atoll.pi.settings import from_kwargs

AGENT_NAME = "pi-docker"
DISTRIBUTION = "atoll-pi-docker"
LOG_SUBDIR = "pi-docker"


class PiRunFailed(RuntimeError):
    """Pi's run failed for a reason outside the model (provider, bridge, environment)."""


class PiDockerAgent(BaseAgent):
    """Pi coding agent 0.73.1 with its four tools bridged into the trial's environment."""

    SUPPORTS_ATIF = True

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
        self.settings = from_kwargs(kwargs, model_name)
        self.record: RolloutRecord | None = None

    @staticmethod
    def name() -> str:
        return AGENT_NAME

    def version(self) -> str | None:
        return install.PI_VERSION

    async def setup(self, environment: BaseEnvironment) -> None:
        """Install the pinned Pi on the host if missing; nothing goes into the environment."""
        await asyncio.to_thread(install.ensure, self.logger.info)

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        environ = {**os.environ, **self.extra_env}
        pi = await asyncio.to_thread(install.ensure, self.logger.info)
        run_dir = self.logs_dir / LOG_SUBDIR
        run_id = self.session_id or uuid.uuid4().hex[:12]
        created_at = now()
        private = Path(tempfile.mkdtemp(prefix="atoll-pi-agent-"))
        try:
            result = await run_session(
                SessionRequest(self.settings, instruction, run_dir, run_id, private_dir=private),
                environment,
                pi,
                environ=environ,
            )
        finally:
            shutil.rmtree(private, ignore_errors=True)
        record = from_session(
            result, rollout_id=run_id, prompt=instruction, pi=pi, created_at=created_at
        )
        record.environment = {
            "type": str(getattr(environment.type(), "value", environment.type())),
            "session_id": getattr(environment, "session_id", None),
            "workdir": result.workdir,
            "plugin_version": _plugin_version(),
        }
        record.write(run_dir)
        self.record = record
        atif.write(
            self.logs_dir / atif.FILE,
            atif.trajectory(
                result.log,
                session_id=run_id,
                model=self.settings.model,
                prompt=instruction,
                system_prompt=record.system_prompt,
                tools=record.tools,
                extra={
                    "record": f"{LOG_SUBDIR}/record.json",
                    **(record.hashes.model_dump() if record.hashes else {}),
                },
            ),
        )
        _fill_context(context, record)
        if record.outcome == "error":
            raise PiRunFailed(record.error or "Pi's run failed")


def _fill_context(context: AgentContext, record: RolloutRecord) -> None:
    usage = record.usage
    context.n_input_tokens = int(usage["input_tokens"]) + int(usage["cache_read_tokens"])
    context.n_output_tokens = int(usage["output_tokens"])
    context.n_cache_tokens = int(usage["cache_read_tokens"])
    context.cost_usd = float(usage["cost_usd"]) or None
    context.metadata = {
        "outcome": record.outcome,
        "stop_reason": record.stop_reason,
        "limit": record.limit,
        "turns": record.turns,
        "tool_calls": len(record.tool_calls),
        "disqualified": record.audit.disqualified,
        "audit_hits": record.audit.hits,
        "record": f"{LOG_SUBDIR}/record.json",
    }


def _plugin_version() -> str | None:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
