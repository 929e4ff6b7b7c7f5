"""Checker of FrontierCS problem 0 (Polyomino Packing), to the authoritative judge's rules.

The statement and the authoritative checker disagree; the checker is the
authority, so this follows it: strict integer tokens (no leading zero, no `-0`,
no plus sign, at most 20 characters, within range), reflect -> rotate
clockwise -> translate, every cell inside [0, W) x [0, H), no overlap, nothing
but whitespace after the n-th line, and W = H NOT enforced. A valid case is
worth Σk / (W·H), reported rounded to 9 decimals as the authority prints it.
Tokens are read as testlib reads them (`tokens`): a vertical tab or form feed
is no separator, and a UTF-8 byte-order mark opening the output is skipped.

Cases reach 62,017 cells, so the geometry is vectorised with numpy: checking
a case must cost far less than running the program that produced it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from atoll.judge.checkers import tokens
from atoll.judge.verdict import CaseStatus, CheckResult

MAX_SIDE = 4_000_000_000_000  # W, H in [1, 4e12]; X, Y in [-4e12, 4e12]
MIN_PIECES, MAX_PIECES = 100, 10_000
MIN_CELLS, MAX_CELLS = 1, 10


@dataclass(frozen=True)
class Pieces:
    """A parsed test input: every cell of every piece, in the piece's local frame."""

    n: int
    total_cells: int
    piece_of_cell: np.ndarray  # int64 index of the piece each cell belongs to
    x: np.ndarray  # int64
    y: np.ndarray  # int64


class InputError(ValueError):
    """A test input that the authoritative checker would refuse (our data is wrong)."""


def prepare(data: bytes) -> Pieces:
    """Parse a test input once; the result is shared by every submission's check."""
    try:
        values = [int(t) for t in tokens.split(data)]
    except ValueError as exc:
        raise InputError(f"test input has a non-integer token: {exc}") from None
    if not values:
        raise InputError("test input is empty")
    n = values[0]
    if not MIN_PIECES <= n <= MAX_PIECES:
        raise InputError(f"test input has n = {n}, outside [{MIN_PIECES}, {MAX_PIECES}]")
    owners: list[int] = []
    xs: list[int] = []
    ys: list[int] = []
    pos = 1
    for piece in range(n):
        if pos >= len(values):
            raise InputError(f"test input ends before piece {piece + 1} of {n}")
        k = values[pos]
        if not MIN_CELLS <= k <= MAX_CELLS:
            raise InputError(f"test input piece {piece + 1} has k = {k}, outside [1, 10]")
        cells = values[pos + 1 : pos + 1 + 2 * k]
        if len(cells) != 2 * k:
            raise InputError(f"test input ends inside piece {piece + 1}")
        xs.extend(cells[0::2])
        ys.extend(cells[1::2])
        owners.extend([piece] * k)
        pos += 1 + 2 * k
    return Pieces(
        n=n,
        total_cells=len(xs),
        piece_of_cell=np.asarray(owners, dtype=np.int64),
        x=np.asarray(xs, dtype=np.int64),
        y=np.asarray(ys, dtype=np.int64),
    )


def _presentation(message: str) -> CheckResult:
    return CheckResult(CaseStatus.PRESENTATION_ERROR, 0.0, message)


def _wrong(message: str) -> CheckResult:
    return CheckResult(CaseStatus.WRONG_ANSWER, 0.0, message)


def _lookup(chars: bytes) -> np.ndarray:
    table = np.zeros(256, dtype=bool)
    table[list(chars)] = True
    return table


# Whitespace as testlib sees it (not \v or \f); the token alphabet.
_SPACE = _lookup(tokens.BLANKS)
_DIGIT = _lookup(b"0123456789")
_NONZERO = _lookup(b"123456789")
_MINUS, _ZERO = ord("-"), ord("0")
# The longest token inside every range: "-4000000000000" (14 characters).
_LONGEST_IN_RANGE = 14

# Reflect-then-rotate by R quarter turns clockwise, as matrix entries indexed by R:
# R=0: (x, y); R=1: (y, -x); R=2: (-x, -y); R=3: (-y, x).
_XX = np.array([1, 0, -1, 0], dtype=np.int64)
_XY = np.array([0, 1, 0, -1], dtype=np.int64)
_YX = np.array([0, -1, 0, 1], dtype=np.int64)
_YY = np.array([1, 0, -1, 0], dtype=np.int64)

# Overlap is found with an occupancy count when the rectangle is small enough
# to count cell by cell, else by sorting the cells.
_DENSE_AREA_FACTOR = 16
_DENSE_AREA_SLACK = 1 << 20


def tokenize(output: bytes) -> np.ndarray | CheckResult:
    """Every integer token of `output` as int64, or the presentation error of the first bad one.

    Validation is vectorised over the raw bytes (a token is a maximal run of
    non-whitespace): only digits and a leading minus, no leading zero, no
    `-0`, no plus sign, at most 20 characters, and nothing longer than the
    widest in-range value.
    """
    if not output:
        return np.zeros(0, dtype=np.int64)
    raw = np.frombuffer(output, dtype=np.uint8)
    space = _SPACE[raw]
    filled = ~space
    before = np.concatenate(([True], space[:-1]))
    after = np.concatenate((space[1:], [True]))
    first = filled & before
    last = filled & after
    minus = raw == _MINUS
    nonzero_next = np.concatenate((_NONZERO[raw[1:]], [False]))
    bad = filled & ~_DIGIT[raw] & ~minus  # a character outside the alphabet
    bad |= minus & ~(first & nonzero_next)  # minus only first, then 1-9
    bad |= (raw == _ZERO) & first & ~last  # leading zero
    starts = np.flatnonzero(first)
    lengths = np.flatnonzero(last) - starts + 1
    too_long = starts[lengths > _LONGEST_IN_RANGE]
    wrong = np.flatnonzero(bad)
    if wrong.size or too_long.size:
        at = min(
            int(wrong[0]) if wrong.size else len(output),
            int(too_long[0]) if too_long.size else len(output),
        )
        index = int(np.searchsorted(starts, at, side="right"))  # 1-based token number
        begin = int(starts[index - 1])
        token = tokens.split(output[begin : begin + 24])[0].decode("latin-1")
        reason = (
            "is out of range"
            if too_long.size and int(too_long[0]) == begin
            else "is not a valid integer"
        )
        return CheckResult(
            CaseStatus.PRESENTATION_ERROR, 0.0, f"token {index} ({token!r}) {reason}"
        )
    values = np.fromstring(output, dtype=np.int64, sep=" ")
    if values.size != starts.size:  # unreachable for validated text; be strict anyway
        values = np.array([int(t) for t in tokens.split(output)], dtype=np.int64)
    return values


def check(pieces: Pieces, output: bytes) -> CheckResult:
    """Judge one program output against a prepared input."""
    expected = 2 + 4 * pieces.n
    output = tokens.skip_bom(output)
    # Outputs may be padded with any amount of whitespace (up to the 128 MiB cap);
    # bound the work by the non-blank bytes a valid answer can have.
    filled = len(output) - tokens.blank_count(output)
    if filled > _LONGEST_IN_RANGE * expected:
        return _presentation(f"output has {filled} non-blank bytes, more than any valid answer")
    if filled < len(output) // 2:
        output = b" ".join(tokens.split(output))
    values = tokenize(output)
    if isinstance(values, CheckResult):
        return values
    if values.size < expected:
        complete = max(0, values.size - 2) // 4
        return _presentation(
            f"unexpected end of output: expected W H and {pieces.n} placement lines, "
            f"got {values.size} integers ({complete} complete placements)"
        )
    if values.size > expected:
        return _presentation(
            f"extra output after the {pieces.n}-th placement line "
            f"({values.size - expected} more integers)"
        )

    width, height = int(values[0]), int(values[1])
    if not 1 <= width <= MAX_SIDE:
        return _presentation(f"W = {width} is outside [1, 4e12]")
    if not 1 <= height <= MAX_SIDE:
        return _presentation(f"H = {height} is outside [1, 4e12]")

    placed = values[2:].reshape(pieces.n, 4)
    tx, ty, rot, flip = placed[:, 0], placed[:, 1], placed[:, 2], placed[:, 3]
    for name, column, low, high in (
        ("X", tx, -MAX_SIDE, MAX_SIDE),
        ("Y", ty, -MAX_SIDE, MAX_SIDE),
        ("R", rot, 0, 3),
        ("F", flip, 0, 1),
    ):
        bad = np.flatnonzero((column < low) | (column > high))
        if bad.size:
            line = int(bad[0])
            return _presentation(
                f"line {line + 2}: {name} = {int(column[line])} is outside [{low}, {high}]"
            )

    # Per piece, the linear part of reflect-then-rotate as (a b; c d), then per cell:
    # 1. reflect if F = 1: (x, y) -> (-x, y)
    # 2. rotate R times clockwise, one turn (x, y) -> (y, -x)
    # 3. translate by (X, Y)
    sign = 1 - 2 * flip
    a, b = _XX[rot] * sign, _XY[rot]
    c, d = _YX[rot] * sign, _YY[rot]
    owner = pieces.piece_of_cell
    cx = a[owner] * pieces.x + b[owner] * pieces.y + tx[owner]
    cy = c[owner] * pieces.x + d[owner] * pieces.y + ty[owner]

    outside = np.flatnonzero((cx < 0) | (cx >= width) | (cy < 0) | (cy >= height))
    if outside.size:
        cell = int(outside[0])
        return _wrong(
            f"piece {int(owner[cell]) + 1}: cell ({int(cx[cell])}, {int(cy[cell])}) "
            f"is outside [0, {width}) x [0, {height})"
        )

    area = width * height
    if area <= _DENSE_AREA_FACTOR * pieces.total_cells + _DENSE_AREA_SLACK:
        keys = cx * height + cy
        hits = np.bincount(keys)
        clash = np.flatnonzero(hits > 1)
        if clash.size:
            key = int(clash[0])
            return _wrong(f"two pieces overlap at cell ({key // height}, {key % height})")
    else:
        order = np.lexsort((cy, cx))
        sx, sy = cx[order], cy[order]
        same = np.flatnonzero((sx[1:] == sx[:-1]) & (sy[1:] == sy[:-1]))
        if same.size:
            i = int(same[0])
            return _wrong(f"two pieces overlap at cell ({int(sx[i])}, {int(sy[i])})")

    ratio = float(f"{pieces.total_cells / (width * height):.9f}")
    return CheckResult(CaseStatus.OK, ratio, f"Ratio: {ratio:.9f}")
