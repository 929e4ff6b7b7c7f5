"""Pi's run as an ATIF trajectory (Harbor's `trajectory.json`).

Built from the messages Pi's event stream ended (`message_end`): the system
prompt as the bridge saw it, the user prompt, then one agent step per
assistant message with its text, thinking, tool calls, the tool results as
the step's observation, and token counts as Harbor counts them (prompt tokens
include cache reads). Validated with Harbor's own model before it is written.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from harbor.models.trajectories.agent import Agent
from harbor.models.trajectories.final_metrics import FinalMetrics
from harbor.models.trajectories.metrics import Metrics
from harbor.models.trajectories.observation import Observation
from harbor.models.trajectories.observation_result import ObservationResult
from harbor.models.trajectories.step import Step
from harbor.models.trajectories.tool_call import ToolCall
from harbor.models.trajectories.trajectory import Trajectory
from harbor.utils.trajectory_utils import format_trajectory_json

from atoll.core.durable import atomic_write_text
from atoll.pi.events import EventLog, content_text
from atoll.pi.install import PI_VERSION

FILE = "trajectory.json"


def _timestamp(millis: Any) -> str | None:
    if not isinstance(millis, int | float):
        return None
    return dt.datetime.fromtimestamp(millis / 1000, tz=dt.UTC).isoformat()


def _tool_definitions(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.get("name"),
                "description": tool.get("description"),
                "parameters": tool.get("parameters"),
            },
        }
        for tool in tools
    ]


def trajectory(
    log: EventLog,
    *,
    session_id: str,
    model: str,
    prompt: str,
    system_prompt: str | None,
    tools: list[dict[str, Any]],
    extra: dict[str, Any] | None = None,
) -> Trajectory:
    steps: list[Step] = []

    def add(**fields: Any) -> Step:
        step = Step(step_id=len(steps) + 1, **fields)
        steps.append(step)
        return step

    if system_prompt:
        add(source="system", message=system_prompt)
    add(source="user", message=prompt)
    by_call: dict[str, Step] = {}
    results: dict[str, list[ObservationResult]] = {}
    for message in log.messages:
        role = message.get("role")
        if role == "assistant":
            content = message.get("content") or []
            calls = [
                ToolCall(
                    tool_call_id=str(block.get("id", "")),
                    function_name=str(block.get("name", "")),
                    arguments=dict(block.get("arguments") or {}),
                )
                for block in content
                if isinstance(block, dict) and block.get("type") == "toolCall"
            ]
            usage = message.get("usage") or {}
            step = add(
                source="agent",
                timestamp=_timestamp(message.get("timestamp")),
                model_name=message.get("model") or model,
                message=content_text(content),
                reasoning_content=_thinking(content),
                tool_calls=calls or None,
                metrics=Metrics(
                    prompt_tokens=int(usage.get("input") or 0) + int(usage.get("cacheRead") or 0),
                    completion_tokens=int(usage.get("output") or 0),
                    cached_tokens=int(usage.get("cacheRead") or 0),
                    cost_usd=float((usage.get("cost") or {}).get("total") or 0.0),
                ),
                llm_call_count=1,
                extra={
                    key: message[key] for key in ("stopReason", "errorMessage") if message.get(key)
                }
                or None,
            )
            for call in calls:
                by_call[call.tool_call_id] = step
        elif role == "toolResult":
            call_id = str(message.get("toolCallId", ""))
            results.setdefault(call_id, []).append(
                ObservationResult(
                    source_call_id=call_id if call_id in by_call else None,
                    content=content_text(message.get("content")),
                    extra={"is_error": bool(message.get("isError"))},
                )
            )
    for call_id, found in results.items():
        answered = by_call.get(call_id)
        if answered is None:
            continue
        if answered.observation is None:
            answered.observation = Observation(results=[])
        answered.observation.results.extend(found)
    usage = log.usage
    return Trajectory(
        session_id=session_id,
        agent=Agent(
            name="pi-docker",
            version=PI_VERSION,
            model_name=model,
            tool_definitions=_tool_definitions(tools) or None,
            extra=extra,
        ),
        steps=steps,
        final_metrics=FinalMetrics(
            total_prompt_tokens=usage.input + usage.cache_read,
            total_completion_tokens=usage.output,
            total_cached_tokens=usage.cache_read,
            total_cost_usd=usage.cost_usd,
            total_steps=len(steps),
        ),
    )


def _thinking(content: list[Any]) -> str | None:
    parts = [
        str(block.get("thinking", ""))
        for block in content
        if isinstance(block, dict) and block.get("type") == "thinking"
    ]
    return "\n".join(parts) or None


def write(path: Path, value: Trajectory) -> Path:
    atomic_write_text(path, format_trajectory_json(value.to_json_dict()))
    return path
