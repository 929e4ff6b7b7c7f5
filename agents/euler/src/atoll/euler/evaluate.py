"""The fan-out: attempts (problem x language x approach x sample) as Pi rollouts, scored into rows.

Each attempt is one `atoll.pi.rollout` rollout with a fresh workspace that
holds only its problem's resources (never anything from the store's private
part: answers are read here, on the host, after the rollout ended). At most
`workers` rollouts run at a time. Each finished rollout is gated at once and
its row appended durably, so an interrupted run resumes where it stopped:
an attempt with a scored row is not run again; one whose rollout finished
but whose row was not written is scored from its record; one cut off mid-
rollout is moved aside and run again.

Infrastructure failures (provider errors, container failures) become rows
with status `error`: never a score, and retried on the next run.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from atoll.core.durable import atomic_write_json
from atoll.core.termination import loop_signal_handlers
from atoll.euler import gate, prompts, record_input, rows, run_archive
from atoll.euler.curriculum import Attempt
from atoll.euler.store import Store

LOST_FILE = "lost.json"  # in a try whose cluster node went away mid-rollout


@dataclass(frozen=True)
class Task:
    """One problem as an attempt sees it: heading, statement, and the files copied in."""

    id: str
    heading: str
    statement: str
    files: Mapping[str, Path | bytes]


class TaskSource(Protocol):
    def task(self, task_id: str) -> Task: ...

    def expected(self, task_id: str) -> str: ...


@dataclass
class StoreSource:
    """Problems of an Euler store; resources copied by name, answers read only for scoring."""

    store: Store

    def task(self, task_id: str) -> Task:
        number = int(task_id)
        entry = self.store.entry(number)
        if entry is None:
            raise KeyError(f"problem {number} is not in the store")
        files: dict[str, Path | bytes] = {
            name: self.store.resource_path(name) for name in entry.resources
        }
        return Task(
            task_id, f"Problem {number}: {entry.title}", self.store.statement_text(number), files
        )

    def expected(self, task_id: str) -> str:
        return self.store.expected(int(task_id))


@dataclass
class Settings:
    """How attempts run: Pi's settings, the declared model revision, the image and the pool size."""

    pi: Any  # atoll.pi.settings.PiSettings
    model_revision: str | None = None
    workers: int = 1
    image: str | None = None
    docker_host: str | None = None
    environ: Mapping[str, str] | None = None
    signature: str = ""
    signature_parts: dict[str, Any] = field(default_factory=dict)
    row_extra: dict[str, Any] = field(default_factory=dict)  # added to every row (a run's binding)
    ray: str | None = None  # a Ray cluster's address (or "auto") to run the rollouts on


def prompt_for(task: Task, attempt: Attempt) -> str:
    return prompts.render(
        heading=task.heading,
        statement=task.statement,
        files=sorted(task.files),
        language=attempt.language,
        approach=attempt.approach,
    )


def row_for(
    attempt: Attempt,
    record: Mapping[str, Any],
    expected: str | None,
    settings: Settings,
    *,
    run_id: str,
    rollout_dir: str,
) -> dict[str, Any]:
    """The raw row of one finished rollout (the gate applied when the record is scorable)."""
    scorable = bool(record.get("scorable")) and expected is not None
    result = (
        gate.score(record_input.gate_input(dict(record)), expected, attempt.language)
        if scorable and expected is not None
        else None
    )
    audit = record.get("audit") or {}
    hits = list(audit.get("hits") or [])
    disqualified = bool(audit.get("disqualified"))
    pre_audit = int(bool(result and result.passed))
    container = record.get("container") or {}
    usage = record.get("usage") or {}
    timings = record.get("timings") or {}
    return {
        **_identity(attempt, settings, run_id),
        "status": "scored" if scorable else "error",
        "error": None if scorable else (record.get("error") or "the rollout could not be scored"),
        "outcome": record.get("outcome"),
        "limit": record.get("limit"),
        "stop_reason": record.get("stop_reason"),
        "gate": None if result is None else result.to_json(),
        "pre_audit_score": pre_audit,
        "disqualified": disqualified,
        "attempted_paths": [h.get("text") for h in hits],
        "audit_hits": hits,
        "score": 0 if disqualified else pre_audit,
        "passed": bool(pre_audit and not disqualified),
        "executed": bool(result and result.conditions["file_executed"]),
        "container": {
            "id": container.get("id"),
            "image": container.get("image"),
            "image_id": container.get("image_id"),
            "runtimes": container.get("runtimes"),
            "network": container.get("network"),
        },
        "cleanup": container.get("cleanup"),
        "latency_s": timings.get("total_s"),
        "tokens": {
            "input": usage.get("input_tokens", 0),
            "output": usage.get("output_tokens", 0),
            "total": usage.get("total_tokens", 0),
        },
        "cost_usd": usage.get("cost_usd", 0.0),
        "turns": record.get("turns"),
        "rollout_id": record.get("rollout_id"),
        "rollout_dir": rollout_dir,
        "created_at": record.get("created_at"),
        "hashes": record.get("hashes"),
        **settings.row_extra,
    }


def _identity(attempt: Attempt, settings: Settings, run_id: str) -> dict[str, Any]:
    """What every row starts with: which attempt of which run, by which system under test."""
    return {
        "row_format": rows.ROW_FORMAT,
        "run_id": run_id,
        "phase": attempt.phase,
        "problem": attempt.problem,
        "language": attempt.language,
        "approach": attempt.approach,
        "sample": attempt.sample,
        "model": settings.pi.model,
        "model_revision": settings.model_revision,
        "model_signature": settings.signature,
    }


def error_row(
    attempt: Attempt, message: str, settings: Settings, *, run_id: str, rollout_dir: str
) -> dict[str, Any]:
    """A row for a rollout that could not run at all: an infrastructure error, never a score."""
    return {
        **_identity(attempt, settings, run_id),
        "status": "error",
        "error": message,
        "gate": None,
        "pre_audit_score": 0,
        "disqualified": False,
        "attempted_paths": [],
        "score": 0,
        "passed": False,
        "executed": False,
        "rollout_dir": rollout_dir,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **settings.row_extra,
    }


def scored_keys(
    existing: Sequence[dict[str, Any]], run_id: str
) -> set[tuple[str, str, str, str, int]]:
    return {
        rows.attempt_key(r)
        for r in existing
        if r.get("status") == "scored" and r.get("run_id") == run_id
    }


class Runner:
    """Runs attempts for one rows file; shared by `eval`, the curriculum and transfer runs."""

    def __init__(
        self,
        source: TaskSource,
        settings: Settings,
        *,
        say: Callable[[str], None] = lambda _line: None,
    ) -> None:
        self.source = source
        self.settings = settings
        self.say = say
        self._client: Any = None
        self._cluster: Any = None  # atoll.euler.cluster.Cluster when rollouts run on Ray
        self.image_info: dict[str, Any] | None = None

    def preflight(self) -> dict[str, Any]:
        """Fail fast on what would fail every rollout: the key, the engine, the image, Pi
        (on a cluster: on each of its Docker nodes, which then must agree on the image)."""
        from atoll.pi.rollout import connect, describe_image, ensure_image, ensure_pi

        if self.settings.ray is not None:
            from atoll.euler import cluster

            self._cluster = cluster.connect(self.settings.ray)
            self.image_info = self._cluster.preflight(self.settings.pi, self.settings.image)
            return self.image_info
        self.settings.pi.api_key(self.settings.environ)
        self._client = connect(self.settings.docker_host)
        if self.settings.image:
            described = describe_image(self._client, self.settings.image)
        else:
            described = ensure_image(self._client, self.say)
        ensure_pi(self.say)
        self.image_info = described
        return self.image_info

    async def run(
        self, attempts: Sequence[Attempt], out_dir: Path, rows_path: Path, run_id: str
    ) -> list[dict[str, Any]]:
        """Run every attempt without a scored row in `rows_path`; the new rows."""
        rows.repair(rows_path)
        existing = rows.read(rows_path) if rows_path.exists() else []
        done = scored_keys(existing, run_id)
        todo = [a for a in attempts if a.key() not in done]
        if len(todo) < len(attempts):
            self.say(
                f"resuming: {len(attempts) - len(todo)} of {len(attempts)} attempts already scored"
            )
        run_archive.sweep_incoming(out_dir / "rollouts")
        at_once = self.settings.workers if self._cluster is None else self._cluster.slots()
        semaphore = asyncio.Semaphore(max(1, at_once))
        new_rows: list[dict[str, Any]] = []
        finished = 0

        async def one(attempt: Attempt) -> None:
            nonlocal finished
            async with semaphore:
                row, lost = await self._attempt(attempt, out_dir, run_id)
                if lost is not None:  # recorded as an infrastructure failure, then tried once more
                    rows.append(rows_path, row)
                    new_rows.append(row)
                    self.say(f"{_progress_line(finished, len(todo), row)}; retrying elsewhere")
                    row, _ = await self._attempt(attempt, out_dir, run_id, avoid=lost.node_id)
            rows.append(rows_path, row)
            new_rows.append(row)
            finished += 1
            self.say(_progress_line(finished, len(todo), row))

        await asyncio.gather(*(one(a) for a in todo))
        return new_rows

    async def _attempt(
        self, attempt: Attempt, out_dir: Path, run_id: str, *, avoid: str | None = None
    ) -> tuple[dict[str, Any], Any]:
        """The attempt's row, and the `NodeLost` when its cluster node went away mid-rollout
        (`avoid`: the node a retry must not use)."""
        from atoll.euler.cluster import NodeLost, RemoteFailure
        from atoll.pi.rollout import RolloutRefused

        run_dir, record = _latest_run(out_dir / "rollouts", attempt.name())
        relative = os.path.relpath(run_dir, out_dir)
        task_id = str(attempt.problem)
        settings = self.settings
        try:
            expected = self.source.expected(task_id)
        except Exception as exc:  # a store that lost an answer: an error, never a score
            return error_row(attempt, str(exc), settings, run_id=run_id, rollout_dir=relative), None
        if record is not None and record.get("scorable"):
            # it finished before an interruption, but its row was never written: score it now
            row = row_for(attempt, record, expected, settings, run_id=run_id, rollout_dir=relative)
            return row, None
        if run_dir.exists():  # cut off mid-way, or an infrastructure error: a new try, beside it
            run_dir = _next_try(out_dir / "rollouts", attempt.name())
            relative = os.path.relpath(run_dir, out_dir)
        node: str | None = None
        try:
            request = self._request(attempt, run_dir, run_id)
            record, node = await self._execute(request, avoid)
        except RolloutRefused as exc:
            message = f"refused: {exc}"
        except NodeLost as exc:
            _mark_lost(run_dir, exc)
            message = f"node lost mid-rollout (an infrastructure failure): {exc}"
            row = error_row(attempt, message, settings, run_id=run_id, rollout_dir=relative)
            return {**row, "ray_node": exc.node_id}, exc
        except RemoteFailure as exc:  # as a local run would word it, on the node
            message = str(exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the engine, Pi or the workspace failed: infrastructure
            message = f"{type(exc).__name__}: {exc}"
        else:
            row = row_for(attempt, record, expected, settings, run_id=run_id, rollout_dir=relative)
            return (row if node is None else {**row, "ray_node": node}), None
        row = error_row(attempt, message, settings, run_id=run_id, rollout_dir=relative)
        return (row if self._cluster is None else {**row, "ray_node": node}), None

    def _request(self, attempt: Attempt, run_dir: Path, run_id: str) -> Any:
        """The rollout of one attempt, as `atoll.pi.rollout` takes it."""
        from atoll.pi.rollout import RolloutRequest

        task = self.source.task(str(attempt.problem))
        return RolloutRequest(
            prompt=prompt_for(task, attempt),
            settings=self.settings.pi,
            run_dir=run_dir,
            language=attempt.language,
            files=dict(task.files),
            image=self.settings.image or _default_image(),
            metadata={
                "euler": {
                    "run_id": run_id,
                    "phase": attempt.phase,
                    "problem": attempt.problem,
                    "language": attempt.language,
                    "approach": attempt.approach,
                    "sample": attempt.sample,
                    "model_signature": self.settings.signature,
                }
            },
        )

    async def _execute(self, request: Any, avoid: str | None) -> tuple[dict[str, Any], str | None]:
        """Run the rollout here or on a cluster node; its record (in `request.run_dir` either
        way) and the node it ran on (None here)."""
        from atoll.euler import cluster
        from atoll.pi import rollout

        if self._cluster is None:
            result = await rollout.arun(request, client=self._client, environ=self.settings.environ)
            return result.model_dump(mode="json"), None
        archive, node = await self._cluster.rollout(cluster.job_for(request), avoid=avoid)
        await asyncio.to_thread(run_archive.unpack, archive, request.run_dir)
        return record_input.load(request.run_dir), node


class Interrupted(Exception):
    """Ctrl-C or SIGTERM stopped the run; rollouts in flight were cleaned up, rows kept."""


def run_to_end(coroutine: Any) -> Any:
    """Run `coroutine` so that SIGTERM, like Ctrl-C, cancels it and its rollouts clean up."""

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        with loop_signal_handlers(loop, task.cancel):
            return await coroutine

    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise Interrupted() from None


def _default_image() -> str:
    from atoll.pi.rollout import DEFAULT_IMAGE

    return DEFAULT_IMAGE


def _tries(rollouts: Path, name: str) -> list[Path]:
    """The directories of an attempt's tries, in order: NAME, NAME.try-2, NAME.try-3, ..."""
    found = [rollouts / name] if (rollouts / name).exists() else []
    number = 2
    while (rollouts / f"{name}.try-{number}").exists():
        found.append(rollouts / f"{name}.try-{number}")
        number += 1
    return found


def _latest_run(rollouts: Path, name: str) -> tuple[Path, dict[str, Any] | None]:
    """The attempt's last try and its record (None if it has none or it cannot be read)."""
    tries = _tries(rollouts, name)
    if not tries:
        return rollouts / name, None
    last = tries[-1]
    try:
        return last, record_input.load(last)
    except record_input.RecordError:
        return last, None


def _mark_lost(run_dir: Path, lost: Any) -> None:
    """Keep the lost try's place: the retry goes beside it, as after any infrastructure error."""
    atomic_write_json(
        run_dir / LOST_FILE, {"node_id": lost.node_id, "error": str(lost)}, make_parents=True
    )


def _next_try(rollouts: Path, name: str) -> Path:
    """A new directory for another try; earlier tries stay where their rows point."""
    return rollouts / f"{name}.try-{len(_tries(rollouts, name)) + 1}"


def _progress_line(done: int, total: int, row: dict[str, Any]) -> str:
    what = f"problem {row['problem']} {row['language']}/{row['approach']} sample {row['sample']}"
    if row["status"] != "scored":
        verdict = f"ERROR ({row.get('error')})"
    elif row["passed"]:
        verdict = "pass"
    else:
        failed = list((row.get("gate") or {}).get("failed") or [])
        if row.get("disqualified"):
            failed.append("path_audit")
        verdict = "fail: " + ", ".join(failed)
    latency = row.get("latency_s")
    took = f" in {latency:.1f} s" if isinstance(latency, int | float) else ""
    return f"[{done}/{total}] {row['phase']} {what}: {verdict}{took}"


def parse_problems(text: str) -> list[int]:
    """`1-10`, `3`, `1,4,7-9`: problem numbers in increasing order, each once."""
    numbers: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                low, high = (int(x) for x in part.split("-", 1))
                if low < 1 or high < low:
                    raise ValueError
                numbers.update(range(low, high + 1))
            else:
                value = int(part)
                if value < 1:
                    raise ValueError
                numbers.add(value)
        except ValueError:
            raise ValueError(
                f"--problems: {part!r} is not a problem number or a range like 1-10"
            ) from None
    if not numbers:
        raise ValueError("--problems names no problem")
    return sorted(numbers)
