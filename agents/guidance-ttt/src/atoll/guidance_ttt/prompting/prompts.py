"""The two prompts of `summary_only` mode, and the guidance request that carries the first.

The split is the method: the trainable guidance model sees only the problem,
the parent's canonical summary and its verifier result, so that what it learns
is strategy rather than code edits; the frozen executor sees the full parent
program and the guidance and writes the next program. Each prompt is a system
message giving the model its role in the search, and a user message with the
call's material. Anything that could carry source code into the guidance
prompt (fenced blocks, solution blocks in a summary or a verifier message) is
removed before it is shown.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from atoll.guidance_ttt.contract import Language, Task, TaskContract
from atoll.guidance_ttt.search.scored_program import Entry, Verification

PROMPT_MODE = "summary_only"

# How long a verifier message may be in a prompt; compiler output can be long.
MAX_MESSAGE_CHARS = 600
CODE_OMITTED = "[code omitted]"
LANGUAGE_NAMES = {Language.CPP: "C++", Language.PYTHON: "Python"}

_FENCED = re.compile(
    r"(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[`~]*[ \t]*$|\Z)", re.DOTALL | re.MULTILINE
)
_SOLUTION = re.compile(r"<solution>.*?(?:</solution>|\Z)", re.DOTALL)
_PARENT_CODE = re.compile(r"<parent_code>.*?(?:</parent_code>|\Z)", re.DOTALL)
_INLINE_TICKS = re.compile(r"`{3,}|~{3,}")


def score_lines(verification: Verification | None, contract: TaskContract) -> str:
    """The parent's verifier result as shown to both models."""
    if verification is None:
        return "Status: not scored yet"
    raw = "none" if verification.raw_score is None else _number(verification.raw_score)
    message = _without_code(verification.message).strip()
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS].rstrip() + " …"
    return "\n".join(
        [
            f"Status: {verification.status.value}",
            f"{contract.raw_score_label}: {raw}",
            f"Reward: {_number(verification.reward)}",
            f"Message: {message or '(none)'}",
        ]
    )


@dataclass(frozen=True)
class Prompt:
    """One model call's messages: the role the model plays, and the call's material."""

    system: str
    user: str

    def messages(self) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user},
        ]


GUIDANCE_SYSTEM = (
    "You are the guidance model of an evolutionary search for better programs. You steer the "
    "search at the level of strategy: from a summary of the selected program and its score you "
    "propose the next direction to try and why it should help. You never write code; a separate "
    "programmer turns your guidance into the next program."
)

SUMMARY_CONTRACT = """A self-contained description of the complete new program, in prose, covering:
1. the algorithm it implements, as a whole;
2. what changed from the parent in response to the guidance, and what was kept;
3. the search, refinement or optimisation mechanisms the program really contains.
A later reader who sees only this summary must be able to understand the whole algorithm. Say \
so if you simplified, approximated or left out part of the guidance. Include no source code, no \
code fences, no copied constants or parameter values, no benchmark measurements and none of \
these instructions."""


def guidance_prompt(task: Task, parent: Entry) -> Prompt:
    """What the guidance model answers: problem, parent summary and score, objective, rules."""
    contract = task.contract
    summary = _without_code(parent.summary).strip() or "(no summary)"
    user = f"""<problem>
{task.statement}
</problem>

The block below is all you see of the selected program: its summary and its verifier result. \
The programmer who follows your guidance sees its full code.

<selected_summary>
{summary}

{score_lines(parent.verification, contract)}
</selected_summary>

## Objective
{contract.objective}
Score direction: {contract.direction_phrase}. Propose the change most likely to improve \
{contract.raw_score_label} beyond the selected program's.

## Rules
1. Use the summary: find what the selected program already does, what it achieved and which \
limitation the next attempt should remove.
2. Stay at strategy level: describe the algorithmic direction or the component to change, and \
why. Write no code, pseudo-code, low-level implementation details or parameter schedules.
3. Propose only mechanisms that a program meeting this contract can execute: \
{contract.solution_contract}. {contract.mechanism_constraint}
4. You may think first. End your answer with exactly one non-empty <guidance>...</guidance> \
block, and write nothing after it.

<guidance>
One conceptual, actionable direction for the next program.
</guidance>
"""
    return Prompt(GUIDANCE_SYSTEM, user)


def executor_system(task: Task) -> str:
    """The executor's role, naming the language it writes."""
    language = LANGUAGE_NAMES[task.contract.solution_language]
    return (
        f"You are the programmer of an evolutionary search. You modify the given parent {language} "
        "program as the guidance directs, keeping what works, and return one complete, runnable "
        "program together with a self-contained summary of it."
    )


def executor_prompt(task: Task, parent: Entry, guidance: str) -> Prompt:
    """What the executor answers: problem, parent score and full code, guidance, contract."""
    contract = task.contract
    language = contract.solution_language.value
    program = parent.program or ""
    fence = _fence_for(program)
    user = f"""<problem>
{task.statement}
</problem>

<selected_parent>
{score_lines(parent.verification, contract)}
<parent_code>
{fence}{language}
{program.rstrip()}
{fence}
</parent_code>
</selected_parent>

<guidance>
{guidance.strip()}
</guidance>

The problem statement is authoritative. Start from the parent program, apply the guidance \
faithfully, and keep the parent's working behaviour wherever the guidance does not touch it.
Score direction: {contract.direction_phrase} ({contract.score_direction.value}imize \
{contract.raw_score_label}).
Solution contract: {contract.solution_contract}

Think before you write. Then answer with exactly two top-level blocks, in this order, and \
nothing after them: the solution block holding the complete program as one {language} code \
block, and the summary block:
<solution>
{fence}{language}
the complete new program
{fence}
</solution>
<summary>
{SUMMARY_CONTRACT}
</summary>
"""
    return Prompt(executor_system(task), user)


def guidance_request(
    prompt: Prompt, model: str, max_completion_tokens: int, seed: int | None = None
) -> dict[str, Any]:
    """The chat-completions body for one guidance sample (sampling fixed by the method).

    `seed`, when the run sets `sampling_seed`, makes the sample a function of
    the weights, the prompt and the slot: a resumed run samples what an
    unbroken one would have.
    """
    body = {
        "model": model,
        "messages": prompt.messages(),
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": -1,
        "max_completion_tokens": max_completion_tokens,
        "stream": False,
        "chat_template_kwargs": {"enable_thinking": True},
    }
    if seed is not None:
        body["seed"] = seed
    return body


def slot_seed(sampling_seed: int, step: int, group: int, rollout: int) -> int:
    """The seed of one grid slot's guidance sample: stable, distinct per slot, 31 bits."""
    digest = hashlib.sha256(f"{sampling_seed}:{step}:{group}:{rollout}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _without_code(text: str) -> str:
    text = _SOLUTION.sub(CODE_OMITTED, text)
    text = _PARENT_CODE.sub(CODE_OMITTED, text)
    text = _FENCED.sub(CODE_OMITTED, text)
    return _INLINE_TICKS.sub(CODE_OMITTED, text)


def _fence_for(program: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", program)), default=0)
    return "`" * max(3, longest + 1)


def _number(value: float) -> str:
    return f"{value:.10g}"
