"""What the run explorer shows of a run, as plain JSON: the run, its steps, nodes and rollouts.

Built from `RunHistory` (the state directory, read without touching the
run), so the explorer works on a finished, running or killed run alike.
The archive's nodes are the tree; every journaled rollout is a visit of its
parent, and the ones that made no node still in the archive (a rejected or
failed guidance, a parse error, a program the scorer rejected, a duplicate,
a child the step-end filter pruned) stay visible as such. Programs are kept
once each, by digest; each program comes with its diff against its parent's.
"""

from __future__ import annotations

import difflib
from typing import Any

from atoll.guidance_ttt.contract import Direction
from atoll.guidance_ttt.search.node import Node
from atoll.guidance_ttt.search.scored_program import Status, Verification, program_digest
from atoll.guidance_ttt.state.run_history import RunHistory, SlotRecord

# Outcome classes, for the filters: the verdict a rollout ended with, in a reader's words.
SCORED = "scored"
PARSE_ERROR = "parse_error"
JUDGE_ERROR = "judge_error"
GUIDANCE_REJECTED = "guidance_rejected"
GUIDANCE_FAILED = "guidance_failed"
PENDING = "pending"
OUTCOMES = (SCORED, PARSE_ERROR, JUDGE_ERROR, GUIDANCE_REJECTED, GUIDANCE_FAILED, PENDING)
# A rejected guidance answer is shown whole up to this many characters (it has no block to show).
ANSWER_CHARS = 20_000


def outcome(verification: Verification | None) -> str:
    """The outcome class of a rollout's verdict (None: not booked yet)."""
    if verification is None:
        return PENDING
    if verification.scored:
        return SCORED
    if verification.status is Status.PARSE_ERROR:
        return PARSE_ERROR
    if verification.status is Status.GUIDANCE_REJECTED:
        return GUIDANCE_REJECTED
    if verification.status is Status.GUIDANCE_FAILED:
        return GUIDANCE_FAILED
    return JUDGE_ERROR  # the scorer's own verdict: compile error, invalid, limits, no score


def run_view(history: RunHistory) -> dict[str, Any]:
    """The explorer's data for one run (JSON-able; credentials are the caller's to redact)."""
    archive = history.archive
    programs: dict[str, str] = {}
    node_programs = {n.id: n.entry.program for n in archive.nodes.values()}
    for slot in history.slots:  # children pruned since, whose programs only the journals keep
        done = slot.finished
        if done is not None and done.child_id is not None:
            node_programs.setdefault(done.child_id, done.rollout.program)
    rollouts = [_rollout(slot, archive.nodes, node_programs, programs) for slot in history.slots]
    made_by = {r["child"]: r for r in rollouts if r["child"] is not None}
    nodes = [
        _node(node, made_by.get(node.id), node_programs, programs)
        for node in sorted(archive.nodes.values(), key=lambda n: n.id)
    ]
    seed_best, steps = _steps(history, rollouts, nodes)
    saved = history.saved
    return {
        "run": {
            "run_id": saved.run_id,
            "scenario": saved.scenario,
            "training": saved.training,
            "direction": archive.direction.value,
            "groups": saved.identity.get("groups"),
            "rollouts": saved.identity.get("rollouts"),
            "guidance_model": history.guidance_model,
            "executor_model": history.executor_model,
            "committed_steps": history.committed_steps,
            "journaled_steps": history.journaled_steps,
            "best_id": archive.best_id,
            "seed_best": seed_best,
            "total_rollouts": len(rollouts),
        },
        "steps": steps,
        "nodes": nodes,
        "rollouts": rollouts,
        "programs": programs,
        "outcomes": list(OUTCOMES),
    }


def _keep(program: str | None, programs: dict[str, str]) -> str | None:
    if program is None:
        return None
    digest = program_digest(program)
    programs.setdefault(digest, program)
    return digest


def _diff(parent: str | None, program: str | None) -> str | None:
    if program is None or parent is None:
        return None
    lines = difflib.unified_diff(
        parent.splitlines(keepends=True),
        program.splitlines(keepends=True),
        fromfile="parent",
        tofile="this program",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _verdict(verification: Verification | None) -> dict[str, Any] | None:
    return None if verification is None else verification.to_json()


def _rollout(
    slot: SlotRecord,
    nodes: dict[int, Node],
    node_programs: dict[int, str | None],
    programs: dict[str, str],
) -> dict[str, Any]:
    done = slot.finished
    verification = None if done is None else done.rollout.verification
    sample = slot.sample
    receipt = done.receipt if done is not None else (sample.receipt if sample else None)
    program = None if done is None else done.rollout.program
    parent_program = None if slot.parent_id is None else node_programs.get(slot.parent_id)
    rejected = verification is not None and verification.status is Status.GUIDANCE_REJECTED
    child = None if done is None else done.child_id
    return {
        "id": f"{slot.step}-{slot.group}-{slot.rollout}",
        "step": slot.step,
        "group": slot.group,
        "rollout": slot.rollout,
        "parent": slot.parent_id,
        "child": child,
        "child_kept": child is not None and child in nodes,
        "outcome": outcome(verification),
        "verification": _verdict(verification),
        "receipt": receipt,
        "guidance": None if done is None else done.rollout.guidance,
        "answer": sample.content[:ANSWER_CHARS] if sample is not None and rejected else None,
        "guidance_error": None if slot.failure is None else slot.failure.error,
        "summary": None if done is None else done.rollout.summary,
        "program": _keep(program, programs),
        "diff": _diff(parent_program, program),
        "guidance_tokens": None if sample is None else sample.completion_tokens,
        "executor_tokens": None
        if done is None or done.executor is None
        else done.executor.get("completion_tokens"),
    }


def _node(
    node: Node,
    made_by: dict[str, Any] | None,
    node_programs: dict[int, str | None],
    programs: dict[str, str],
) -> dict[str, Any]:
    entry = node.entry
    parent_program = None if node.parent is None else node_programs.get(node.parent)
    return {
        "id": node.id,
        "parent": node.parent,
        "children": list(node.children),
        "timestep": node.timestep,
        "step": None if node.parent is None else node.timestep - 1,
        "raw_score": node.raw_score,
        "value": node.value,
        "visits": node.n,
        "candidate": node.candidate,
        "rollout": None if made_by is None else made_by["id"],
        "group": None if made_by is None else made_by["group"],
        "receipt": entry.metadata.get("receipt"),
        "guidance": entry.guidance,
        "summary": entry.summary,
        "verification": _verdict(entry.verification),
        "program": _keep(entry.program, programs),
        "diff": _diff(parent_program, entry.program),
    }


def _steps(
    history: RunHistory, rollouts: list[dict[str, Any]], nodes: list[dict[str, Any]]
) -> tuple[float | None, list[dict[str, Any]]]:
    """The seed's best raw score, and per journaled step: its scored rollouts' raw scores, the
    best so far, and how many rollouts ended in each outcome."""
    maximize = history.archive.direction is Direction.MAX
    best: float | None = None
    for node in nodes:  # the seed roots: where the search started
        if node["parent"] is None and node["raw_score"] is not None:
            best = _better(best, node["raw_score"], maximize)
    seed = best
    steps = []
    for step in range(history.journaled_steps):
        mine = [r for r in rollouts if r["step"] == step]
        scores = [
            r["verification"]["raw_score"]
            for r in mine
            if r["outcome"] == SCORED and r["verification"]["raw_score"] is not None
        ]
        for score in scores:
            best = _better(best, score, maximize)
        counts = {name: sum(1 for r in mine if r["outcome"] == name) for name in OUTCOMES}
        steps.append(
            {
                "step": step,
                "committed": step < history.committed_steps,
                "scores": scores,
                "best": best,
                "counts": counts,
            }
        )
    return seed, steps


def _better(best: float | None, score: float, maximize: bool) -> float:
    if best is None:
        return score
    return max(best, score) if maximize else min(best, score)
