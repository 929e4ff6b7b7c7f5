"""Strict guidance parsing, program extraction and summary extraction."""

from __future__ import annotations

import pytest

from atoll.guidance_ttt.contract import Language
from atoll.guidance_ttt.prompting.answer_parsing import (
    SUMMARY_FALLBACK,
    extract_program,
    extract_summary,
    has_solution_block,
    parse_executor,
    parse_guidance,
    parse_program,
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


@pytest.mark.parametrize(
    "text",
    [
        "no code at all",
        f"```python\n{CPP_A}\n```\n<summary>s</summary>",  # no solution block, another language
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
    assert not parse_program(text, Language.CPP).from_fallback


# ----- the fallback for answers without a <solution> block ---------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"```cpp\n{CPP_A}\n```",
        f"Here it is:\n```cpp\n{CPP_A}\n```\n<summary>s</summary>",
        f"```cpp\n{CPP_B}\n```\nbetter:\n```c++\n{CPP_A}\n```\n```python\nprint(1)\n```",
        f"```cpp\n{CPP_A}\n```\n```cpp\n  \n```",  # an empty last block is skipped
        # No complete block: a closing tag before the opening one, or an opening one cut off.
        f"</solution>\n```cpp\n{CPP_A}\n```\n<solution>",
        f"<solution>\n```cpp\n{CPP_A}\n```\n<summary>s</summary>",
    ],
)
def test_without_a_solution_block_the_last_fence_in_the_language_is_taken(text: str) -> None:
    assert not has_solution_block(text)
    parsed = parse_program(text, Language.CPP)
    assert parsed.program == CPP_A + "\n"
    assert parsed.from_fallback and parsed.reason is None
    assert extract_program(text, Language.CPP) == CPP_A + "\n"


def test_the_fallback_scans_the_whole_answer_like_the_reference() -> None:
    # The reference searches the whole text, so a fence after <summary> is found too.
    text = f"```cpp\n{CPP_B}\n```\n<summary>Kept:\n```cpp\n{CPP_A}\n```\n</summary>"
    assert parse_program(text, Language.CPP).program == CPP_A + "\n"


def test_a_truncated_answer_falls_back_to_its_last_complete_fence() -> None:
    # Cut off inside its <solution> block, the answer has no complete block: as in the
    # reference, its last complete code block (here the analysis's draft) is the program, and
    # the mark lets the run count it.
    leaked = f"A first draft:\n```cpp\n{CPP_B}\n```\nThe answer:\n"
    parsed = parse_program(leaked + f"<solution>\n```cpp\n{CPP_A}", Language.CPP)
    assert parsed.program == CPP_B + "\n" and parsed.from_fallback


@pytest.mark.parametrize(
    ("language", "expected"),
    [(Language.CPP, CPP_A + "\n"), (Language.PYTHON, "print(1)\n")],
)
def test_the_fallback_respects_the_language(language: Language, expected: str) -> None:
    text = f"```python\nprint(1)\n```\n```cpp\n{CPP_A}\n```\n```c\nint x;\n```\n```\nraw\n```"
    parsed = parse_program(text, language)
    assert parsed.program == expected and parsed.from_fallback


def test_the_fallback_finds_nothing_in_another_language() -> None:
    parsed = parse_program("```python\nprint(1)\n```\n<summary>s</summary>", Language.CPP)
    assert parsed.program is None and not parsed.from_fallback
    assert (
        parsed.reason is not None and "no <solution> block and no cpp code block" in parsed.reason
    )


@pytest.mark.parametrize(
    "text",
    [
        f"<solution>\n{CPP_B}\n</solution>\n```cpp\n{CPP_A}\n```\n<summary>s</summary>",
        f"```cpp\n{CPP_A}\n```\n<solution>\n```python\nprint(1)\n```\n</solution>\n<summary>s</summary>",
        f"```cpp\n{CPP_A}\n```\n<solution></solution>\n<summary>s</summary>",
        f"```cpp\n{CPP_A}\n```\n<solution>\n```\n{CPP_B}\n```\n</solution>",
        # The only complete block stands after the final <summary>: the answer has one.
        f"```cpp\n{CPP_A}\n```\n<summary>use <solution>x</solution></summary>",
    ],
)
def test_a_bad_solution_block_does_not_fall_back(text: str) -> None:
    assert has_solution_block(text)
    parsed = parse_program(text, Language.CPP)
    assert parsed.program is None and not parsed.from_fallback
    assert parsed.reason is not None and "<solution>" in parsed.reason


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
    assert not parsed.program_from_fallback and parsed.program_error is None
    broken = parse_executor("I could not do it.", Language.CPP)
    assert broken.program is None
    assert broken.summary == SUMMARY_FALLBACK and broken.summary_is_fallback
    assert not broken.program_from_fallback and broken.program_error is not None
    loose = parse_executor(f"```cpp\n{CPP_A}\n```\n<summary>Greedy.</summary>", Language.CPP)
    assert loose.program == CPP_A + "\n" and loose.program_from_fallback
    assert loose.summary == "Greedy." and loose.program_error is None
