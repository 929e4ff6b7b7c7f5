"""Strict parsing of model answers: guidance, program and summary.

Guidance is trained on, so a malformed answer must earn reward 0 rather than
be repaired: the rules here are deliberately narrow, and a rejection says why.
The executor's program is taken only from the answer's `<solution>` block,
never from a code block elsewhere: an answer whose analysis leaks into the
content (quoting `<solution>`, sketching a draft) must not have that draft
judged as its program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atoll.guidance_ttt.contract import Language

GUIDANCE_OPEN = "<guidance>"
GUIDANCE_CLOSE = "</guidance>"
SOLUTION_OPEN = "<solution>"
SOLUTION_CLOSE = "</solution>"
SUMMARY_OPEN = "<summary>"
SUMMARY_CLOSE = "</summary>"
SUMMARY_FALLBACK = "No summary was returned for this program; only its score is known."

FENCE_TAGS: dict[Language, frozenset[str]] = {
    Language.CPP: frozenset({"cpp", "c++", "cxx"}),
    Language.PYTHON: frozenset({"python", "py"}),
}

_FENCE = re.compile(
    r"^[ \t]*(?P<ticks>`{3,})[ \t]*(?P<tag>[^\s`]*)[^\n`]*\n(?P<body>.*?)^[ \t]*(?P=ticks)[ \t]*$",
    re.DOTALL | re.MULTILINE,
)


@dataclass(frozen=True)
class GuidanceParse:
    """The guidance text if the answer is well formed, else why it was rejected."""

    guidance: str | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.guidance is not None


@dataclass(frozen=True)
class ExecutorParse:
    """A program (None: nothing found, a `parse_error`) and the summary the child keeps."""

    program: str | None
    summary: str
    summary_is_fallback: bool


def parse_guidance(text: str) -> GuidanceParse:
    """Accept exactly one terminal, non-empty `<guidance>` block; thinking may precede it."""
    stripped = text.strip()
    opens = stripped.count(GUIDANCE_OPEN)
    closes = stripped.count(GUIDANCE_CLOSE)
    if opens != 1 or closes != 1:
        return GuidanceParse(
            None,
            f"expected one {GUIDANCE_OPEN} and one {GUIDANCE_CLOSE}, found {opens} and {closes}",
        )
    start = stripped.index(GUIDANCE_OPEN) + len(GUIDANCE_OPEN)
    end = stripped.index(GUIDANCE_CLOSE)
    if end < start:
        return GuidanceParse(None, f"{GUIDANCE_CLOSE} comes before {GUIDANCE_OPEN}")
    if stripped[end + len(GUIDANCE_CLOSE) :].strip():
        return GuidanceParse(None, f"text follows {GUIDANCE_CLOSE}")
    content = stripped[start:end].strip()
    if not content:
        return GuidanceParse(None, "the guidance block is empty")
    return GuidanceParse(content)


def extract_program(text: str, language: Language) -> str | None:
    """The last code block in the task's language inside the answer's `<solution>` block.

    The solution block is the last complete `<solution>...</solution>` before
    the closing `<summary>` block (the answer's required shape), so a mention
    of `<solution>` in leaked analysis before it is not taken for the answer.
    None (a `parse_error`) when there is no such block or no such code block
    in it: raw text and code blocks outside `<solution>` are never the program.
    """
    block = _solution_block(text)
    if block is None:
        return None
    tags = FENCE_TAGS[language]
    matching = [m for m in _FENCE.finditer(block) if m.group("tag").lower() in tags]
    for match in reversed(matching):
        if match.group("body").strip():
            return _normalise(match.group("body"))
    return None


def _solution_block(text: str) -> str | None:
    """The inside of the last complete `<solution>` block before the final `<summary>`."""
    end = text.rfind(SUMMARY_OPEN)
    head = text if end < 0 else text[:end]
    close = head.rfind(SOLUTION_CLOSE)
    if close < 0:
        return None
    start = head.rfind(SOLUTION_OPEN, 0, close)
    if start < 0:
        return None
    return head[start + len(SOLUTION_OPEN) : close]


def extract_summary(text: str) -> tuple[str, bool]:
    """The last `<summary>` block of an answer that ends with it, else the fixed fallback.

    Returns the summary and whether it is the fallback.
    """
    stripped = text.strip()
    if not stripped.endswith(SUMMARY_CLOSE):
        return SUMMARY_FALLBACK, True
    body = stripped[: -len(SUMMARY_CLOSE)]
    start = body.rfind(SUMMARY_OPEN)
    if start < 0:
        return SUMMARY_FALLBACK, True
    summary = body[start + len(SUMMARY_OPEN) :].strip()
    if not summary:
        return SUMMARY_FALLBACK, True
    return summary, False


def parse_executor(text: str, language: Language) -> ExecutorParse:
    """Program and summary of one executor answer."""
    summary, fallback = extract_summary(text)
    return ExecutorParse(extract_program(text, language), summary, fallback)


def _normalise(program: str) -> str:
    return program.strip("\n").rstrip() + "\n"
