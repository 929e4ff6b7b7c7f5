"""The polyomino checker against hand-computed answers of the authoritative rules."""

from __future__ import annotations

import pytest

from atoll.judge.checkers.polyomino import InputError, check, prepare
from atoll.judge.verdict import CaseStatus

# Piece 1 is an L tetromino; pieces 2..100 are monominoes at a non-zero local origin.
L_CELLS = [(0, 0), (0, 1), (0, 2), (1, 0)]
INPUT = "100\n4\n" + "".join(f"{x} {y}\n" for x, y in L_CELLS) + "1\n5 -7\n" * 99
PIECES = prepare(INPUT.encode())
TOTAL = 103

# The L's cells after reflect-then-rotate, worked out by hand from the rules
# (reflect: x -> -x; one clockwise turn: (x, y) -> (y, -x)).
L_TRANSFORMED = {
    (0, 0): {(0, 0), (0, 1), (0, 2), (1, 0)},
    (1, 0): {(0, 0), (1, 0), (2, 0), (0, -1)},
    (2, 0): {(0, 0), (0, -1), (0, -2), (-1, 0)},
    (3, 0): {(0, 0), (-1, 0), (-2, 0), (0, 1)},
    (0, 1): {(0, 0), (0, 1), (0, 2), (-1, 0)},
    (1, 1): {(0, 0), (1, 0), (2, 0), (0, 1)},
    (2, 1): {(0, 0), (0, -1), (0, -2), (1, 0)},
    (3, 1): {(0, 0), (-1, 0), (-2, 0), (0, -1)},
}


def layout(r: int = 0, f: int = 0, width: int = 36, height: int = 3) -> list[str]:
    """The L (R=r, F=f) shifted into the 3x3 corner; the 99 monominoes fill columns 3..35.

    In the default 36 x 3 rectangle every cell outside the L's corner is taken,
    so any L cell that lands elsewhere overlaps or leaves the rectangle.
    """
    cells = L_TRANSFORMED[(r, f)]
    lx, ly = min(x for x, _ in cells), min(y for _, y in cells)
    lines = [f"{width} {height}", f"{-lx} {-ly} {r} {f}"]
    lines += [f"{3 + i // 3 - 5} {i % 3 + 7} 0 0" for i in range(99)]
    return lines


def run(lines: list[str], end: str = "\n") -> tuple[CaseStatus, float]:
    result = check(PIECES, ("\n".join(lines) + end).encode())
    return result.status, result.ratio


@pytest.mark.parametrize(("r", "f"), sorted(L_TRANSFORMED))
def test_every_rotation_and_reflection_follows_the_authoritys_order(r: int, f: int) -> None:
    status, ratio = run(layout(r, f))
    assert status is CaseStatus.OK
    assert ratio == pytest.approx(TOTAL / 108, abs=1e-9)


def test_counter_clockwise_reading_of_r_is_rejected() -> None:
    # Translation computed as if R=1 turned counter-clockwise (cells of R=3):
    # under the authority's clockwise turn the L pokes out below y = 0.
    cells = L_TRANSFORMED[(3, 0)]
    lines = layout(1, 0)
    lines[1] = f"{-min(x for x, _ in cells)} {-min(y for _, y in cells)} 1 0"
    assert run(lines) == (CaseStatus.WRONG_ANSWER, 0.0)


def test_rotating_before_reflecting_is_rejected() -> None:
    # R=1, F=1 placed where rotate-then-reflect would put it ({(0,0),(-1,0),(-2,0),(0,-1)}
    # shifted by (2, 1)); reflect-then-rotate puts cells on the monominoes' (3, 1) and (4, 1).
    lines = layout(1, 1)
    lines[1] = "2 1 1 1"
    assert run(lines) == (CaseStatus.WRONG_ANSWER, 0.0)


def test_ratio_is_rounded_to_nine_decimals_and_w_need_not_equal_h() -> None:
    status, ratio = run(layout(width=300, height=7))
    assert status is CaseStatus.OK
    assert ratio == round(TOTAL / 2100, 9) == 0.049047619


def test_testlib_blanks_of_any_kind_separate_tokens_and_may_trail() -> None:
    text = " \t".join(" ".join(line.split()) for line in layout()) + "\r\n\n  \t\n"
    result = check(PIECES, text.encode())
    assert result.ok and result.ratio == pytest.approx(TOTAL / 108, abs=1e-9)


def test_overlap_is_a_wrong_answer() -> None:
    lines = layout()
    lines[3] = lines[2]  # two monominoes on one cell
    assert run(lines) == (CaseStatus.WRONG_ANSWER, 0.0)


def test_overlap_between_different_pieces_in_a_huge_rectangle() -> None:
    lines = layout(width=4 * 10**12, height=4 * 10**12)
    lines[2] = "-5 7 0 0"  # the first monomino onto the L's (0, 0)
    assert run(lines) == (CaseStatus.WRONG_ANSWER, 0.0)


def test_largest_rectangle_is_valid_with_a_tiny_ratio() -> None:
    status, ratio = run(layout(width=4 * 10**12, height=4 * 10**12))
    assert status is CaseStatus.OK and ratio == 0.0  # 103 / 1.6e25 rounds to 0 at 9 decimals


@pytest.mark.parametrize(
    ("line", "value"),
    [(0, "35 3"), (0, "36 2"), (2, "-6 7 0 0"), (2, "33 7 0 0"), (2, "0 4 0 0")],
)
def test_cells_outside_the_rectangle_are_a_wrong_answer(line: int, value: str) -> None:
    lines = layout()
    lines[line] = value
    assert run(lines) == (CaseStatus.WRONG_ANSWER, 0.0)


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (1, "0 0 4 0"),  # R out of range
        (1, "0 0 -1 0"),
        (1, "0 0 0 2"),  # F out of range
        (0, "0 3"),  # W below 1
        (0, "4000000000001 3"),  # W above 4e12
        (0, "36 -3"),
        (2, "4000000000001 7 0 0"),  # X above 4e12
        (2, "-4000000000001 7 0 0"),
        (0, "036 3"),  # leading zero
        (1, "-0 0 0 0"),  # minus zero
        (1, "+0 0 0 0"),  # plus sign
        (0, "+36 3"),
        (2, "-2 7 0 00"),
        (2, "-2 7 0 0.0"),
        (2, "-2 7 0 O"),
        (2, "-2 7 0 --1"),
        (2, "-2 7 0 1-"),
        (2, "-2 7 0 -"),
        (2, "-2 7 0 0x0"),
        (2, "-2 7 0 " + "1" * 21),  # more than 20 characters
    ],
)
def test_malformed_or_out_of_range_tokens_are_presentation_errors(line: int, value: str) -> None:
    lines = layout()
    lines[line] = value
    assert run(lines) == (CaseStatus.PRESENTATION_ERROR, 0.0)


def test_missing_line_is_a_presentation_error() -> None:
    assert run(layout()[:-1]) == (CaseStatus.PRESENTATION_ERROR, 0.0)


def test_missing_token_is_a_presentation_error() -> None:
    lines = layout()
    lines[-1] = lines[-1].rsplit(" ", 1)[0]
    assert run(lines) == (CaseStatus.PRESENTATION_ERROR, 0.0)


@pytest.mark.parametrize("extra", ["0 0 0 0", "0", "x", "Ratio: 1"])
def test_anything_but_whitespace_after_the_last_line_is_a_presentation_error(extra: str) -> None:
    assert run([*layout(), extra]) == (CaseStatus.PRESENTATION_ERROR, 0.0)


def test_empty_output_is_a_presentation_error() -> None:
    assert check(PIECES, b"").status is CaseStatus.PRESENTATION_ERROR
    assert check(PIECES, b" \n\t").status is CaseStatus.PRESENTATION_ERROR


def test_nul_and_non_ascii_bytes_are_presentation_errors() -> None:
    text = "\n".join(layout()).encode()
    assert check(PIECES, text + b"\x00").status is CaseStatus.PRESENTATION_ERROR
    assert check(PIECES, text.replace(b"36", b"3\xc2\xb06", 1)).ratio == 0.0


def test_inputs_outside_the_checkers_ranges_are_refused() -> None:
    with pytest.raises(InputError):
        prepare(b"99\n" + b"1\n0 0\n" * 99)
    with pytest.raises(InputError):
        prepare(b"100\n11\n" + b"0 0\n" * 11)


def test_blank_padding_anywhere_is_allowed_but_not_overlong_tokens() -> None:
    padded = ("\n" * 100_000).join(layout()) + " " * 1_000_000
    result = check(PIECES, padded.encode())
    assert result.ok and result.ratio == pytest.approx(TOTAL / 108, abs=1e-9)
    lines = layout()
    lines[-1] = "1" * 2000  # far more non-blank bytes than any valid answer
    assert run(lines) == (CaseStatus.PRESENTATION_ERROR, 0.0)


@pytest.mark.parametrize("blank", ["\v", "\f"])
@pytest.mark.parametrize("where", ["between tokens", "beside a blank", "trailing"])
def test_vertical_tab_and_form_feed_are_not_blanks_as_in_testlib(blank: str, where: str) -> None:
    lines = layout()
    if where == "between tokens":
        lines[3] = lines[3].replace(" ", blank, 1)
    elif where == "beside a blank":
        lines[3] = lines[3].replace(" ", f" {blank} ", 1)
    text = "\n".join(lines) + (blank + "\n" if where == "trailing" else "\n")
    result = check(PIECES, text.encode())
    assert result.status is CaseStatus.PRESENTATION_ERROR and result.ratio == 0.0


def test_a_byte_order_mark_opening_the_output_is_skipped_as_in_testlib() -> None:
    text = ("\n".join(layout()) + "\n").encode()
    plain = check(PIECES, text)
    marked = check(PIECES, b"\xef\xbb\xbf" + text)
    assert marked.status is CaseStatus.OK and marked.ratio == plain.ratio == round(TOTAL / 108, 9)


@pytest.mark.parametrize("where", [b" \xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf"])
def test_a_byte_order_mark_anywhere_else_is_a_presentation_error(where: bytes) -> None:
    text = ("\n".join(layout()) + "\n").encode()
    assert check(PIECES, where + text).status is CaseStatus.PRESENTATION_ERROR
