"""The published contract is checked: the worked example against the task's own checker, and no
precomputed optimum in the instances that the scorer reads (the pure parts; the stage tests run
them in construction)."""

from __future__ import annotations

from support.frontiersmith_model import SCORER, SCORER_READS_OPTIMUM, formulation

from atoll.frontiersmith.public_contract import (
    PUBLISHED_EXAMPLE,
    blame_the_checker,
    optimum_findings,
    published_example,
)
from atoll.frontiersmith.taskcode import Finding

INSTANCES = [{"capacity": 9, "items": [{"v": 1, "w": 2}], "best_value": 4}]


def test_the_worked_example_is_a_feasible_contract_example_with_its_score() -> None:
    example = published_example(formulation("s1"))
    assert example == {
        "name": PUBLISHED_EXAMPLE,
        "instance": {"capacity": 5, "items": [{"v": 3, "w": 5}, {"v": 2, "w": 4}]},
        "output": {"take": [0]},
        "feasible": True,
        "score": 0.6,
    }


def test_a_disagreement_with_it_is_the_checkers_to_repair_not_the_generators() -> None:
    found = [
        Finding(
            "scorer agrees with the examples",
            "score returned 0.6 for example 'published example', which scores 0.7",
            ("scorer", "generator"),
        ),
        Finding("scorer agrees with the examples", "for example 'first item'", ("generator",)),
    ]
    published, other = blame_the_checker(found)
    assert published.files == ("scorer",)
    assert "the task's scorer and validator must reproduce it" in published.detail
    assert other == found[1]


def test_an_optimum_the_scorer_reads_is_found() -> None:
    (finding,) = optimum_findings(INSTANCES, SCORER_READS_OPTIMUM)
    assert finding.check == "instances carry no precomputed optimum the scorer reads"
    assert "'best_value'" in finding.detail and finding.files == ("generator", "scorer")


def test_a_field_the_scorer_does_not_read_or_an_innocent_name_is_not() -> None:
    assert optimum_findings(INSTANCES, SCORER) == []  # carried but never read
    assert optimum_findings([{"bestiary": 3, "capacity": 2}], 'x["bestiary"] + x["capacity"]') == []
    # Everyday problem data a scorer must read, named with words an answer's name also uses.
    for field in ("reference_point", "expected_demand", "target", "ref_time", "deadline"):
        assert optimum_findings([{field: 3}], f'instance["{field}"]') == [], field
    for field in ("reference_answer", "expected_output", "ref_score", "best_known", "optimum"):
        assert optimum_findings([{field: 3}], f'instance["{field}"]') != [], field
    nested = [{"meta": {"optimal_cost": 3}}]
    assert optimum_findings(nested, "instance['meta']['optimal_cost']") != []
