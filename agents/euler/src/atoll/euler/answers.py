"""What counts as the expected value: one normalization, used by the gate and the importer.

An answer is compared as an exact string after trimming whitespace, reading
a typographic minus (`−2492`, U+2212, and the dashes used for it) as `-`, and
removing thousands separators (`1,234,567`, `1 234 567` and `1\u2009234\u2009567`
are `1234567`); there is no float tolerance, because Project Euler answers are
exact and a "close" float is a wrong answer. A final response in prose (`The
answer is −2,492.`) states the value when one of its numbers, read the same
way, is the expected value.
"""

from __future__ import annotations

import re

# Characters used for a minus sign in typeset text: minus, figure dash, en dash, small and
# full-width hyphen-minus.
_MINUSES = str.maketrans(
    {"\u2212": "-", "\u2012": "-", "\u2013": "-", "\ufe63": "-", "\uff0d": "-"}
)
# Digit groups of three after a first group of one to three, with one separator used throughout.
_GROUPED = re.compile(r"^([+-]?\d{1,3})((?:([,\u2009\u202f\u00a0 _'])\d{3})(?:\3\d{3})*)(\.\d+)?$")
# A number in prose, grouped (one separator throughout) ...
_GROUPED_IN_TEXT = re.compile(
    r"(?<![\w.,])[+-]?\d{1,3}(?:([,\u2009\u202f\u00a0 _'])\d{3})(?:\1\d{3})*(?:\.\d+)?(?![\w]|[.,]\d)"
)
# ... or plain (both are tried: "100 200" may be one grouped number or two plain ones).
_PLAIN_IN_TEXT = re.compile(r"(?<![\w.,])[+-]?\d+(?:\.\d+)?(?![\w]|[.,]\d)")
_NUMERIC = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
MAX_ANSWER_CHARS = 200


class AnswerFormatError(ValueError):
    """An answer that cannot be an expected value (empty, multi-line, too long)."""


def normalize(value: str) -> str:
    """The comparable form of an answer: trimmed, a typographic minus as `-`, thousands
    separators removed."""
    text = value.strip().translate(_MINUSES)
    match = _GROUPED.match(text)
    if match:
        head, groups, sep, decimals = match.group(1), match.group(2), match.group(3), match.group(4)
        text = head + groups.replace(sep, "") + (decimals or "")
    return text


def checked(value: str) -> str:
    """`value` normalized, or AnswerFormatError if it cannot be an expected answer."""
    text = normalize(value)
    if not text:
        raise AnswerFormatError("the answer is empty")
    if "\n" in text or "\r" in text:
        raise AnswerFormatError("the answer spans several lines")
    if len(text) > MAX_ANSWER_CHARS:
        raise AnswerFormatError(f"the answer is longer than {MAX_ANSWER_CHARS} characters")
    return text


def final_nonempty_line(output: str) -> str | None:
    """The last line of `output` with anything but whitespace on it."""
    for line in reversed(output.splitlines()):
        if line.strip():
            return line
    return None


def equals(printed: str | None, expected: str) -> bool:
    return printed is not None and normalize(printed) == normalize(expected)


def stated_in(text: str, expected: str) -> bool:
    """Whether prose `text` states the value: a number token (or a bounded word) equal to it."""
    want = normalize(expected)
    text = text.translate(_MINUSES)
    if _NUMERIC.match(want):
        found = [*_GROUPED_IN_TEXT.finditer(text), *_PLAIN_IN_TEXT.finditer(text)]
        return any(normalize(m.group(0)) == want for m in found)
    return re.search(rf"(?<![\w]){re.escape(want)}(?![\w])", text) is not None


_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_FINAL_ANSWER = re.compile(
    r"^\s*\**\s*FINAL[_ ]ANSWER\s*\**\s*:\s*\**\s*(.*?)\s*\**\s*$", re.I | re.M
)


def presentation(text: str, expected: str) -> dict[str, object]:
    """Boxed answers and `FINAL_ANSWER:` lines in the final response: diagnostics only."""
    boxed = [m.group(1).strip() for m in _BOXED.finditer(text)]
    lines = [m.group(1).strip() for m in _FINAL_ANSWER.finditer(text)]
    return {
        "boxed": boxed,
        "boxed_matches": any(equals(b, expected) for b in boxed) if boxed else None,
        "final_answer_lines": lines,
        "final_answer_matches": any(equals(v, expected) for v in lines) if lines else None,
    }
