"""A case's ratio from a testlib checker's message, read as the authoritative judge reads it."""

from __future__ import annotations

import pytest

from atoll.judge.testlib_message import message, ratios_from_testlib_message


@pytest.mark.parametrize(
    ("text", "accepted", "expected"),
    [
        # everyday messages of checkers that give partial credit
        ("ok Ratio: 0.75", True, (0.75, 0.75)),
        ("points 12 of 16. Ratio: 0.75, RatioUnbounded: 0.75", True, (0.75, 0.75)),
        ("ok Ratio: 1.0 RatioUnbounded: 1.35 (better than the reference)", True, (1.0, 1.35)),
        ("Ratio: 1", True, (1.0, 1.0)),
        ("Ratio: 0", True, (0.0, 0.0)),
        # a rejected case still earns the ratio its message names
        ("wrong answer: area too small. Ratio: 0.3", False, (0.3, 0.3)),
        # the first ratio counts; later ones are text
        ("Ratio: 0.25 (a later line says Ratio: 0.9)", True, (0.25, 0.25)),
        # JavaScript's parseFloat: the longest number the digits and dots start with
        ("Ratio: 0.5.1", True, (0.5, 0.5)),
        ("Ratio: 7.", True, (7.0, 7.0)),
        # no ratio: the verdict decides
        ("ok the answer is correct", True, (1.0, 1.0)),
        ("wrong answer expected 3, found 4", False, (0.0, 0.0)),
        ("", True, (1.0, 1.0)),
        ("", False, (0.0, 0.0)),
        # an unbounded ratio alone: the ratio falls back, the unbounded one is read
        ("RatioUnbounded: 2.5", True, (1.0, 2.5)),
        ("RatioUnbounded: 2.5", False, (0.0, 2.5)),
        # what the authority's pattern does not match is no ratio
        ("Ratio: -0.5", True, (1.0, 1.0)),
        ("ratio: 0.5", False, (0.0, 0.0)),
        ("Ratio:0.5", False, (0.0, 0.0)),
        # deliberate difference: NaN at the authority (spoiling the score) is no ratio here
        ("Ratio: .", True, (1.0, 1.0)),
        ("Ratio: . RatioUnbounded: ...", False, (0.0, 0.0)),
    ],
)
def test_ratios_as_the_authority_reads_them(
    text: str, accepted: bool, expected: tuple[float, float]
) -> None:
    assert ratios_from_testlib_message(text, accepted) == expected


def test_the_message_is_stdout_or_else_stderr() -> None:
    """testlib writes its verdict to stderr; a checker that prints to stdout is read there."""
    assert message(b"Ratio: 0.5\n", b"ok Ratio: 0.9") == "Ratio: 0.5\n"
    assert message(b"", b"ok Ratio: 0.9") == "ok Ratio: 0.9"
    assert ratios_from_testlib_message(message(b"", b"ok Ratio: 0.9"), True) == (0.9, 0.9)
