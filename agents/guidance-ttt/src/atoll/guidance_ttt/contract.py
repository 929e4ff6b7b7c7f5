"""The task contract: what the harness knows about a problem, read from the task directory.

The harness itself knows nothing about any problem. A Harbor task directory
holds `instruction.md` (the problem statement) and `contract.json` (scorer,
language, objective, score label and direction, solution contract, judge id), so
adding a problem is a new directory, never a code change. The scorer is named,
not built in: any installed `atoll_scorers` registration can score a task. The contract is validated
against `contract.schema.json`, shipped beside this module, which rejects
unknown keys so that a misspelt field fails loudly instead of being ignored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, cast

import jsonschema

from atoll.core.digests import tree_sha256
from atoll.core.durable import canonical_json
from atoll.judge import SOURCE_FILES

INSTRUCTION_FILE = "instruction.md"
CONTRACT_FILE = "contract.json"
SCHEMA_RESOURCE = "contract.schema.json"
GRADER_DIR = "tests"
GRADER_DIGEST = "grader_sha256"  # in a resume state's task identity, when the task has a grader
DEFAULT_SCORER = "frontiercs-judge"
DEFAULT_LANGUAGE = "cpp"


class ContractError(ValueError):
    """A task directory whose statement or contract cannot be used; the message says what to fix."""


class Direction(StrEnum):
    MAX = "max"
    MIN = "min"


class Language(StrEnum):
    CPP = "cpp"
    PYTHON = "python"

    @property
    def solution_file(self) -> str:
        """The program's file name: in the task's `solution/`, the trial's workspace, the judge."""
        return SOURCE_FILES[self.value][0]


@dataclass(frozen=True)
class TaskContract:
    """The validated fields of `contract.json` (see `contract.schema.json` for their meaning)."""

    solution_language: Language
    mechanism_constraint: str
    objective: str
    raw_score_label: str
    score_direction: Direction
    solution_contract: str
    judge_problem_id: str | None = None
    scorer: str = DEFAULT_SCORER

    def identity(self) -> dict[str, str]:
        """What a resumed run must find unchanged: the scorer, and a digest of every field."""
        fields = {
            name: value.value if isinstance(value, StrEnum) else value
            for name, value in asdict(self).items()
        }
        digest = hashlib.sha256(canonical_json(fields)).hexdigest()
        return {"scorer": self.scorer, "contract_sha256": digest}

    def search_value(self, raw_score: float) -> float:
        """The archive's value of a raw score: larger is always better."""
        return search_value(self.score_direction, raw_score)

    @property
    def direction_phrase(self) -> str:
        """How prompts state the direction, e.g. 'higher packing density is better'."""
        word = "higher" if self.score_direction is Direction.MAX else "lower"
        return f"{word} {self.raw_score_label} is better"


def search_value(direction: Direction, raw_score: float) -> float:
    """A raw score as the search sees it: negated when the task minimizes."""
    return raw_score if direction is Direction.MAX else -raw_score


@dataclass(frozen=True)
class Task:
    """One discovery problem: its statement and its contract."""

    statement: str
    contract: TaskContract
    # The Harbor task directory, where a scorer that grades with the task's own files reads them.
    directory: Path | None = None

    def identity(self) -> dict[str, str]:
        """What a resumed run must find unchanged: the contract's identity and the grader's.

        The grader is the task's `tests/` (what the `checker` scorer grades with and
        the verifier runs): a changed grader scores the same program differently, so
        the archive's scores would no longer be comparable.
        """
        identity = self.contract.identity()
        tests = None if self.directory is None else self.directory / GRADER_DIR
        if tests is not None and tests.is_dir():
            identity[GRADER_DIGEST] = tree_sha256(tests)
        return identity


@cache
def contract_schema() -> dict[str, Any]:
    """The JSON Schema of `contract.json`, as shipped in the wheel."""
    text = resources.files(__package__).joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def parse_contract(data: object, source: str = CONTRACT_FILE) -> TaskContract:
    """Validate decoded contract JSON and return it typed; one `ContractError` naming the field."""
    schema = contract_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=_error_order)
    if errors:
        raise ContractError(f"{source}: {_describe(errors[0], schema)}")
    assert isinstance(data, dict)
    return TaskContract(
        solution_language=Language(data.get("solution_language", DEFAULT_LANGUAGE)),
        mechanism_constraint=data["mechanism_constraint"].strip(),
        objective=data["objective"].strip(),
        raw_score_label=data["raw_score_label"].strip(),
        score_direction=Direction(data["score_direction"]),
        solution_contract=data["solution_contract"].strip(),
        judge_problem_id=data.get("judge_problem_id"),
        scorer=data.get("scorer", DEFAULT_SCORER).strip(),
    )


def load_contract(path: Path) -> TaskContract:
    """Read and validate one `contract.json` file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractError(f"{path}: missing; every Guidance-TTT task needs a contract") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(f"{path}: cannot be read ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ContractError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    return parse_contract(data, source=str(path))


def load_task(task_dir: Path) -> Task:
    """Read a Harbor task directory's problem statement and contract."""
    if not task_dir.is_dir():
        raise ContractError(f"{task_dir}: not a task directory")
    instruction = task_dir / INSTRUCTION_FILE
    try:
        statement = instruction.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise ContractError(f"{instruction}: missing; it holds the problem statement") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(f"{instruction}: cannot be read ({exc})") from None
    if not statement:
        raise ContractError(f"{instruction}: empty; it must hold the problem statement")
    return Task(
        statement=statement, contract=load_contract(task_dir / CONTRACT_FILE), directory=task_dir
    )


def _error_order(error: jsonschema.ValidationError) -> tuple[int, str, str]:
    # Unknown and missing keys first (they explain the others), then by field name.
    rank = {"additionalProperties": 0, "required": 1, "type": 2}.get(str(error.validator), 3)
    return (rank, ".".join(str(p) for p in error.absolute_path), error.message)


def _describe(error: jsonschema.ValidationError, schema: dict[str, Any]) -> str:
    known = ", ".join(schema["properties"])
    if error.validator == "type" and not error.absolute_path:
        return "must be a JSON object with the fields " + known
    if error.validator == "additionalProperties":
        assert isinstance(error.instance, dict)
        unknown = sorted(set(error.instance) - set(schema["properties"]))
        return f"unknown field {unknown[0]!r}; the known fields are {known}"
    if error.validator == "required":
        required, given = (
            cast(list[str], error.validator_value),
            cast(dict[str, Any], error.instance),
        )
        missing = [name for name in required if name not in given]
        if missing[0] == "judge_problem_id":
            return f"missing field 'judge_problem_id' (the {DEFAULT_SCORER} scorer needs it)"
        return f"missing field {missing[0]!r}"
    field = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "enum":
        allowed = " or ".join(repr(v) for v in cast(list[Any], error.validator_value))
        return f"field {field!r} must be {allowed}, not {error.instance!r}"
    if error.validator == "pattern":
        return f"field {field!r} must not be blank"
    if error.validator == "type":
        return f"field {field!r} must be a {error.validator_value}, not {error.instance!r}"
    return f"field {field!r}: {error.message}"
