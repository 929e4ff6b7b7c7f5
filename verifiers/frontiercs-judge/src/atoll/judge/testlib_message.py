"""A case's ratios from a checker's or interactor's message, exactly as the authority reads them.

The authority takes the first `Ratio: <digits and dots>` anywhere in the
message and JavaScript's parseFloat of it (so `0.5.1` is 0.5); without one,
the ratio is 1 for an accepted case and 0 otherwise. `RatioUnbounded:` is
read the same way and defaults to the ratio. The message is the checker's
stdout, or its stderr when stdout is empty (testlib writes its verdict to
stderr); an interactor's stdout is the program's pipe, so its message is its
stderr. Deliberate difference: a number parseFloat cannot read (`Ratio: .`,
NaN at the authority, which spoils the whole score) counts as no ratio.
"""

from __future__ import annotations

import math
import re

from atoll.judge.problem_config import js_parse_float

MESSAGE_CAP = 1024  # characters of a checker's message kept in a case's result
_RATIO = re.compile(r"Ratio: ([\d.]+)")
_UNBOUNDED = re.compile(r"RatioUnbounded: ([\d.]+)")


def message(stdout: bytes, stderr: bytes) -> str:
    """The text the authority searches: stdout if the tool wrote any, else stderr."""
    return (stdout or stderr).decode("utf-8", errors="replace")


def ratios_from_testlib_message(text: str, accepted: bool) -> tuple[float, float]:
    """(ratio, unbounded ratio) of a case whose checker or interactor said `text`.

    This is where a FrontierCS case's score comes from (the submission's
    score is 100 x the mean ratio), and a testlib tool can give partial
    credit only through its message: so the message is read exactly as the
    authority reads it (see the module's docstring), and `accepted` (the
    tool's verdict) only decides the ratio of a message that names none. A
    rejected case whose message names a ratio still earns it, as there.
    """
    fallback = 1.0 if accepted else 0.0
    ratio = _first_number(_RATIO, text)
    ratio = fallback if ratio is None else ratio
    unbounded = _first_number(_UNBOUNDED, text)
    return ratio, ratio if unbounded is None else unbounded


def shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_CAP else text[:MESSAGE_CAP] + " [...]"


def _first_number(pattern: re.Pattern[str], text: str) -> float | None:
    match = pattern.search(text)
    if match is None:
        return None
    value = js_parse_float(match.group(1))
    return None if math.isnan(value) else value
