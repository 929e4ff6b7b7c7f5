"""The search contract an emitted bundle carries: from the public formulation, valid for the search."""

from __future__ import annotations

from support.frontiersmith_model import formulation

from atoll.checker import Limits
from atoll.frontiersmith.search_contract import search_contract
from atoll.guidance_ttt.contract import Direction, Language, parse_contract


def test_the_contract_is_what_guidance_ttt_accepts_and_says_what_the_instruction_says():
    public = formulation("s1")
    limits = Limits(cpu_seconds=1.5, wall_seconds=4.0, memory_bytes=256 * 1024 * 1024)
    contract = parse_contract(search_contract(public, limits))
    assert (contract.scorer, contract.solution_language) == ("checker", Language.PYTHON)
    assert contract.score_direction is Direction.MAX
    assert public["objective"] in contract.objective
    assert public["score_formula"] in contract.objective
    assert public["feasibility"] in contract.solution_contract
    assert "python3 -I solution.py" in contract.solution_contract
    for stated in ("1.5 seconds of CPU time", "4 seconds of wall clock", "256 MiB"):
        assert stated in contract.mechanism_constraint


def test_the_authors_reasoning_never_reaches_the_contract():
    public = formulation("s1") | {
        "baseline_strategy": "SECRET-BASELINE-HINT",
        "why_open_ended": "SECRET-REASONING",
    }
    text = " ".join(search_contract(public, Limits()).values())
    assert "SECRET" not in text
