"""The two prompts of `summary_only` mode, and the guidance request that carries the first.

The split is the method: the trainable guidance model sees only the problem,
the parent's canonical summary and its verifier result, so that what it learns
is strategy rather than code edits; the frozen executor sees the full parent
program and the guidance and writes the next program. Anything that could
carry source code into the guidance prompt (fenced blocks, solution blocks in a
summary or a verifier message) is removed before it is shown.
"""

from __future__ import annotations

import re
from typing import Any

from atoll.guidance_ttt.contract import Task, TaskContract
from atoll.guidance_ttt.entries import Entry, Verification

PROMPT_MODE = "summary_only"

# How long a verifier message may be in a prompt; compiler output can be long.
MAX_MESSAGE_CHARS = 600
CODE_OMITTED = "[code omitted]"

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


def guidance_prompt(task: Task, parent: Entry) -> str:
    """The prompt the guidance model answers: problem, parent summary and score, objective, rules."""
    contract = task.contract
    summary = _without_code(parent.summary).strip() or "(no summary)"
    return f"""You guide a programmer who improves a solution to the problem below. You see the \
current solution only through its summary and its score; the programmer will see its full code \
and your guidance, and will write the next version.

<problem>
{task.statement}
</problem>

<selected_summary>
{summary}

{score_lines(parent.verification, contract)}
</selected_summary>

## Objective
{contract.objective}
Score direction: {contract.direction_phrase}. Propose the change most likely to improve \
{contract.raw_score_label} beyond the selected solution's.

## Rules
- Use the summary: build on what the selected solution already does and on its score.
- Stay at strategy level: describe the idea and why it should help. Do not write code, \
pseudo-code or parameter schedules.
- Propose only mechanisms that a program meeting this contract can execute: \
{contract.solution_contract}. {contract.mechanism_constraint}
- You may think first. End your answer with exactly one <guidance>...</guidance> block \
holding the guidance, and write nothing after it.
"""


def executor_prompt(task: Task, parent: Entry, guidance: str) -> str:
    """The prompt the executor answers: problem, parent score and full code, guidance, contract."""
    contract = task.contract
    language = contract.solution_language.value
    program = parent.program or ""
    fence = _fence_for(program)
    return f"""You improve a program for the problem below by following the guidance.

<problem>
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

Score direction: {contract.direction_phrase} ({contract.score_direction.value}imize \
{contract.raw_score_label}).
Solution contract: {contract.solution_contract}

Answer with exactly two top-level blocks, in this order, and nothing after them:
<solution>
{fence}{language}
the complete new program
{fence}
</solution>
<summary>
A self-contained description of the new program's strategy, its key mechanisms and what \
changed from the parent, without code.
</summary>
"""


def guidance_request(prompt: str, model: str, max_completion_tokens: int) -> dict[str, Any]:
    """The chat-completions body for one guidance sample (sampling fixed by the method)."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": -1,
        "max_completion_tokens": max_completion_tokens,
        "stream": False,
        "chat_template_kwargs": {"enable_thinking": True},
    }


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
