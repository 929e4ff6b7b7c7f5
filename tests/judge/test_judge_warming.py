"""The sandboxes a submission's cases run in, readied while its program compiles."""

from __future__ import annotations

import math

from atoll.core.sandbox import SessionPool, cgroupfs, get_backend
from atoll.core.sandbox.bwrap_session import MAX_PREPARED, spare_groups
from atoll.judge.engine import PROGRAM_BOX, PROGRAM_SLOTS, TOOL_BOX, TOOL_SLOTS
from atoll.judge.problems import Problem
from atoll.judge.warming import EXTRA_SHARE, Warming


def _run_groups(dirs: set[str]) -> set[str]:
    """One directory per run's cgroup: its memory one on cgroup v1 (never shared by runs)."""
    return dirs if cgroupfs.unified() else {d for d in dirs if "/memory/" in d}


def test_each_session_readies_more_than_an_even_share_of_the_cases(problem0: Problem) -> None:
    """The workers do not share the cases evenly: each session readies a quarter more than
    its share (up to what a session holds), so that none makes a run among the cases."""
    backend = get_backend("bwrap")
    programs = SessionPool(backend, PROGRAM_BOX, PROGRAM_SLOTS)
    tools = SessionPool(backend, TOOL_BOX, TOOL_SLOTS)
    warming = Warming(programs, tools, workers=2)
    before = spare_groups()
    try:
        warming.wait(warming.start(problem0))
        ready = _run_groups(spare_groups() - before)
        share = min(MAX_PREPARED, math.ceil(EXTRA_SHARE * len(problem0.cases) / 2))
        assert share > len(problem0.cases) / 2
        assert len(ready) == 2 * share, (len(ready), share)
    finally:
        warming.close()
        programs.close()
        tools.close()
    assert not any(_run_groups(spare_groups()) & ready)
