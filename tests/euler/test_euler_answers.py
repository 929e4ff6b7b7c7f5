"""Answer normalization: exact strings after trimming whitespace and thousands separators."""

from __future__ import annotations

import pytest

from atoll.euler import answers


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("233168", "233168"),
        ("  233168 \n", "233168"),
        ("233,168", "233168"),
        ("1,234,567", "1234567"),
        ("1 234 567", "1234567"),
        ("1\u202f234\u202f567", "1234567"),
        ("1_000_000", "1000000"),
        ("-1,024", "-1024"),
        ("0.12345678", "0.12345678"),
        ("1,2345", "1,2345"),  # not thousands grouping: left alone, so it cannot match 12345
        ("1,234 567", "1,234 567"),  # mixed separators are not a grouping
        ("abc", "abc"),
    ],
)
def test_normalize(raw: str, normal: str) -> None:
    assert answers.normalize(raw) == normal


def test_no_float_tolerance() -> None:
    assert not answers.equals("233168.0", "233168")
    assert not answers.equals("0.1234567", "0.12345678")
    assert answers.equals("233,168", "233168")


def test_final_nonempty_line() -> None:
    assert answers.final_nonempty_line("a\n233168\n\n  \n") == "233168"
    assert answers.final_nonempty_line("\n \n") is None


@pytest.mark.parametrize(
    ("text", "stated"),
    [
        ("The answer is 233168.", True),
        ("The answer is **233,168**", True),
        ("\\boxed{233168}", True),
        ("The answer is 2331680.", False),
        ("It is 1233168", False),
        ("It is 233168.5", False),
        ("no number here", False),
    ],
)
def test_stated_in(text: str, stated: bool) -> None:
    assert answers.stated_in(text, "233168") is stated


def test_presentation_is_recorded() -> None:
    shown = answers.presentation("Work...\n\\boxed{233168}\nFINAL_ANSWER: 233,168\n", "233168")
    assert shown["boxed"] == ["233168"]
    assert shown["boxed_matches"] is True
    assert shown["final_answer_lines"] == ["233,168"]
    assert shown["final_answer_matches"] is True
    assert answers.presentation("just 5", "5") == {
        "boxed": [],
        "boxed_matches": None,
        "final_answer_lines": [],
        "final_answer_matches": None,
    }


def test_checked_refuses_unusable_answers() -> None:
    with pytest.raises(answers.AnswerFormatError):
        answers.checked("  ")
    with pytest.raises(answers.AnswerFormatError):
        answers.checked("1\n2")
    assert answers.checked(" 4,613,732 ") == "4613732"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is −2492.", "-2492"),
        ("The answer is −2,492.", "-2492"),
        ("The answer is –2492", "-2492"),
        ("It prints -2492", "-2492"),
        ("The answer is 1,234,567.", "1234567"),
        ("answer: 1 234 567", "1234567"),
        ("answer: 1\u2009234\u2009567", "1234567"),
        ("between 100 200 times", "200"),
        ("**233168**", "233168"),
    ],
)
def test_prose_states_the_same_number(text: str, expected: str) -> None:
    assert answers.stated_in(text, expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 2492.", "-2492"),
        ("The answer is −2492.", "2492"),
        ("1,234,567", "234"),
        ("1,234,567", "1234"),
        ("version v1.2345", "2345"),
        ("about 2492.5", "2492"),
    ],
)
def test_prose_with_another_number_does_not(text: str, expected: str) -> None:
    assert not answers.stated_in(text, expected)


@pytest.mark.parametrize(
    ("printed", "expected", "same"),
    [("−2492", "-2492", True), ("1,234,567", "1234567", True), ("2492", "-2492", False)],
)
def test_a_printed_line_with_a_typographic_minus_or_separators(
    printed: str, expected: str, same: bool
) -> None:
    assert answers.equals(printed, expected) is same
