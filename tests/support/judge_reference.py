"""An independent, deliberately naive statement of the authoritative checker's rules.

Written from the rules alone (sets of cells, one token at a time), sharing no
code with atoll.judge, so that tests compare two implementations rather than
one with itself. The rules are FrontierCS's (algorithmic track, at commit
4d508c1954766e0dda0347e1f14946978ef6b761): problem 0's `chk.cc` (testlib; a
piece reflected if F = 1, turned R times clockwise, translated; every cell
inside [0, W) × [0, H) and none twice; the case's message `Ratio: %.9f` of
Σk / (W·H)) and the judge's `judge/src/judge_engine.js` (the ratio parsed from
that message; a submission's score `score`, below).
"""

from __future__ import annotations

import re

TOKEN = re.compile(r"0|-?[1-9][0-9]*")
BLANKS = re.compile(r"[ \t\n\r]+")  # testlib's four blanks; not \v, \f or any other space
BOM = "\ufeff"  # testlib skips one at the start of the output only
LIMIT = 4 * 10**12


def read_pieces(text: str) -> list[list[tuple[int, int]]]:
    values = [int(t) for t in text.split()]
    n, pos, pieces = values[0], 1, []
    for _ in range(n):
        k = values[pos]
        cells = values[pos + 1 : pos + 1 + 2 * k]
        pieces.append(list(zip(cells[0::2], cells[1::2], strict=True)))
        pos += 1 + 2 * k
    return pieces


def transform(x: int, y: int, r: int, f: int) -> tuple[int, int]:
    if f == 1:
        x = -x
    for _ in range(r):
        x, y = y, -x
    return x, y


def ratio(input_text: str, output_text: str) -> float:
    """The case's ratio as the authority prints it, or 0.0 for any invalid output."""
    pieces = read_pieces(input_text)
    if output_text.startswith(BOM):
        output_text = output_text[1:]
    tokens = [t for t in BLANKS.split(output_text) if t]
    if any(len(t) > 20 or not TOKEN.fullmatch(t) for t in tokens):
        return 0.0
    if len(tokens) != 2 + 4 * len(pieces):
        return 0.0
    values = [int(t) for t in tokens]
    width, height = values[0], values[1]
    if not (1 <= width <= LIMIT and 1 <= height <= LIMIT):
        return 0.0
    seen: set[tuple[int, int]] = set()
    for i, piece in enumerate(pieces):
        tx, ty, r, f = values[2 + 4 * i : 6 + 4 * i]
        if not (-LIMIT <= tx <= LIMIT and -LIMIT <= ty <= LIMIT and r in (0, 1, 2, 3)):
            return 0.0
        if f not in (0, 1):
            return 0.0
        for x, y in piece:
            cx, cy = transform(x, y, r, f)
            cell = (cx + tx, cy + ty)
            if not (0 <= cell[0] < width and 0 <= cell[1] < height) or cell in seen:
                return 0.0
            seen.add(cell)
    return float(f"{len(seen) / (width * height):.9f}")


def row_ratio(input_text: str) -> float:
    """What the single-row packer earns: Σk / (Σ bounding-box widths × tallest height)."""
    pieces = read_pieces(input_text)
    cells = sum(len(p) for p in pieces)
    width = sum(max(x for x, _ in p) - min(x for x, _ in p) + 1 for p in pieces)
    height = max(max(y for _, y in p) - min(y for _, y in p) + 1 for p in pieces)
    return cells / (width * height)


def score(ratios: list[float]) -> float:
    """The submission's score as judge_engine.js computes it: the ratios added in case
    order, divided by the number of cases, times 100 (in that order: the float is exact)."""
    total = 0.0
    for value in ratios:
        total += value
    return total / len(ratios) * 100 if ratios else 0.0
