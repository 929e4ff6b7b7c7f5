"""Output read the way testlib reads it, for every checker written here.

The authority's checkers are testlib programs, so a token is whatever
testlib calls one: a maximal run of bytes other than its four blanks (space,
tab, LF, CR). A vertical tab or a form feed is not a blank there (Python's
`bytes.split()` thinks otherwise), so it glues to the token around it and
makes it malformed. A UTF-8 byte-order mark is skipped at the very start of
the contestant's output (testlib's `ouf.skipBom()`), nowhere else.
"""

from __future__ import annotations

import re

BLANKS = b" \t\n\r"
BOM = b"\xef\xbb\xbf"

_NOT_TESTLIB_BLANKS = (b"\x0b", b"\x0c")  # blanks to bytes.split(), not to testlib
_BLANK_RUN = re.compile(rb"[ \t\n\r]+")


def skip_bom(output: bytes) -> bytes:
    """The output without the one byte-order mark testlib skips at its start."""
    return output[len(BOM) :] if output.startswith(BOM) else output


def split(data: bytes) -> list[bytes]:
    """The tokens of `data`, separated by testlib's blanks only."""
    if not any(byte in data for byte in _NOT_TESTLIB_BLANKS):
        return data.split()  # the same tokens, and much faster
    return [token for token in _BLANK_RUN.split(data) if token]


def blank_count(data: bytes) -> int:
    """How many bytes of `data` are testlib blanks."""
    return sum(data.count(byte) for byte in BLANKS)
