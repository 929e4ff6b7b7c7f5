"""Strict guidance parsing, program extraction and summary extraction."""

from __future__ import annotations

import pytest

from atoll.guidance_ttt.contract import Language
from atoll.guidance_ttt.prompting.answer_parsing import (
    SUMMARY_FALLBACK,
    extract_program,
    extract_summary,
    parse_executor,
    parse_guidance,
)

# ----- guidance -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<guidance>Use a beam search.</guidance>", "Use a beam search."),
        ("  \n<guidance>\n  Use a beam search.\n</guidance>\n\n ", "Use a beam search."),
        (
            "<think>The parent is greedy; maybe search helps.</think>\n"
            "<guidance>Use a beam search.</guidance>",
            "Use a beam search.",
        ),
        ("Thinking about it...\n<guidance>Line one.\nLine two.</guidance>", "Line one.\nLine two."),
    ],
)
def test_guidance_accepted(text: str, expected: str) -> None:
    parsed = parse_guidance(text)
    assert parsed.ok and parsed.reason is None
    assert parsed.guidance == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Use a beam search.", "found 0 and 0"),
        ("", "found 0 and 0"),
        ("<guidance>Use a beam search.", "found 1 and 0"),
        ("Use a beam search.</guidance>", "found 0 and 1"),
        ("<guidance>a</guidance><guidance>b</guidance>", "found 2 and 2"),
        ("I could write <guidance> here.\n<guidance>b</guidance>", "found 2 and 1"),
        ("<guidance>a</guidance> trailing words", "text follows </guidance>"),
        ("<guidance>a</guidance>\n.", "text follows </guidance>"),
        ("</guidance>a<guidance>", "comes before"),
        ("<guidance>   \n </guidance>", "empty"),
        ("<GUIDANCE>a</GUIDANCE>", "found 0 and 0"),
    ],
)
def test_guidance_rejected(text: str, reason: str) -> None:
    parsed = parse_guidance(text)
    assert not parsed.ok
    assert parsed.guidance is None
    assert parsed.reason is not None and reason in parsed.reason


# ----- programs -----------------------------------------------------------------------------

CPP_A = '#include <cstdio>\nint main() { puts("a"); }'
CPP_B = "int main() { return 2; }"


def _answer(solution: str, summary: str = "s") -> str:
    return f"<solution>\n{solution}\n</solution>\n<summary>{summary}</summary>"


@pytest.mark.parametrize("tag", ["cpp", "c++", "cxx", "CPP", "C++", "Cxx"])
def test_last_fence_in_the_task_language_inside_the_solution_block(tag: str) -> None:
    solution = (
        f"```{tag}\n{CPP_B}\n```\nthen better:\n```{tag}\n{CPP_A}\n```\n```python\nprint(1)\n```"
    )
    assert extract_program(_answer(solution), Language.CPP) == CPP_A + "\n"


@pytest.mark.parametrize("tag", ["python", "py", "PY", "Python"])
def test_python_fence_tags(tag: str) -> None:
    solution = f"```cpp\n{CPP_A}\n```\n```{tag}\nprint(1)\n```"
    assert extract_program(_answer(solution), Language.PYTHON) == "print(1)\n"


def test_a_leaked_analysis_that_mentions_the_solution_block_yields_no_draft() -> None:
    leaked = (
        "Let me plan. I will put the final program in the <solution> block. A first draft:\n"
        f"```cpp\n{CPP_B}\n```\nThat draft is too slow, so the answer is:\n"
    )
    assert extract_program(leaked + _answer(f"```cpp\n{CPP_A}\n```"), Language.CPP) == (
        CPP_A + "\n"
    )
    # Analysis that quotes the whole required shape, draft inside, before the real answer.
    quoted = f"The format is <solution>\n```cpp\n{CPP_B}\n```\n</solution> then a summary.\n"
    assert extract_program(quoted + _answer(f"```cpp\n{CPP_A}\n```"), Language.CPP) == (
        CPP_A + "\n"
    )
    # The answer itself never arrived (truncated): the draft is not the program.
    truncated = leaked + f"<solution>\n```cpp\n{CPP_A}"
    assert extract_program(truncated, Language.CPP) is None


@pytest.mark.parametrize(
    "text",
    [
        "no code at all",
        f"```cpp\n{CPP_A}\n```",  # a fence outside any solution block
        f"```cpp\n{CPP_A}\n```\n<summary>s</summary>",
        f"<solution>\n{CPP_A}\n</solution>",  # raw text, no fence
        f"<solution>\n```\n{CPP_A}\n```\n</solution>",  # untagged fence
        f"<solution>\n```c\n{CPP_A}\n```\n</solution>",  # another language
        f"<solution>\n```python\n{CPP_A}\n```\n</solution>",
        f"<solution>\n```cpp\n{CPP_A}\n</solution>",  # unterminated fence
        "<solution>\n   \n</solution>",
        f"<solution>\n```cpp\n{CPP_A}\n",  # unterminated block and fence
        f"<solution></solution>\n```cpp\n{CPP_A}\n```\n<summary>s</summary>",
    ],
)
def test_nothing_found_is_none(text: str) -> None:
    assert extract_program(text, Language.CPP) is None


def test_indentation_inside_program_is_kept() -> None:
    program = "def main():\n    print(1)\n\n\nmain()"
    text = f"<solution>\n```python\n{program}\n```\n</solution>"
    assert extract_program(text, Language.PYTHON) == program + "\n"


def test_longer_fence_can_hold_backticks() -> None:
    program = 'const char* s = R"(```)";\nint main() {}'
    text = f"<solution>\n````cpp\n{program}\n````\n</solution>"
    assert extract_program(text, Language.CPP) == program + "\n"


# ----- summaries ----------------------------------------------------------------------------


def test_summary_from_last_block() -> None:
    text = "<summary>old</summary>\n<solution>x</solution>\n<summary>\n New plan. \n</summary>\n"
    assert extract_summary(text) == ("New plan.", False)


@pytest.mark.parametrize(
    "text",
    [
        "<summary>Plan.</summary> trailing",  # must end with </summary>
        "no summary",
        "Plan.</summary>",  # no opening tag
        "<summary>  </summary>",  # empty
        "<summary>Plan.",  # truncated
    ],
)
def test_summary_fallback(text: str) -> None:
    assert extract_summary(text) == (SUMMARY_FALLBACK, True)


def test_parse_executor_combines_both() -> None:
    text = f"<solution>\n```cpp\n{CPP_A}\n```\n</solution>\n<summary>Greedy, puts a.</summary>"
    parsed = parse_executor(text, Language.CPP)
    assert parsed.program == CPP_A + "\n"
    assert parsed.summary == "Greedy, puts a."
    assert not parsed.summary_is_fallback
    broken = parse_executor("I could not do it.", Language.CPP)
    assert broken.program is None
    assert broken.summary == SUMMARY_FALLBACK and broken.summary_is_fallback
