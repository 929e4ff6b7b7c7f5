"""The record of one Pi run: the source of truth that scoring and reports read.

It keeps what the model did as Pi reported it (every tool call with its
arguments and result, the stop reason, usage and cost), what the container
actually did as the bridge saw it (every command with exit code and output,
every file read and written), the path audit, the container and image
receipt with the cleanup outcome, timings, and the hashes that say exactly
which extension, Pi and configuration ran. The raw event stream and the
bridge's log sit beside it as JSONL files.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from atoll.core.durable import atomic_write_json
from atoll.pi import audit
from atoll.pi.events import ToolCall
from atoll.pi.install import PI_VERSION, PiInstall
from atoll.pi.session import (
    BRIDGE_FILE,
    EVENTS_FILE,
    STDERR_FILE,
    Outcome,
    SessionResult,
    extension_sha256,
)

SCHEMA = "atoll.pi.rollout/1"
RECORD_FILE = "record.json"


class Hashes(BaseModel):
    extension_sha256: str
    pi_version: str
    pi_lock_sha256: str
    config_sha256: str
    system_prompt_sha256: str | None
    prompt_sha256: str


class Audit(BaseModel):
    hits: list[dict[str, Any]]
    disqualified: bool


class RolloutRecord(BaseModel):
    """One rollout. `scorable` is False for infrastructure errors: they are never a score."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = SCHEMA
    rollout_id: str
    created_at: str
    outcome: Outcome
    scorable: bool
    error: str | None = None  # the infrastructure error
    limit: str | None = None  # "max_turns", "timeout" or "output" when a limit ended the run
    stop_reason: str | None = None  # Pi's stopReason of the last assistant message
    final_text: str = ""
    language: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    prompt: str = ""
    turns: int = 0
    usage: dict[str, Any] = Field(default_factory=dict)
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    commands: list[dict[str, Any]] = Field(default_factory=list)  # the bridge's own record
    audit: Audit = Field(default_factory=lambda: Audit(hits=[], disqualified=False))
    files_in: list[dict[str, Any]] = Field(default_factory=list)
    workspace_files: list[dict[str, Any]] = Field(default_factory=list)
    workspace_copy: dict[str, Any] | None = None
    container: dict[str, Any] | None = None
    environment: dict[str, Any] | None = None  # a Harbor trial's environment, when not ours
    pi: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    hashes: Hashes | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)

    @property
    def disqualified(self) -> bool:
        return self.audit.disqualified

    def write(self, run_dir: Path) -> Path:
        path = run_dir / RECORD_FILE
        atomic_write_json(path, self.model_dump(mode="json"))
        return path

    @classmethod
    def read(cls, run_dir: Path) -> RolloutRecord:
        """The record a finished rollout wrote into `run_dir`."""
        return cls.model_validate_json((run_dir / RECORD_FILE).read_text("utf-8"))


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def in_start_order(ops: list[dict[str, Any]], calls: list[ToolCall]) -> list[dict[str, Any]]:
    """The bridge's operations numbered (`seq`) in the order Pi started their tool calls.

    Pi 0.73.1 runs the tool calls of one message in parallel, so the bridge
    sees them finish in any order: a quick write started after a slow command
    finishes first. "Run after write" must mean after in the order the model
    asked for them, so `seq` follows Pi's tool_execution_start order (an
    operation of no known call goes last), and `completed_seq` keeps the order
    the bridge saw them end (`bridge.jsonl` is in that order).
    """
    order = {call.id: call.start_order for call in calls if call.start_order is not None}
    last = len(order) + 1
    ranked = sorted(
        ops, key=lambda op: (order.get(str(op.get("call_id", "")), last), int(op.get("seq", 0)))
    )
    return [
        {**op, "seq": number, "completed_seq": op.get("seq")}
        for number, op in enumerate(ranked, start=1)
    ]


def from_session(
    result: SessionResult,
    *,
    rollout_id: str,
    prompt: str,
    pi: PiInstall,
    created_at: str,
    language: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> RolloutRecord:
    """The record of a finished session (the caller adds container, files and timings)."""
    log = result.log
    calls = list(log.tool_calls.values())
    hits = audit.audit(calls)
    outcome = result.outcome
    system_prompt = result.bridge.system_prompt
    return RolloutRecord(
        rollout_id=rollout_id,
        created_at=created_at,
        outcome=outcome,
        scorable=outcome != "error",
        error=result.infrastructure_error,
        limit=result.limit,
        stop_reason=log.stop_reason,
        final_text=log.final_text(),
        language=language,
        metadata=dict(metadata or {}),
        prompt=prompt,
        turns=log.turns,
        usage=log.usage.to_json(),
        tool_calls=[call.to_json() for call in calls],
        commands=in_start_order(result.bridge.ops, calls),
        audit=Audit(hits=[hit.to_json() for hit in hits], disqualified=bool(hits)),
        pi={
            "version": PI_VERSION,
            "node": pi.node.version,
            "exit_code": result.exit_code,
            "terminated": result.terminated,
            "argv": result.argv[2:],
            "stderr_tail": result.stderr_tail[-2000:],
            "config": result.pi_config,
            "events": log.events,
            "event_bytes": log.event_bytes,  # as Pi wrote them
            "stored_event_bytes": result.stored_bytes,
            "compacted_updates": result.compacted_updates,
        },
        settings=result.settings.identity(),
        system_prompt=system_prompt,
        tools=list((result.bridge.hello or {}).get("tools") or []),
        hashes=Hashes(
            extension_sha256=extension_sha256(),
            pi_version=PI_VERSION,
            pi_lock_sha256=pi.lock_sha256,
            config_sha256=result.config_sha256,
            system_prompt_sha256=None if system_prompt is None else sha256_text(system_prompt),
            prompt_sha256=sha256_text(prompt),
        ),
        timings=dict(result.timings),
        files={
            "events": EVENTS_FILE,
            "bridge": BRIDGE_FILE,
            "stderr": STDERR_FILE,
            "record": RECORD_FILE,
        },
    )
