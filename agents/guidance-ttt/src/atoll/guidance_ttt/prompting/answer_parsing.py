"""Strict parsing of model answers: guidance, program and summary.

Guidance is trained on, so a malformed answer must earn reward 0 rather than
be repaired: the rules here are deliberately narrow, and a rejection says why.
The executor's program is taken from the answer's `<solution>` block, never
from a code block elsewhere: an answer whose analysis leaks into the content
(quoting `<solution>`, sketching a draft) must not have that draft judged as
its program. Only an answer with no `<solution>` block at all falls back, as
the reference harness does, to its last code block in the task's language;
that program is marked as such, so a drift away from the required format
shows in the run's counts instead of passing silently.
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
class ProgramParse:
    """The program (None: a `parse_error`, `reason` says why) and where it was found.

    `from_fallback` is True only for a program taken, for want of any
    `<solution>` block, from the answer's last code block in the language.
    """

    program: str | None
    from_fallback: bool = False
    reason: str | None = None


@dataclass(frozen=True)
class ExecutorParse:
    """A program (None: nothing found, a `parse_error`) and the summary the child keeps.

    `program_from_fallback` says the program came from the no-`<solution>`
    fallback; `program_error` says why there is no program.
    """

    program: str | None
    summary: str
    summary_is_fallback: bool
    program_from_fallback: bool = False
    program_error: str | None = None


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
    """The answer's program, or None (a `parse_error`); see `parse_program` for the rule."""
    return parse_program(text, language).program


def parse_program(text: str, language: Language) -> ProgramParse:
    """The answer's program: from its `<solution>` block, or failing any, by the fallback.

    The program is the last code block in the task's language inside the
    solution block. The solution block is the last complete `<solution>...</solution>` before
    the closing `<summary>` block (the answer's required shape), so a mention
    of `<solution>` in leaked analysis before it is not taken for the answer.
    A solution block with no such code block is a `parse_error`: the answer
    named its program, and a code block elsewhere is not it.

    Only when the answer holds no complete `<solution>` block anywhere (no
    `<solution>` followed by a `</solution>`, the reference's condition) is
    the program the answer's last non-empty code block in the task's
    language, wherever it stands; such a program is marked `from_fallback`.
    That includes an answer cut off inside its `<solution>` block: like the
    reference, it is judged by the last complete code block it holds, which
    may be a draft from its analysis, and the mark makes such runs visible.
    """
    if not has_solution_block(text):
        program = _last_program(text, language)
        if program is None:
            return ProgramParse(None, reason=f"no <solution> block and no {_fence_names(language)}")
        return ProgramParse(program, from_fallback=True)
    block = _solution_block(text)
    if block is None:
        return ProgramParse(None, reason=f"no <solution> block before the final {SUMMARY_OPEN}")
    program = _last_program(block, language)
    if program is None:
        return ProgramParse(None, reason=f"no {_fence_names(language)} inside the <solution> block")
    return ProgramParse(program)


def has_solution_block(text: str) -> bool:
    """Whether a `<solution>` opening tag is followed, anywhere later, by `</solution>`.

    The reference's test for "the answer has a solution block": an answer
    that has one is held to it, however malformed its content.
    """
    start = text.find(SOLUTION_OPEN)
    return start >= 0 and text.find(SOLUTION_CLOSE, start + len(SOLUTION_OPEN)) >= 0


def _last_program(text: str, language: Language) -> str | None:
    """The last non-empty code block in `text` tagged with the language, normalised."""
    tags = FENCE_TAGS[language]
    matching = [m for m in _FENCE.finditer(text) if m.group("tag").lower() in tags]
    for match in reversed(matching):
        if match.group("body").strip():
            return _normalise(match.group("body"))
    return None


def _fence_names(language: Language) -> str:
    """How a parse error names the code blocks it looked for."""
    return f"{language.value} code block ({', '.join(sorted(FENCE_TAGS[language]))})"


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
    program = parse_program(text, language)
    return ExecutorParse(
        program.program,
        summary,
        fallback,
        program_from_fallback=program.from_fallback,
        program_error=program.reason,
    )


def _normalise(program: str) -> str:
    return program.strip("\n").rstrip() + "\n"
