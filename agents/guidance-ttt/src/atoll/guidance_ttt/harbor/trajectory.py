"""A run as an ATIF trajectory (Harbor's `trajectory.json`), so that `harbor view` shows it.

One Harbor trial owns a whole run, whose model calls are not a conversation
but a grid of independent rollouts. The trajectory lists them in (step,
group, rollout) order: the task's statement as the user's step, then per
rollout one agent step for the guidance call (the guidance model's answer,
or the failure that is the slot's outcome) and, when the guidance parsed,
one for the executor call. Each step's metadata (`extra`) carries the
rollout's grid coordinates, its Reef receipt, its parent node, the verdict
(status, raw score, reward, message) and how its answer parsed; its metrics
carry the completion tokens (and, when the policy returned them, the
sampled token ids and logprobs). Rollouts of a step not yet committed are
included and say so. Built from the state directory alone, validated with
Harbor's own model, redacted of credentials, and written atomically.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harbor.models.trajectories.agent import Agent
from harbor.models.trajectories.final_metrics import FinalMetrics
from harbor.models.trajectories.metrics import Metrics
from harbor.models.trajectories.step import Step
from harbor.models.trajectories.trajectory import Trajectory
from harbor.utils.trajectory_utils import format_trajectory_json

from atoll.core.durable import atomic_write_text
from atoll.guidance_ttt.redaction import redact, secret_values
from atoll.guidance_ttt.search.scored_program import Status
from atoll.guidance_ttt.search.step import PROGRAM_FROM_FALLBACK
from atoll.guidance_ttt.state.run_history import RunHistory, SlotRecord

FILE = "trajectory.json"
AGENT_NAME = "guidance-ttt"


def trajectory(history: RunHistory, *, statement: str, version: str | None) -> Trajectory:
    """The run's trajectory: the statement, then each rollout's guidance and executor calls."""
    steps: list[Step] = [Step(step_id=1, source="user", message=statement)]
    for slot in history.slots:
        for fields in _calls(history, slot):
            steps.append(Step(step_id=len(steps) + 1, source="agent", llm_call_count=1, **fields))
    completion = sum(
        (step.metrics.completion_tokens or 0) for step in steps if step.metrics is not None
    )
    saved = history.saved
    return Trajectory(
        session_id=saved.run_id,
        agent=Agent(
            name=AGENT_NAME,
            version=version or "unknown",
            model_name=history.guidance_model,
            extra={
                "run_id": saved.run_id,
                "reef_scenario": saved.scenario,
                "training": saved.training,
                "executor_model": history.executor_model,
                "identity": saved.identity,
            },
        ),
        steps=steps,
        notes=(
            "One Guidance-TTT run: per rollout, a guidance call and (for guidance that parsed) "
            "an executor call, in (step, group, rollout) order; each step's extra holds the "
            "rollout's grid coordinates, Reef receipt, verdict and parse outcome."
        ),
        final_metrics=FinalMetrics(total_completion_tokens=completion, total_steps=len(steps)),
        extra={
            "committed_steps": history.committed_steps,
            "journaled_steps": history.journaled_steps,
            "best_node_id": history.archive.best_id,
        },
    )


def _calls(history: RunHistory, slot: SlotRecord) -> list[dict[str, Any]]:
    """The agent steps of one slot: its guidance call, then its executor call if one was made."""
    common = _slot_facts(history, slot)
    sample = slot.sample
    if sample is not None:
        tokens = sample.tokens
        guidance: dict[str, Any] = {
            "model_name": history.guidance_model,
            "message": sample.content,
            "reasoning_content": sample.reasoning,
            "metrics": Metrics(
                completion_tokens=sample.completion_tokens,
                prompt_tokens=None if tokens is None else len(tokens.prompt),
                prompt_token_ids=None if tokens is None else list(tokens.prompt),
                completion_token_ids=None if tokens is None else list(tokens.completion),
                logprobs=None if tokens is None else list(tokens.logprobs),
            ),
        }
    else:
        error = slot.failure.error if slot.failure is not None else "no answer yet"
        guidance = {"model_name": history.guidance_model, "message": f"(no guidance: {error})"}
    guidance["extra"] = {**common, "call": "guidance", "parse": _guidance_parse(slot)}
    calls = [guidance]
    done = slot.finished
    if done is not None and done.executor is not None:
        answer = done.executor
        calls.append(
            {
                "model_name": history.executor_model,
                "message": str(answer.get("content") or ""),
                "reasoning_content": answer.get("reasoning"),
                "metrics": Metrics(completion_tokens=answer.get("completion_tokens")),
                "extra": {**common, "call": "executor", "parse": _program_parse(slot)},
            }
        )
    return calls


def _slot_facts(history: RunHistory, slot: SlotRecord) -> dict[str, Any]:
    """What both calls of a slot carry: where it stands, its receipt, and its verdict."""
    done = slot.finished
    receipt = (
        done.receipt
        if done is not None
        else (slot.sample.receipt if slot.sample is not None else None)
    )
    facts: dict[str, Any] = {
        "step": slot.step,
        "group": slot.group,
        "rollout": slot.rollout,
        "parent_id": slot.parent_id,
        "receipt": receipt,
        "committed": slot.step < history.committed_steps,
    }
    if done is None:
        return {**facts, "status": "pending"}
    verification = done.rollout.verification
    return {
        **facts,
        "status": verification.status.value,
        "raw_score": verification.raw_score,
        "reward": verification.reward,
        "verdict": verification.message,
        "scorer_receipt": verification.receipt or None,
        "child_id": done.child_id,
    }


def _guidance_parse(slot: SlotRecord) -> str:
    """`ok`, `rejected` (no single terminal guidance block), `failed` (no answer) or `pending`."""
    if slot.sample is None:
        return "failed" if slot.failure is not None else "pending"
    if slot.finished is None:
        return "pending"
    return "rejected" if slot.finished.rollout.guidance is None else "ok"


def _program_parse(slot: SlotRecord) -> str:
    """`program`, `program_from_fallback` (no `<solution>` block) or `parse_error`."""
    assert slot.finished is not None
    rollout = slot.finished.rollout
    if rollout.verification.status is Status.PARSE_ERROR or rollout.program is None:
        return "parse_error"
    return "program_from_fallback" if rollout.metadata.get(PROGRAM_FROM_FALLBACK) else "program"


def write(path: Path, value: Trajectory, environ: Mapping[str, str]) -> Path:
    """Write `value` to `path`, credentials of `environ` redacted, checked by Harbor's model."""
    data = redact(value.to_json_dict(), secret_values(environ))
    checked = Trajectory.model_validate(data)
    atomic_write_text(path, format_trajectory_json(checked.to_json_dict()))
    return path
