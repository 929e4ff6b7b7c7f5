"""The task sets the trainers see: ids and prompts out, scoring kept on this side.

A task is one GRPO group: for `hidden`, one (family, hidden case set,
language); for `answer`, one (problem, language, strategy). The trainer
process gets only `{id, prompt, tags}`; hidden cases and Euler answers stay
here, in the scoring service, and never cross into the trainer.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.pi_train.hidden.families import FAMILIES, LANGUAGES, Instance

HIDDEN_SYSTEM_PROMPT = (
    "You write one function, `solve`, in the language the task names. Submit its complete "
    "source with the submit_solution tool. The checker runs it on hidden cases and tells you "
    "only how many passed; you may submit once more after a shortfall."
)
ANSWER_SYSTEM_PROMPT = (
    "You solve a Project Euler problem. Show the program you would run in one fenced code "
    "block of the language asked for, then end with one line `FINAL_ANSWER: <value>`."
)
STRATEGIES: dict[str, str] = {
    "direct": "Write a short {language} program that computes the answer directly.",
    "derive": (
        "First derive a formula or a faster method in a few sentences, then write a "
        "{language} program that uses it."
    ),
}
_LANGUAGE_NAMES = {"python": "Python", "javascript": "JavaScript", "julia": "Julia"}
FINAL_ANSWER = re.compile(r"FINAL_ANSWER\s*:\s*(\S+)\s*$", re.MULTILINE)
FENCE = re.compile(r"```([a-zA-Z0-9_+-]*)\n.*?```", re.DOTALL)
_FENCE_TAGS = {"python": {"python", "py"}, "javascript": {"javascript", "js"}, "julia": {"julia"}}
CODE_FORMAT_PENALTY = 0.1


class TaskSetError(ValueError):
    """A task set that cannot be built from the given flags; the message says which."""


@dataclass(frozen=True)
class HiddenTask:
    id: str
    instance: Instance
    language: str

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": self.instance.prompt(self.language),
            "tags": [self.instance.family, self.language],
        }


@dataclass(frozen=True)
class AnswerTask:
    id: str
    number: int
    language: str
    strategy: str
    prompt: str
    groups: tuple[str, ...] = ()  # extra metric tags: a replay source, the problem

    def public(self) -> dict[str, Any]:
        tags = [*self.groups, self.language, self.strategy]
        return {"id": self.id, "prompt": self.prompt, "tags": tags}


def answer_task(
    store: Any, number: int, language: str, strategy: str, groups: tuple[str, ...] = ()
) -> AnswerTask:
    """Problem `number` in one language and strategy; TaskSetError when it cannot be attempted."""
    why = store.missing(number)
    if why is not None:
        raise TaskSetError(why)
    name = _LANGUAGE_NAMES.get(language, language)
    prompt = (
        f"Project Euler problem {number}:\n\n{store.statement_text(number)}\n\n"
        f"{STRATEGIES[strategy].format(language=name)} Show it in one fenced ```{language} block, "
        "then end with the line `FINAL_ANSWER: <value>`."
    )
    return AnswerTask(
        f"euler/{number}/{language}/{strategy}", number, language, strategy, prompt, groups
    )


def check_languages(languages: tuple[str, ...]) -> None:
    """Refuse a language no hidden-variant family is written in, or none at all."""
    unknown = sorted(set(languages) - set(LANGUAGES))
    if unknown:
        raise TaskSetError(
            f"hidden-variant tasks have no language {', '.join(unknown)}; "
            f"choose from {', '.join(LANGUAGES)}"
        )
    if not languages:
        raise TaskSetError("no language to train")


def hidden_tasks(languages: tuple[str, ...], count: int) -> list[HiddenTask]:
    """`count` groups in a fixed order: instance index outermost, then family, then language.

    The order never depends on `count`, so a longer run starts with the groups
    of a shorter one. Runs now deal their groups mixed (atoll.pi_train.hidden.sets);
    this order is the one runs written before that used, listed again to read
    what such a run trained on (atoll.pi_train.training.trained_on).
    """
    check_languages(languages)
    tasks: list[HiddenTask] = []
    index = 0
    while len(tasks) < count:
        for family in sorted(FAMILIES):
            instance = FAMILIES[family].instance("train", index)
            for language in languages:
                tasks.append(HiddenTask(f"{family}/train/{index}/{language}", instance, language))
        index += 1
    return tasks[:count]


def check_euler_languages(languages: tuple[str, ...]) -> None:
    from atoll.pi_train.euler_source import EULER_LANGUAGES

    unknown = sorted(set(languages) - set(EULER_LANGUAGES))
    if unknown:
        raise TaskSetError(
            f"Euler tasks have no language {', '.join(unknown)}; "
            f"choose from {', '.join(EULER_LANGUAGES)}"
        )


def answer_tasks(
    store: Any, languages: tuple[str, ...], count: int, *, leave_out_reserved: bool = True
) -> list[AnswerTask]:
    """`count` groups: problems in numerical order from 1, each across languages and strategies.

    A problem that cannot be attempted (not in the store, or no statement,
    answer or resource) stops progression rather than being skipped, as the
    curriculum does: the list never jumps over it and never wraps back to
    problem 1, so a run that would need it is refused with one line. The
    problems reserved for promotion (91-100) are never in it; only reading a
    run made before they were reserved asks for the old order
    (`leave_out_reserved=False`).
    """
    from atoll.pi_train.promotion import reserved

    check_euler_languages(languages)
    if not languages:
        raise TaskSetError("no language to train")
    tasks: list[AnswerTask] = []
    number = 0
    while len(tasks) < count:
        number += 1
        if leave_out_reserved and reserved.is_reserved(number):
            continue
        why = store.missing(number)
        if why is not None:
            raise TaskSetError(
                f"{why}: answer training takes problems in numerical order and stops there "
                f"(the problems before it give {len(tasks)} of the {count} groups this run "
                "needs); complete the store or ask for fewer groups (--iterations, "
                "--groups-per-batch)"
            )
        for language in languages:
            for strategy in STRATEGIES:
                tasks.append(answer_task(store, number, language, strategy))
    return tasks[:count]


def digest(tasks: list[HiddenTask] | list[AnswerTask]) -> str:
    """sha256 over every task's id and prompt (and, for hidden tasks, its whole instance)."""
    h = hashlib.sha256()
    for task in tasks:
        row = task.public()
        if isinstance(task, HiddenTask):
            row["instance"] = task.instance.digest()
        h.update(json.dumps(row, sort_keys=True).encode() + b"\n")
    return h.hexdigest()


def answer_reward(text: str, expected: str, language: str) -> tuple[float, dict[str, float]]:
    """Exact answer (1 or 0) less a small penalty when no code block of the language is shown."""
    from atoll.pi_train.euler_source import normalize

    stated = FINAL_ANSWER.findall(text)
    correct = bool(stated) and normalize(stated[-1]) == normalize(expected)
    tags = {tag.lower() for tag in FENCE.findall(text)}
    code_format = bool(tags & _FENCE_TAGS.get(language, {language}))
    reward = float(correct) - (0.0 if code_format else CODE_FORMAT_PENALTY)
    return reward, {
        "correct": float(correct),
        "pass_fraction": float(correct),
        "all_cases": float(correct),
        "code_format": float(code_format),
        "stated_answer": float(bool(stated)),
    }


def store_at(path: Path) -> Any:
    from atoll.pi_train.euler_source import Store

    return Store(path)
