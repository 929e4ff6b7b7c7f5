"""The public model protocol: one Chat Completions request per stage, one JSON object per answer.

Third parties script this protocol (a test server, a different model
behind a proxy), so it is a contract: every request names its STAGE as the
`json_schema` name of a strict `response_format`, and the answer's message
content must be one JSON object with exactly that stage's fields. The
schemas use only the keywords every strict structured-output implementation
accepts (type, properties, required, additionalProperties, enum, items);
the rules a schema cannot say (approved exactly when there are no issues,
code that parses, pair indices in range) are checked here too. An answer
that breaks either is an invalid output: it was paid for, it is recorded,
and it counts against that stage's repairs.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

import jsonschema

# The axes a closed seed problem is changed on (a round-1 mutation rotates over these).
MUTATIONS = ("objective", "output_constraints", "input_constraints")
# What a mutation of a task accepted in an earlier round (`--rounds`) may also be asked to do:
# make the same task harder to score well on (a tighter bound, a larger instance family).
HARDEN = "harden"
MUTATION_KINDS = (*MUTATIONS, HARDEN)


def _obj(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_TEXT = {"type": "string"}
_VERDICT = _obj(
    {
        "approved": {"type": "boolean"},
        "issues": {"type": "array", "items": _TEXT},
        "rationale": _TEXT,
    }
)
_PROGRAM = _obj({"strategy": _TEXT, "code": _TEXT})
_CODE = _obj({"code": _TEXT})

SCHEMAS: dict[str, dict[str, Any]] = {
    "mutate": _obj(
        {
            "title": _TEXT,
            "mutation": {"type": "string", "enum": list(MUTATION_KINDS)},
            "instruction": _TEXT,
            "objective": _TEXT,
            "feasibility": _TEXT,
            "score_formula": _TEXT,
            # the worked example, checked against the task's own checker in construction
            "example_instance": _TEXT,  # one instance, as JSON text
            "example_output": _TEXT,  # a feasible output for it, as JSON text
            "example_score": {"type": "number"},  # its exact score under the formula
            "baseline_strategy": _TEXT,
            "why_open_ended": _TEXT,
        }
    ),
    "filter": _VERDICT,
    "review": _VERDICT,
    "baseline": _PROGRAM,
    "solve": _PROGRAM,
    "divergence": _obj(
        {
            "distinct_pairs": {
                "type": "array",
                "items": {"type": "array", "items": {"type": "integer"}},
            },
            "rationale": _TEXT,
        }
    ),
    "generator": _CODE,
    "scorer": _CODE,
    "feasibility": _CODE,
}
STAGES = tuple(SCHEMAS)

# The function each construction stage's code must define.
REQUIRED_FUNCTION = {"generator": "generate", "scorer": "score", "feasibility": "is_feasible"}


class InvalidAnswer(ValueError):
    """An answer that is not one valid JSON object for its stage."""


def schema(stage: str) -> dict[str, Any]:
    try:
        return SCHEMAS[stage]
    except KeyError:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}") from None


def parse_answer(
    stage: str, content: str, *, samples: int | None = None, language: str = "python"
) -> dict[str, Any]:
    """The answer's object if it is valid for `stage`; InvalidAnswer saying why otherwise.

    `samples` is the number of programs a `divergence` answer speaks about;
    `language` is the one `baseline` and `solve` programs are written in.
    """
    try:
        value = json.loads(content)
    except json.JSONDecodeError as exc:
        raise InvalidAnswer(f"the answer is not JSON ({exc.msg} at position {exc.pos})") from None
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema(stage)).iter_errors(value)
    )
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "the answer"
        raise InvalidAnswer(f"{at}: {error.message}")
    answer: dict[str, Any] = value  # every stage's schema is a JSON object (`_obj`)
    _check(stage, answer, samples, language)
    return answer


def _check(stage: str, value: Mapping[str, Any], samples: int | None, language: str) -> None:
    if stage == "mutate":
        empty = [k for k, v in value.items() if isinstance(v, str) and not v.strip()]
        if empty:
            raise InvalidAnswer(f"empty fields: {', '.join(empty)}")
        worked_example(value)
    elif stage in ("filter", "review"):
        issues = [i for i in value["issues"] if i.strip()]
        if len(issues) != len(value["issues"]):
            raise InvalidAnswer("an issue is an empty string")
        if value["approved"] != (not issues):
            raise InvalidAnswer("approved must be true exactly when issues is empty")
    elif stage in ("baseline", "solve"):
        if language == "cpp":
            _looks_like_cpp(value["code"])
        else:
            _parses(value["code"])
    elif stage in REQUIRED_FUNCTION:
        tree = _parses(value["code"])
        wanted = REQUIRED_FUNCTION[stage]
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        if wanted not in defined:
            raise InvalidAnswer(f"the code defines no top-level function {wanted}()")
    elif stage == "divergence":
        _pairs(value["distinct_pairs"], samples)


def worked_example(formulation: Mapping[str, Any]) -> tuple[dict[str, Any], Any, float]:
    """(instance, output, score) of a formulation's worked example; InvalidAnswer if it is
    not one: the instance a JSON object, the output a JSON object, the score in [0, 1]."""
    parsed = []
    for field in ("example_instance", "example_output"):
        try:
            item = json.loads(formulation[field], parse_constant=_no_constant)
        except ValueError as exc:
            raise InvalidAnswer(f"{field} is not JSON text ({exc})") from None
        if not isinstance(item, dict):
            raise InvalidAnswer(f"{field} must be a JSON object, not {type(item).__name__}")
        parsed.append(item)
    score = formulation["example_score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        raise InvalidAnswer(f"example_score must be a number in [0, 1], not {score!r}")
    return parsed[0], parsed[1], float(score)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _looks_like_cpp(code: str) -> None:
    """A C++ program's shape: not empty and with a main function. Whether it compiles is the
    grading's to find (a program that does not is the candidate's failure, scored 0)."""
    if not code.strip():
        raise InvalidAnswer("the code is empty")
    if not re.search(r"\bmain\s*\(", code):
        raise InvalidAnswer("the code has no main function: a complete C++ program is needed")


def _parses(code: str) -> ast.Module:
    if not code.strip():
        raise InvalidAnswer("the code is empty")
    try:
        return ast.parse(code)
    except SyntaxError as exc:
        raise InvalidAnswer(f"the code does not parse: {exc.msg} (line {exc.lineno})") from None


def _pairs(pairs: list[list[int]], samples: int | None) -> None:
    seen: set[tuple[int, int]] = set()
    for pair in pairs:
        if len(pair) != 2:
            raise InvalidAnswer(f"{pair} is not a pair of indices")
        i, j = sorted(pair)
        if i == j or i < 0 or (samples is not None and j >= samples):
            raise InvalidAnswer(f"{pair} is not a pair of distinct sample indices 0..{samples}")
        if (i, j) in seen:
            raise InvalidAnswer(f"{pair} appears twice")
        seen.add((i, j))


def distinct_fraction(pairs: list[list[int]], samples: int) -> float:
    """The share of sample pairs judged to use distinct core algorithms."""
    total = samples * (samples - 1) // 2
    return len({tuple(sorted(p)) for p in pairs}) / total if total else 0.0
