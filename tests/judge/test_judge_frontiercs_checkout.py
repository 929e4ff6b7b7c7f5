"""atoll's own problem-0 checker against a real checkout's `chk.cc`, case by case.

Runs only where `ATOLL_FRONTIERCS` names a FrontierCS checkout (nothing of
FrontierCS is in this repository): the same programs are judged by the
judge's problem 0 (atoll's exact checker) and by the checkout's problem 0
(its testlib checker, compiled against its testlib); every case must earn
the same ratio, including outputs that only testlib's token rules decide
(a byte-order mark first, a vertical tab or form feed between tokens).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import ci

from atoll.judge.checkout import assemble
from atoll.judge.engine import Engine
from atoll.judge.problems import load_problems

CHECKOUT = os.environ.get("ATOLL_FRONTIERCS", "")
PROGRAMS = Path(__file__).parent / "programs"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1200),
]


@pytest.fixture(autouse=True, scope="module")  # before the module's engine is built
def _checkout() -> None:
    ci.beyond_ci(bool(CHECKOUT), "frontiercs-checkout", "ATOLL_FRONTIERCS names no checkout")


ROW = (PROGRAMS / "row.cpp").read_text()
# The row packer's answer, printed with what only testlib's token rules decide.
VARIANTS = {
    "byte-order mark first": ROW.replace(
        'printf("%lld %lld\\n", cursor, height);',
        'printf("\\xEF\\xBB\\xBF%lld %lld\\n", cursor, height);',
    ),
    "vertical tab between tokens": ROW.replace(
        'printf("%lld %lld\\n", cursor, height);', 'printf("%lld\\v%lld\\n", cursor, height);'
    ),
    "form feed after a line": ROW.replace(
        'printf("%lld %lld\\n", cursor, height);', 'printf("%lld %lld\\f\\n", cursor, height);'
    ),
}


@pytest.fixture(scope="module")
def both(state_dir: Path) -> Iterator[Engine]:
    found = assemble(load_problems(), Path(CHECKOUT))
    theirs = dataclasses.replace(found.shadowed["0"], id="0-checkout")
    engine = Engine({"0": found.problems["0"], "0-checkout": theirs}, state_dir)
    yield engine
    engine.close()


@pytest.mark.parametrize(
    "source",
    ["row.cpp", "shelf.cpp", "turn.cpp", "leading_zero.cpp", *VARIANTS],
)
def test_every_case_earns_the_same_ratio_from_both_checkers(both: Engine, source: str) -> None:
    program = (VARIANTS.get(source) or (PROGRAMS / source).read_text()).encode()
    ours = both.judge("0", program)
    theirs = both.judge("0-checkout", program)
    assert [c["scoreRatio"] for c in ours["cases"]] == [c["scoreRatio"] for c in theirs["cases"]]
    assert ours["score"] == pytest.approx(theirs["score"], abs=1e-9)
    if source in VARIANTS and "mark" not in source:
        assert ours["score"] == 0.0  # testlib refuses the token: so do we
