"""The frozen transfer suite: four non-Euler file tasks, pinned by one digest.

Each task is a statement, the files it reads (copied into the workspace) and
an answer computed by `reference`. `SUITE_DIGEST` is the sha256 of the
canonical JSON of every statement, every resource's hash and every answer:
`transfer run` refuses to sample if the installed suite does not reproduce
it, so two runs that carry the same digest saw the same tasks and answers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

from atoll.core.durable import canonical_json
from atoll.euler.transfer import reference

SUITE_NAME = "atoll-transfer-v1"
SUITE_DIGEST = "b8aa9dd21fd4c35cd85dfb7f7465e39193b295d5a4cd3fcf0ff062682af4ece4"
TASK_IDS = tuple(reference.SOLUTIONS)


class SuiteError(RuntimeError):
    """The installed suite does not match its pinned digest."""


@dataclass(frozen=True)
class TransferTask:
    id: str
    title: str
    statement: str
    files: dict[str, bytes]

    def expected(self) -> str:
        return str(reference.SOLUTIONS[self.id](self.files))


def load() -> dict[str, TransferTask]:
    root = resources.files("atoll.euler.transfer").joinpath("tasks")
    tasks = {}
    for task_id in TASK_IDS:
        folder = root.joinpath(task_id)
        statement = folder.joinpath("task.md").read_text("utf-8")
        files = {
            entry.name: entry.read_bytes()
            for entry in sorted(folder.iterdir(), key=lambda e: e.name)
            if entry.is_file() and entry.name != "task.md"
        }
        title = statement.splitlines()[0].lstrip("# ").strip()
        body = "\n".join(statement.splitlines()[1:]).strip()
        tasks[task_id] = TransferTask(task_id, title, body, files)
    return tasks


def digest(tasks: dict[str, TransferTask]) -> str:
    content = {
        task.id: {
            "title": task.title,
            "statement_sha256": hashlib.sha256(task.statement.encode()).hexdigest(),
            "resources": {n: hashlib.sha256(d).hexdigest() for n, d in sorted(task.files.items())},
            "answer": task.expected(),
        }
        for task in tasks.values()
    }
    return hashlib.sha256(canonical_json({"suite": SUITE_NAME, "tasks": content})).hexdigest()


def verified() -> dict[str, TransferTask]:
    """The suite, after checking it reproduces the pinned digest."""
    tasks = load()
    found = digest(tasks)
    if found != SUITE_DIGEST:
        raise SuiteError(
            f"the transfer suite's digest is {found}, not the pinned {SUITE_DIGEST}: its tasks, "
            "resources or reference answers changed, so results would not be comparable"
        )
    return tasks
