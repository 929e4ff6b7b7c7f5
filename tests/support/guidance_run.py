"""Building blocks of Guidance-TTT step and run tests: a task, scripted models and a step context.

The guidance model answers through the real Reef server, the executor is a
scripted OpenAI-compatible server, and programs are scored by the real
embedded judge, so a step test exercises every wire the production run uses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.judge import JUDGE_PROGRAMS
from support.openai_server import NumberedScript, Reply

from atoll.guidance_ttt.contract import Task, TaskContract, load_task
from atoll.guidance_ttt.search.archive import Archive
from atoll.guidance_ttt.search.scored_program import Entry, Status, Verification
from atoll.guidance_ttt.search.step import Limits, StepContext
from atoll.guidance_ttt.services.executor import Executor, executor_spec
from atoll.guidance_ttt.services.reef_guidance import GuidanceClient, ReefEndpoint
from atoll.guidance_ttt.services.scorer import Scorer
from atoll.guidance_ttt.state.durable_archive import Library
from atoll.judge.client import DEFAULT_DEADLINE_S
from atoll.judge.scorer import SCORER_NAME, JudgeScorer

CONTRACT = {
    "solution_language": "cpp",
    "mechanism_constraint": "Every mechanism must finish within the time limit.",
    "objective": "Pack all polyominoes into the smallest square.",
    "raw_score_label": "judge score",
    "score_direction": "max",
    "solution_contract": "a complete C++17 program reading stdin and writing stdout",
    "judge_problem_id": "0",
}
STATEMENT = "Pack the given polyominoes into a square without overlap. Minimise the area."


def judge_scorer(
    url: str,
    contract: TaskContract,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    poll_interval_s: float = 0.25,
) -> Scorer:
    """A scorer on a judge already running at `url` (tests share one), for a judge task.

    A run opens its scorer by the contract's name (`open_task_scorer`); tests
    that share one judge across many steps build it straight on that judge.
    """
    if contract.judge_problem_id is None:
        raise ValueError("the task's contract names no judge_problem_id")
    judge = JudgeScorer(
        url,
        contract.judge_problem_id,
        contract.solution_language.value,
        deadline_s=deadline_s,
        poll_interval_s=poll_interval_s,
    )
    return Scorer(judge, SCORER_NAME)


SHELF = (JUDGE_PROGRAMS / "shelf.cpp").read_text()
BROKEN = (JUDGE_PROGRAMS / "broken.cpp").read_text()


def write_task(directory: Path) -> Task:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "instruction.md").write_text(STATEMENT + "\n", encoding="utf-8")
    (directory / "contract.json").write_text(json.dumps(CONTRACT), encoding="utf-8")
    return load_task(directory)


def seed_entry() -> Entry:
    return Entry(
        program=SHELF,
        summary="Shelf packing of bounding boxes, tallest first.",
        verification=Verification(Status.VALID, 10.0, 10.0, "seed"),
    )


def new_library(state_dir: Path, task: Task, groups: int) -> Library:
    """A fresh run's library, committed at step 0 as the controller leaves it."""
    library = Library.create(
        state_dir, Archive.seeded(seed_entry(), task.contract.score_direction, groups)
    )
    library.commit()
    return library


class GuidanceScript(NumberedScript):
    """Guidance answers by call number: every `malformed_every`-th answer has no guidance block."""

    def __init__(self, malformed_every: int = 0) -> None:
        super().__init__()
        self.malformed_every = malformed_every

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        if self.malformed_every and number % self.malformed_every == 0:
            return Reply(content="I would try something clever but forgot the tags.")
        return Reply(
            content=f"Thinking...\n<guidance>Idea {number}: sort pieces by area.</guidance>"
        )


class ExecutorScript(NumberedScript):
    """Executor answers by call number: distinct valid programs, with a broken or empty one mixed in."""

    def __init__(self, broken_every: int = 0, empty_every: int = 0, variants: int = 0) -> None:
        super().__init__()
        self.broken_every = broken_every
        self.empty_every = empty_every
        self.variants = variants  # > 0: programs repeat after this many (the judge's cache hits)

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        if self.empty_every and number % self.empty_every == 0:
            return Reply(content="I could not write it.")
        program = BROKEN if self.broken_every and number % self.broken_every == 0 else SHELF
        variant = number % self.variants if self.variants else number
        program = f"// variant {variant}\n{program}"
        return Reply(
            content=f"<solution>\n```cpp\n{program}```\n</solution>\n<summary>Variant {number}.</summary>"
        )


def step_context(
    *,
    task: Task,
    library: Library,
    reef_server: Any,
    scenario: str,
    executor_url: str,
    judge_url: str,
    groups: int,
    rollouts: int,
    run_id: str = "test-run",
    guidance_timeout_s: float = 60.0,
) -> StepContext:
    guidance = GuidanceClient(
        ReefEndpoint(reef_server.url, reef_server.token),
        scenario=scenario,
        model="scripted",
        max_completion_tokens=256,
        timeout_s=guidance_timeout_s,
    )
    executor = Executor(executor_spec("gpt-oss-local", base_url=executor_url), environ={})
    scorer = judge_scorer(judge_url, task.contract, deadline_s=120, poll_interval_s=0.05)
    return StepContext(
        task=task,
        library=library,
        guidance=guidance,
        executor=executor,
        scorer=scorer,
        run_id=run_id,
        groups=groups,
        rollouts=rollouts,
        limits=Limits(guidance=4, executor=4, judge=2),
    )
