"""Both backends pass the adversarial conformance suite, one test per check.

The checks themselves live in `atoll.core.sandbox.conformance`, which a
third-party backend runs against itself; each one ends with an audit of what
its runs left behind (processes of the uid, cgroups, containers, mounts).
"""

from __future__ import annotations

import pytest
from support import ci

from atoll.core.sandbox.conformance import CHECKS, Outcome, run_check

pytestmark = pytest.mark.timeout(120)


@pytest.mark.slow
@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.name)
def test_backend_conforms(backend, check, test_uid):
    result = run_check(backend, check, uid=test_uid)
    if result.outcome is Outcome.NOT_APPLICABLE:
        ci.not_applicable(result.detail)
    if result.outcome is Outcome.SKIPPED:
        ci.need(False, result.detail, "CI runs the tests as root")
    assert result.outcome is Outcome.PASSED, result.detail
