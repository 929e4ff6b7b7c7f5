"""The public model protocol: strict schemas, and the rules a schema cannot say."""

from __future__ import annotations

import json
from typing import Any

import pytest

from atoll.frontiersmith.protocol import (
    SCHEMAS,
    STAGES,
    InvalidAnswer,
    distinct_fraction,
    parse_answer,
)

EXPECTED_FIELDS = {
    "mutate": {
        "title",
        "mutation",
        "instruction",
        "objective",
        "feasibility",
        "score_formula",
        "example_instance",
        "example_output",
        "example_score",
        "baseline_strategy",
        "why_open_ended",
    },
    "filter": {"approved", "issues", "rationale"},
    "review": {"approved", "issues", "rationale"},
    "baseline": {"strategy", "code"},
    "solve": {"strategy", "code"},
    "divergence": {"distinct_pairs", "rationale"},
    "generator": {"code"},
    "scorer": {"code"},
    "feasibility": {"code"},
}


def _strict(schema: dict[str, Any]) -> None:
    if schema.get("type") == "object":
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) == set(schema["properties"])
        for sub in schema["properties"].values():
            _strict(sub)
    if schema.get("type") == "array":
        _strict(schema["items"])


def test_stage_names_and_fields_are_the_contract() -> None:
    assert set(STAGES) == set(EXPECTED_FIELDS)
    for stage, fields in EXPECTED_FIELDS.items():
        assert set(SCHEMAS[stage]["properties"]) == fields
        _strict(SCHEMAS[stage])
    assert SCHEMAS["mutate"]["properties"]["mutation"]["enum"] == [
        "objective",
        "output_constraints",
        "input_constraints",
        "harden",
    ]


def _answer(stage: str, value: Any, **kw: Any) -> dict[str, Any]:
    return parse_answer(stage, json.dumps(value), **kw)


def test_valid_answers_parse() -> None:
    assert _answer("filter", {"approved": True, "issues": [], "rationale": "ok"})["approved"]
    assert _answer("solve", {"strategy": "s", "code": "print(1)\n"})["code"]
    assert _answer("scorer", {"code": "def score(i, o):\n    return 0.0\n"})
    assert _answer("divergence", {"distinct_pairs": [[1, 0]], "rationale": "r"}, samples=3)


@pytest.mark.parametrize(
    ("stage", "value", "why"),
    [
        ("filter", {"approved": True, "issues": [], "rationale": "r", "extra": 1}, "Additional"),
        ("filter", {"approved": True, "issues": ["vague"], "rationale": "r"}, "approved must be"),
        ("review", {"approved": False, "issues": [], "rationale": "r"}, "approved must be"),
        ("solve", {"strategy": "s", "code": "def f(:\n"}, "does not parse"),
        ("scorer", {"code": "def points(i, o):\n    return 0\n"}, "score()"),
        ("divergence", {"distinct_pairs": [[0, 3]], "rationale": "r"}, "distinct sample indices"),
        ("divergence", {"distinct_pairs": [[1, 1]], "rationale": "r"}, "distinct sample indices"),
        ("divergence", {"distinct_pairs": [[0, 1], [1, 0]], "rationale": "r"}, "twice"),
        ("mutate", {"title": "t"}, "required"),
    ],
)
def test_invalid_answers_say_why(stage: str, value: Any, why: str) -> None:
    with pytest.raises(InvalidAnswer, match=why):
        _answer(stage, value, samples=3)


def test_not_json_at_all() -> None:
    with pytest.raises(InvalidAnswer, match="not JSON"):
        parse_answer("baseline", "Sure! Here is the code: print(1)")


def test_distinct_fraction() -> None:
    assert distinct_fraction([[0, 1]], 3) == pytest.approx(1 / 3)
    assert distinct_fraction([[0, 1], [0, 2], [1, 2]], 3) == 1.0


def test_cpp_programs_are_accepted_as_cpp_and_only_as_cpp():
    from support.frontiersmith_model import CPP_EXACT

    from atoll.frontiersmith.protocol import InvalidAnswer, parse_answer

    answer = json.dumps({"strategy": "exhaustive", "code": CPP_EXACT})
    for stage in ("baseline", "solve"):
        assert parse_answer(stage, answer, language="cpp")["code"] == CPP_EXACT
        with pytest.raises(InvalidAnswer, match="does not parse"):
            parse_answer(stage, answer)  # a Python task's program must be Python
    for code, why in (("   ", "empty"), ("print(1)\n", "no main function")):
        with pytest.raises(InvalidAnswer, match=why):
            parse_answer("solve", json.dumps({"strategy": "s", "code": code}), language="cpp")


def test_the_mutation_publishes_a_worked_example_that_parses() -> None:
    from support.frontiersmith_model import formulation

    good = formulation("s1")
    assert _answer("mutate", good)["example_score"] == 0.6
    for field, value, why in [
        ("example_instance", "items: 2", "example_instance is not JSON text"),
        ("example_output", "[0]", "example_output must be a JSON object, not list"),
        ("example_output", '{"take": NaN}', "example_output is not JSON text"),
        ("example_score", 1.5, r"example_score must be a number in \[0, 1\], not 1.5"),
        ("example_score", -0.1, r"example_score must be a number in \[0, 1\]"),
    ]:
        with pytest.raises(InvalidAnswer, match=why):
            _answer("mutate", good | {field: value})
