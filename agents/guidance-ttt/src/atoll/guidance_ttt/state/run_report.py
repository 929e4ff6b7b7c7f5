"""What a run did, step by step, read back from its state directory.

The agent's outputs (the per-step JSON lines, the plot, Harbor's agent
context) are all derived from durable state, never from in-memory counters,
so they are the same whether the run went through in one go or was resumed
after a crash. Per committed step this reads the resume state's summary, the
step journal (receipts and token counts) and the archive as it stood after
the step, which it rebuilds by replaying the journals through the archive's
own event code from the seed roots.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.guidance_ttt.search.archive import Archive, ArchiveError, Selection
from atoll.guidance_ttt.search.node import Node
from atoll.guidance_ttt.state import resume
from atoll.guidance_ttt.state.run_dir import RunDir
from atoll.guidance_ttt.state.step_journal import StepState, read_step


class ReportError(RuntimeError):
    """The state directory does not hold a run this report can read."""


@dataclass
class StepRow:
    """One committed step as the outputs show it."""

    summary: dict[str, Any]
    receipts: list[str]
    rejected_receipts: list[str]
    guidance_tokens: int
    executor_tokens: int
    archive_best: float | None
    archive_median: float | None
    archive_nodes: int

    @property
    def step(self) -> int:
        return int(self.summary["step"])

    @property
    def programs_from_fallback(self) -> int:
        """Programs of this step found by the no-`<solution>` fallback (0 in summaries before it)."""
        return int(self.summary.get("programs_from_fallback") or 0)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.summary,
            "programs_from_fallback": self.programs_from_fallback,
            "well_formed_receipts": self.receipts,
            "rejected_receipts": self.rejected_receipts,
            "guidance_completion_tokens": self.guidance_tokens,
            "executor_completion_tokens": self.executor_tokens,
            "archive_best_raw_score": self.archive_best,
            "archive_median_raw_score": self.archive_median,
            "archive_nodes": self.archive_nodes,
        }


@dataclass
class RunReport:
    """The committed steps of one run, its seed (the first root) and its best program."""

    run_id: str
    scenario: str
    training: str
    identity: dict[str, Any]
    rows: list[StepRow] = field(default_factory=list)
    best: Node | None = None
    seed: Node | None = None

    @property
    def receipts(self) -> list[str]:
        return [r for row in self.rows for r in row.receipts]

    @property
    def guidance_tokens(self) -> int:
        return sum(row.guidance_tokens for row in self.rows)

    @property
    def programs_from_fallback(self) -> int:
        """Programs the run took from answers with no `<solution>` block: format drift."""
        return sum(row.programs_from_fallback for row in self.rows)

    @property
    def executor_tokens(self) -> int:
        return sum(row.executor_tokens for row in self.rows)

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return {
            "run_id": self.run_id,
            "scenario": self.scenario,
            "training": self.training,
            "identity": self.identity,
            "steps": len(self.rows),
            "best_raw_score": None if best is None else best.raw_score,
            "best_node_id": None if best is None else best.id,
            "seed_raw_score": None if self.seed is None else self.seed.raw_score,
            "guidance_completion_tokens": self.guidance_tokens,
            "executor_completion_tokens": self.executor_tokens,
            "programs_from_fallback": self.programs_from_fallback,
            "well_formed_receipts": self.receipts,
        }


def read_report(state_dir: Path) -> RunReport:
    """The report of the run in `state_dir`, up to its last committed step."""
    saved = resume.load(state_dir)
    if saved is None:
        raise ReportError(f"{state_dir}: no Guidance-TTT run was started here")
    paths = RunDir(state_dir)
    committed = _committed_archive(paths)
    report = RunReport(saved.run_id, saved.scenario, saved.training, saved.identity)
    summaries = {s.step: s.to_json() for s in saved.summaries}
    replay = _seed_archive(committed)
    for step in range(committed.step):
        journal = read_step(paths.step_journal(step), step)
        _replay_step(replay, journal, step)
        report.rows.append(_row(summaries.get(step, {"step": step}), journal, replay))
    report.best = committed.best
    roots = [node for node in committed.nodes.values() if node.parent is None]
    report.seed = min(roots, key=lambda node: node.id, default=None)
    return report


def _committed_archive(paths: RunDir) -> Archive:
    path = paths.committed_archive
    try:
        data = json.loads(path.read_bytes())
        return Archive.from_json(data["archive"])
    except FileNotFoundError:
        raise ReportError(f"{path} does not exist; no step of this run was committed") from None
    except (OSError, ValueError, KeyError, TypeError, ArchiveError) as exc:
        raise ReportError(f"{path}: cannot be read ({exc})") from None


def _seed_archive(committed: Archive) -> Archive:
    """The archive as it stood before step 0: the run's seed roots, unvisited."""
    roots = sorted((n for n in committed.nodes.values() if n.is_root), key=lambda n: n.id)
    fresh = [
        Node(
            id=r.id,
            parent=None,
            timestep=0,
            value=r.value,
            raw_score=r.raw_score,
            entry=r.entry,
            program_sha256=r.program_sha256,
        )
        for r in roots
    ]
    return Archive(committed.direction, fresh, max_nodes=committed.max_nodes)


def _replay_step(archive: Archive, journal: StepState, step: int) -> None:
    for group, node_id in sorted(journal.selections.items()):
        archive.apply_selection(Selection(step, group, node_id))
    for slot in journal.finish_order:
        archive.apply_rollout(journal.finished[slot].rollout)
    archive.finish_step(step)


def _row(summary: dict[str, Any], journal: StepState, archive: Archive) -> StepRow:
    receipts: list[str] = []
    rejected: list[str] = []
    guidance_tokens = executor_tokens = 0
    for slot in journal.finish_order:
        done = journal.finished[slot]
        if done.receipt is not None:
            (receipts if done.rollout.guidance is not None else rejected).append(done.receipt)
        executor_tokens += int((done.executor or {}).get("completion_tokens") or 0)
    for sample in journal.samples.values():
        guidance_tokens += int(sample.completion_tokens or 0)
    scores = [n.raw_score for n in archive.nodes.values() if n.raw_score is not None]
    best = archive.best
    return StepRow(
        summary=summary,
        receipts=receipts,
        rejected_receipts=rejected,
        guidance_tokens=guidance_tokens,
        executor_tokens=executor_tokens,
        archive_best=None if best is None else best.raw_score,
        archive_median=statistics.median(scores) if scores else None,
        archive_nodes=len(archive.nodes),
    )
