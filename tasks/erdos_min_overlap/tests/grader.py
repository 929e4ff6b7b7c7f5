"""The isolated grader of an emitted optimization task: standard library only, Python >= 3.11.

One file on purpose. Every task bundle carries a byte-for-byte copy as
`tests/grader.py`, which `tests/test.sh` runs as root with the image's own
`python3` in the verifier phase; on the host, `atoll checker grade` imports
this same module (`atoll.checker.grader`). Nothing here may import anything
outside the standard library, or the copy in a bare image would not start.

The task's private files sit beside it: `generator.py` (`generate(seed) ->
list[dict]`), `scorer.py` (`score(instance, output) -> float` in [0, 1]),
`feasibility.py` (`is_feasible(instance, output) -> bool`) and
`contract.json` (the grading seed, the runtime limits and the self-test
examples). A submission is one program that reads one JSON instance on stdin
and writes one JSON object on stdout: Python by default, or C++ when the
contract says `"language": "cpp"` (then the grader compiles it once per
grading, as the run uid under the contract's compile limits, with the
contract's compiler flags, and runs the binary per instance).

What it guarantees:
- the grader checks the task's own code first (see `self_check`); a failed
  check is a `CheckerError` (no reward file, exit status 2), never a score;
- the private directories and the log directory are locked (mode 0700) while
  the submission can run, and only a bounded regular submission file is
  copied (no symlink, no special file) into a fresh directory;
- the submission runs once per instance as an unused unprivileged uid/gid, in
  its own session, with `python3 -I`, an environment of PATH and LANG only,
  rlimits, a wall clock and capped output; afterwards every process of that
  uid is killed and its files in the shared temporary directories removed;
- the scorer and the validator see only the parsed JSON output and are held
  to their contract on every output they judge.

Run it as `python3 -I grader.py grade --tests DIR --submission FILE --out DIR
[--lock DIR ...]` or `python3 -I grader.py self-check --tests DIR`.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import errno
import hashlib
import importlib.util
import json
import math
import os
import pwd
import random
import resource
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

GRADER_VERSION = "2"
CONTRACT_SCHEMA = "atoll.checker.contract/1"
SCORES_SCHEMA = "atoll.checker.scores/1"

MiB = 1024 * 1024

# Per-case statuses, in scores.json. Only `ok` can score above 0.
OK = "ok"
INFEASIBLE = "infeasible"
MALFORMED = "malformed"
CRASH = "crash"
TIMEOUT = "timeout"
MEMORY = "memory"
OUTPUT_LIMIT = "output_limit"
# The task's scorer or validator failed on the output (raised, ran past its time, broke its
# contract): the submission scores 0 on the case, and the grader's log says why. A submission
# can never make its own grading an infrastructure error.
JUDGE_ERROR = "judge_error"
STATUSES = (OK, INFEASIBLE, MALFORMED, CRASH, TIMEOUT, MEMORY, OUTPUT_LIMIT, JUDGE_ERROR)

# The languages a submission may be written in: Python 3, or C++ compiled with g++.
PYTHON = "python"
CPP = "cpp"
LANGUAGES = (PYTHON, CPP)
COMPILER = "g++"
COMPILE_MESSAGE = 2000  # characters of the compiler's diagnostics kept in a case's detail

# The files of a task's tests/ directory the grader reads.
GENERATOR = "generator.py"
SCORER = "scorer.py"
FEASIBILITY = "feasibility.py"
CONTRACT = "contract.json"

# What the submission sees: nothing of the grader's environment.
CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"
CHILD_ENV = {"PATH": CHILD_PATH, "LANG": "C.UTF-8"}

# Directories every user may write to; what the submission leaves there is removed.
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")

# Where the grader draws the uid/gid of a grading from, where the namespace maps them: far
# above any account and below 2**31 - 1 (ids some tools read as signed).
SANDBOX_IDS = range(1_000_000_000, 2_000_000_000)

# Outputs every scorer must score 0 and every validator must call infeasible.
MALFORMED_OUTPUTS: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    1,
    -1.5,
    "",
    "junk",
    [],
    [1, 2, 3],
    {},
    {"junk": 1},
    {"output": None},
    {"": ""},
    {"answer": [None, {"nested": "junk"}], "value": "NaN"},
)

# How the construction's fuzz derives malformed outputs from a feasible example's output.
FUZZ_NODES = 24  # values of the output mutated (breadth first), at most
FUZZ_HUGE = 100_000  # elements of a huge list
FUZZ_HUGE_LISTS = 3  # lists made huge, at most
FUZZ_DEPTH = 60  # levels of a deeply nested value (a submission's may nest up to JSON_DEPTH)
FUZZ_WRONG_TYPES: tuple[Any, ...] = (None, True, "x", 1.5, -7, [], {})
FUZZ_NUMBERS: tuple[Any, ...] = (
    float("nan"),
    float("inf"),
    float("-inf"),
    -1,
    -1.5,
    -(10**9),
    10**18,
    1e308,
)

# Wall-clock bounds on the task's own code, per call (the verifier phase has its own timeout).
GENERATOR_SECONDS = 60.0
JUDGE_SECONDS = 10.0

JSON_DEPTH = 64  # deeper outputs are malformed (and could exhaust a scorer's recursion)
JUDGE_OUTPUT_SHOWN = 300  # characters of an output the task's code failed on, in its case's detail
STDERR_TAIL = 600  # characters of a failed run's stderr kept in scores.json


# --- errors -------------------------------------------------------------------------------


class CheckerError(Exception):
    """The grader or the task's checker failed: an infrastructure error, never a score."""


class SelfCheckFailed(CheckerError):
    """A named self-check of the task's own code failed."""

    def __init__(self, check: str, detail: str) -> None:
        self.check = check
        self.detail = detail
        super().__init__(f"self-check failed: {check}: {detail}")


# --- the contract ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one run of the submission may use; the instruction states the same numbers."""

    cpu_seconds: float = 2.0
    wall_seconds: float = 5.0
    memory_bytes: int = 512 * MiB
    processes: int = 16
    open_files: int = 64
    file_size_bytes: int = 16 * MiB
    stdout_bytes: int = 8 * MiB
    stderr_bytes: int = 64 * 1024
    source_bytes: int = 1 * MiB

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise CheckerError(f"limit {field.name} must be a positive number, not {value!r}")
            if field.type == "int" and not isinstance(value, int):
                raise CheckerError(f"limit {field.name} must be an integer, not {value!r}")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Example:
    """A known output for an instance: what the validator and the scorer must say about it."""

    name: str
    instance: dict[str, Any]
    output: Any
    feasible: bool
    score: float | None = None  # None: only "feasible" is asserted

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Compile:
    """How a C++ submission is built: the compiler's flags and what the compiler may use.

    Written into the contract by whoever emits the task (the judge's flags and
    compile limits), so this file holds no second copy of them.
    """

    flags: tuple[str, ...]
    limits: Limits

    def to_json(self) -> dict[str, Any]:
        return {"flags": list(self.flags), "limits": self.limits.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> Compile:
        if not isinstance(data, dict) or set(data) != {"flags", "limits"}:
            raise CheckerError("contract.json compile must be an object with flags and limits")
        flags = data["flags"]
        if (
            not isinstance(flags, list)
            or not flags
            or not all(isinstance(f, str) and f.startswith("-") for f in flags)
        ):
            raise CheckerError("contract.json compile flags must be a non-empty list of options")
        if any(f.startswith("-o") for f in flags):
            raise CheckerError("contract.json compile flags may not name the output (-o)")
        return cls(tuple(flags), _limits(data["limits"], "compile limits"))


@dataclasses.dataclass(frozen=True)
class Contract:
    """`tests/contract.json`: how the task is graded and how its checker is tested.

    `seed` generates the graded instances; `check_seeds` are the three seeds
    the generator's determinism is checked at; `examples` must include a
    feasible output (with any declared score, or none) and an infeasible one.
    """

    seed: int
    check_seeds: tuple[int, int, int]
    limits: Limits = dataclasses.field(default_factory=Limits)
    min_instances: int = 8
    max_instances: int = 16
    max_instance_bytes: int = 1 * MiB
    examples: tuple[Example, ...] = ()
    language: str = PYTHON
    compile: Compile | None = None  # required for CPP, absent for PYTHON

    def __post_init__(self) -> None:
        if self.language not in LANGUAGES:
            raise CheckerError(
                f"contract.json language is {self.language!r}; one of {', '.join(LANGUAGES)}"
            )
        if (self.language == CPP) != (self.compile is not None):
            raise CheckerError("contract.json needs compile exactly when the language is cpp")

    @property
    def submission_name(self) -> str:
        """The submission's file name: solution.py or solution.cpp."""
        return "solution.cpp" if self.language == CPP else "solution.py"

    def to_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.compile is not None:  # a Python contract reads exactly as before C++ existed
            extra = {"language": self.language, "compile": self.compile.to_json()}
        return extra | {
            "schema": CONTRACT_SCHEMA,
            "seed": self.seed,
            "check_seeds": list(self.check_seeds),
            "limits": self.limits.to_json(),
            "min_instances": self.min_instances,
            "max_instances": self.max_instances,
            "max_instance_bytes": self.max_instance_bytes,
            "examples": [e.to_json() for e in self.examples],
        }

    @classmethod
    def from_json(cls, data: Any) -> Contract:
        """A contract from its JSON form; CheckerError names the first thing wrong."""
        if not isinstance(data, dict):
            raise CheckerError("contract.json must hold a JSON object")
        known = {
            "schema",
            "seed",
            "check_seeds",
            "limits",
            "min_instances",
            "max_instances",
            "max_instance_bytes",
            "examples",
            "language",
            "compile",
        }
        extra = sorted(set(data) - known)
        if extra:
            raise CheckerError(f"contract.json has unknown field(s): {', '.join(extra)}")
        if data.get("schema") != CONTRACT_SCHEMA:
            raise CheckerError(
                f"contract.json schema is {data.get('schema')!r}; this grader reads {CONTRACT_SCHEMA!r}"
            )
        seed = _int_field(data, "seed")
        seeds = data.get("check_seeds")
        if (
            not isinstance(seeds, list)
            or len(seeds) != 3
            or not all(_is_int(s) for s in seeds)
            or len(set(seeds)) != 3
        ):
            raise CheckerError("contract.json check_seeds must be three distinct integers")
        limits = _limits(data.get("limits", {}), "limits")
        language = data.get("language", PYTHON)
        compile_data = data.get("compile")
        low = _int_field(data, "min_instances", 8)
        high = _int_field(data, "max_instances", 16)
        if not 1 <= low <= high:
            raise CheckerError("contract.json needs 1 <= min_instances <= max_instances")
        examples = data.get("examples", [])
        if not isinstance(examples, list):
            raise CheckerError("contract.json examples must be a list")
        return cls(
            seed=seed,
            check_seeds=(seeds[0], seeds[1], seeds[2]),
            limits=limits,
            min_instances=low,
            max_instances=high,
            max_instance_bytes=_int_field(data, "max_instance_bytes", 1 * MiB),
            examples=tuple(_example(e, i) for i, e in enumerate(examples)),
            language=language,
            compile=None if compile_data is None else Compile.from_json(compile_data),
        )


def _limits(data: Any, what: str) -> Limits:
    if not isinstance(data, dict):
        raise CheckerError(f"contract.json {what} must be an object")
    names = {f.name for f in dataclasses.fields(Limits)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise CheckerError(f"contract.json {what} has unknown field(s): {', '.join(unknown)}")
    return Limits(**data)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_field(data: dict[str, Any], name: str, default: int | None = None) -> int:
    value = data.get(name, default)
    if not _is_int(value):
        raise CheckerError(f"contract.json {name} must be an integer, not {value!r}")
    return int(value)  # type: ignore[arg-type]


def _example(data: Any, index: int) -> Example:
    if not isinstance(data, dict) or set(data) - {
        "name",
        "instance",
        "output",
        "feasible",
        "score",
    }:
        raise CheckerError(
            f"contract.json example {index} must be an object with name, instance, output, "
            "feasible and (optionally) score"
        )
    name = data.get("name", f"example {index}")
    if not isinstance(name, str) or not isinstance(data.get("instance"), dict):
        raise CheckerError(
            f"contract.json example {index} needs a string name and an instance object"
        )
    if "output" not in data or not isinstance(data.get("feasible"), bool):
        raise CheckerError(f"contract.json example {name!r} needs an output and a boolean feasible")
    score = data.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise CheckerError(f"contract.json example {name!r} score must be a number")
    return Example(name, data["instance"], data["output"], data["feasible"], score)


def load_contract(tests_dir: Path) -> Contract:
    """The contract of the task whose private files are in `tests_dir`."""
    path = Path(tests_dir) / CONTRACT
    try:
        data = json.loads(_read_private(path), parse_constant=_reject_constant)
    except (OSError, ValueError) as exc:
        raise CheckerError(f"cannot read {path}: {exc}") from None
    return Contract.from_json(data)


# --- the task's own code -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TaskCode:
    """The three functions of a task, loaded from its tests/ directory."""

    generate: Callable[[int], Any]
    score: Callable[[Any, Any], Any]
    is_feasible: Callable[[Any, Any], Any]
    sources: dict[str, str]


def load_task_code(tests_dir: Path) -> TaskCode:
    """Import generator.py, scorer.py and feasibility.py as fresh, private modules."""
    tests_dir = Path(tests_dir).absolute()
    functions: dict[str, Callable[..., Any]] = {}
    sources: dict[str, str] = {}
    for filename, name in (
        (GENERATOR, "generate"),
        (SCORER, "score"),
        (FEASIBILITY, "is_feasible"),
    ):
        path = tests_dir / filename
        try:
            source = _read_private(path).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CheckerError(f"cannot read {path}: {exc}") from None
        sources[filename] = source
        module_name = f"_atoll_task_{filename[:-3]}_{os.getpid()}_{id(functions)}"
        spec = importlib.util.spec_from_loader(module_name, loader=None, origin=str(path))
        if spec is None:
            raise CheckerError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        module.__file__ = str(path)
        try:
            code = compile(source, str(path), "exec", dont_inherit=True)
            exec(code, module.__dict__)  # the task's own, trusted checker code
        except Exception as exc:
            raise SelfCheckFailed(f"{filename} loads", _describe(exc)) from None
        function = getattr(module, name, None)
        if not callable(function):
            raise SelfCheckFailed(f"{filename} loads", f"it defines no function {name}()")
        functions[name] = function
    return TaskCode(sources=sources, **functions)


def _read_private(path: Path, limit: int = 16 * MiB) -> bytes:
    """A regular file of the task, never through a symlink."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes")
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(limit + 1)
    finally:
        os.close(fd)


# --- JSON ---------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def canonical_json(value: Any) -> bytes:
    """One encoding per value: sorted keys, no NaN or infinity, UTF-8, no spaces."""
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode("utf-8")


def parse_output(data: bytes) -> tuple[dict[str, Any] | None, str]:
    """The submission's output as a JSON object, or (None, why it is malformed)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "stdout is not UTF-8"
    if not text.strip():
        return None, "stdout is empty"
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return None, "stdout nests JSON too deeply"
    except ValueError as exc:
        return None, f"stdout is not one JSON value ({exc})"
    if not isinstance(value, dict):
        return None, f"stdout is JSON {type(value).__name__}, not an object"
    if _depth(value) > JSON_DEPTH:
        return None, f"stdout nests JSON deeper than {JSON_DEPTH} levels"
    return value, ""


def _depth(value: Any) -> int:
    """How many containers deep `value` nests (a scalar is 0), counted up to JSON_DEPTH + 1."""
    depth, level = 0, [value]
    while depth <= JSON_DEPTH:
        containers = [item for item in level if isinstance(item, (dict, list))]
        if not containers:
            break
        depth += 1
        level = [
            child
            for item in containers
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return depth


def _fresh(value: Any) -> Any:
    """A private deep copy, so that a checker that mutates its arguments cannot leak state."""
    return json.loads(json.dumps(value))


# --- bounded calls into the task's code ---------------------------------------------------


@contextlib.contextmanager
def _deadline(seconds: float, what: str) -> Iterator[None]:
    """Interrupt the task's code after `seconds` (only where signals can be used)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"{what} ran longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _call(
    check: str, function: Callable[..., Any], *args: Any, seconds: float, where: str = ""
) -> Any:
    try:
        with _deadline(seconds, check):
            return function(*(_fresh(a) for a in args))
    except SelfCheckFailed:
        raise
    except (Exception, SystemExit) as exc:  # the task's code may even call sys.exit()
        raise SelfCheckFailed(check, _describe(exc) + (f" for {where}" if where else "")) from None


def _judge(code: TaskCode, instance: dict[str, Any], output: Any, where: str) -> tuple[bool, float]:
    """(feasible, score) of one output, holding the validator and the scorer to their contract."""
    feasible = _call(
        "validator runs", code.is_feasible, instance, output, seconds=JUDGE_SECONDS, where=where
    )
    if not isinstance(feasible, bool):
        raise SelfCheckFailed(
            "validator returns a bool",
            f"is_feasible returned {type(feasible).__name__} {feasible!r} for {where}",
        )
    first = _call("scorer runs", code.score, instance, output, seconds=JUDGE_SECONDS, where=where)
    second = _call("scorer runs", code.score, instance, output, seconds=JUDGE_SECONDS, where=where)
    if isinstance(first, bool) or not isinstance(first, (int, float)):
        raise SelfCheckFailed(
            "scorer returns a number",
            f"score returned {type(first).__name__} {first!r} for {where}",
        )
    if not math.isfinite(first):
        raise SelfCheckFailed("scorer is finite", f"score returned {first!r} for {where}")
    if not 0.0 <= first <= 1.0:
        raise SelfCheckFailed("scorer is in [0, 1]", f"score returned {first!r} for {where}")
    if repr(first) != repr(second) or type(first) is not type(second):
        raise SelfCheckFailed(
            "scorer is deterministic", f"score returned {first!r}, then {second!r} for {where}"
        )
    if not feasible and first > 0:
        raise SelfCheckFailed(
            "scorer gives 0 to infeasible outputs",
            f"score returned {first!r} for {where}, which the validator calls infeasible",
        )
    return feasible, float(first)


# --- self-checks --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclasses.dataclass
class SelfCheckReport:
    """The outcome of `self_check`: every check run, and the graded instances if generated."""

    checks: list[Check]
    instances: list[dict[str, Any]] | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def require(self) -> None:
        """Raise SelfCheckFailed for the first failed check."""
        for check in self.checks:
            if not check.ok:
                raise SelfCheckFailed(check.name, check.detail)


def self_check(
    tests_dir: Path,
    *,
    contract: Contract | None = None,
    code: TaskCode | None = None,
    cross_process: bool = True,
    fuzz: bool = False,
) -> SelfCheckReport:
    """Check the task's generator, scorer and validator before anything is graded.

    Runs the checks in order and stops at the first that fails (later checks
    depend on earlier ones); the report lists what ran. `cross_process` also
    regenerates the three seeds in two fresh interpreters with different hash
    seeds, which catches a generator that iterates over a set of strings.
    `fuzz` (construction's check, not a grading's) also judges malformed
    outputs derived from each feasible example (`fuzzed_outputs`).
    """
    tests_dir = Path(tests_dir).absolute()
    checks: list[Check] = []
    report = SelfCheckReport(checks)
    try:
        if contract is None:
            contract = load_contract(tests_dir)
        checks.append(Check("contract is valid", True))
        if code is None:
            code = load_task_code(tests_dir)
        checks.append(Check("modules load", True))
        _check_stdlib_only(code)
        checks.append(Check("modules import only the standard library", True))
        generated = _check_generator(code, contract)
        checks.append(Check("generator is deterministic and bounded at three seeds", True))
        if cross_process:
            _check_generator_across_processes(tests_dir, contract, generated)
            checks.append(Check("generator is deterministic across processes", True))
        report.instances = generated[contract.seed]
        _check_malformed(code, report.instances)
        checks.append(Check("scorer and validator reject malformed outputs", True))
        _check_examples(code, contract)
        checks.append(Check("examples are judged as the contract says", True))
        if fuzz:
            _check_fuzzed(code, contract)
            checks.append(Check("scorer and validator judge fuzzed outputs", True))
    except SelfCheckFailed as failed:
        checks.append(Check(failed.check, False, failed.detail))
    except CheckerError as failed:
        checks.append(Check("contract is valid", False, str(failed)))
    return report


def _check_stdlib_only(code: TaskCode) -> None:
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    for filename, source in code.sources.items():
        try:
            tree = ast.parse(source, filename)
        except SyntaxError as exc:
            raise SelfCheckFailed("modules load", f"{filename}: {exc}") from None
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    raise SelfCheckFailed(
                        "modules import only the standard library",
                        f"{filename} line {node.lineno} uses a relative import",
                    )
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name.split(".")[0] not in allowed:
                    raise SelfCheckFailed(
                        "modules import only the standard library",
                        f"{filename} line {node.lineno} imports {name}",
                    )


def _generate(code: TaskCode, seed: int) -> bytes:
    check = "generator is deterministic and bounded at three seeds"
    instances = _call(check, code.generate, seed, seconds=GENERATOR_SECONDS)
    try:
        return canonical_json(instances)
    except (TypeError, ValueError) as exc:
        raise SelfCheckFailed(
            check, f"generate({seed}) returned something that is not finite JSON: {exc}"
        ) from None


def _check_generator(code: TaskCode, contract: Contract) -> dict[int, list[dict[str, Any]]]:
    check = "generator is deterministic and bounded at three seeds"
    seeds = list(dict.fromkeys((contract.seed, *contract.check_seeds)))
    result: dict[int, list[dict[str, Any]]] = {}
    for seed in seeds:
        random.seed(seed ^ 0x5EED)  # a generator that uses the global RNG now disagrees with itself
        first = _generate(code, seed)
        random.seed(os.urandom(16))
        second = _generate(code, seed)
        if first != second:
            raise SelfCheckFailed(check, f"generate({seed}) returned different instances twice")
        instances = json.loads(first)
        if not isinstance(instances, list) or not all(isinstance(i, dict) for i in instances):
            raise SelfCheckFailed(check, f"generate({seed}) must return a list of objects")
        if not contract.min_instances <= len(instances) <= contract.max_instances:
            raise SelfCheckFailed(
                check,
                f"generate({seed}) returned {len(instances)} instances; the contract allows "
                f"{contract.min_instances} to {contract.max_instances}",
            )
        for index, instance in enumerate(instances):
            size = len(canonical_json(instance))
            if size > contract.max_instance_bytes:
                raise SelfCheckFailed(
                    check,
                    f"generate({seed}) instance {index} is {size} bytes of JSON; the contract "
                    f"allows {contract.max_instance_bytes}",
                )
        result[seed] = instances
    return result


_HASHES_PROGRAM = r"""
import hashlib, json, sys
namespace = {"__name__": "_atoll_generator", "__file__": sys.argv[1]}
exec(compile(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1], "exec"), namespace)
digests = {}
for seed in sys.argv[2:]:
    text = json.dumps(namespace["generate"](int(seed)), sort_keys=True, ensure_ascii=False,
                      allow_nan=False, separators=(",", ":"))
    digests[seed] = hashlib.sha256(text.encode("utf-8")).hexdigest()
print(json.dumps(digests))
"""


def _check_generator_across_processes(
    tests_dir: Path, contract: Contract, generated: dict[int, list[dict[str, Any]]]
) -> None:
    check = "generator is deterministic across processes"
    expected = {
        str(seed): hashlib.sha256(canonical_json(instances)).hexdigest()
        for seed, instances in generated.items()
    }
    for hash_seed in ("1", "2"):
        argv = [sys.executable, "-s", "-c", _HASHES_PROGRAM, str(tests_dir / GENERATOR)]
        argv += list(expected)
        try:
            done = subprocess.run(
                argv,
                env={**CHILD_ENV, "PYTHONHASHSEED": hash_seed, "PYTHONDONTWRITEBYTECODE": "1"},
                cwd="/",
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=GENERATOR_SECONDS * len(expected),
            )
        except subprocess.TimeoutExpired:
            raise SelfCheckFailed(
                check, "the generator ran out of time in a fresh process"
            ) from None
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
            raise SelfCheckFailed(check, f"the generator failed in a fresh process: {tail}")
        try:
            found = json.loads(done.stdout)
        except ValueError:
            raise SelfCheckFailed(check, "the fresh process printed no digests") from None
        for seed, digest in expected.items():
            if found.get(seed) != digest:
                raise SelfCheckFailed(
                    check,
                    f"generate({seed}) differs with PYTHONHASHSEED={hash_seed} (does it iterate "
                    "over a set or depend on id()?)",
                )


def _check_malformed(code: TaskCode, instances: list[dict[str, Any]]) -> None:
    check = "scorer and validator reject malformed outputs"
    for index, instance in enumerate(instances):
        for junk in MALFORMED_OUTPUTS:
            where = f"malformed output {json.dumps(junk)} on instance {index}"
            feasible, score = _judge(code, instance, junk, where)
            if feasible is not False:
                raise SelfCheckFailed(check, f"is_feasible accepted the {where}")
            if score != 0:
                raise SelfCheckFailed(check, f"score gave {score!r} to the {where}")


def _check_examples(code: TaskCode, contract: Contract) -> None:
    check = "examples are judged as the contract says"
    # A feasible example may declare any score (or none): many published formulas (a ratio to a
    # lower bound) give every feasible output a score above 0; only the no-op must score 0.
    if not any(e.feasible for e in contract.examples):
        raise SelfCheckFailed(check, "the contract has no feasible example")
    if not any(not e.feasible for e in contract.examples):
        raise SelfCheckFailed(check, "the contract has no infeasible example")
    for example in contract.examples:
        where = f"example {example.name!r}"
        feasible, score = _judge(code, example.instance, example.output, where)
        if feasible != example.feasible:
            name = (
                "validator accepts a valid zero-score output"
                if example.feasible and example.score == 0
                else "validator agrees with the examples"
            )
            raise SelfCheckFailed(
                name,
                f"is_feasible returned {feasible} for {where}, which is feasible={example.feasible}",
            )
        if example.score is not None and abs(score - float(example.score)) > 1e-9:
            raise SelfCheckFailed(
                "scorer agrees with the examples",
                f"score returned {score!r} for {where}, which scores {example.score!r}",
            )


def fuzzed_outputs(output: Any) -> list[tuple[str, Any]]:
    """Malformed outputs derived from a feasible one, each with what was changed: wrong types,
    missing and extra keys, empty, longer and huge lists, NaN, infinities, negative and
    out-of-range numbers, deep nesting. What a careless or hostile submission prints."""
    found: list[tuple[str, Any]] = []
    huge = 0
    for path, value in _nodes(output)[:FUZZ_NODES]:
        at = "the output" + "".join(f"[{json.dumps(step)}]" for step in path)
        if path:
            for wrong in FUZZ_WRONG_TYPES:
                if type(wrong) is not type(value):
                    found.append((f"{at} := {json.dumps(wrong)}", _put(output, path, wrong)))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            for number in FUZZ_NUMBERS:
                found.append((f"{at} := {json.dumps(number)}", _put(output, path, number)))
        elif isinstance(value, dict):
            for key in list(value)[:FUZZ_NODES]:
                missing = {k: v for k, v in value.items() if k != key}
                found.append((f"{at} without {json.dumps(key)}", _put(output, path, missing)))
            extra = {**value, "unexpected": [1, "x"]}
            found.append((f"{at} with an extra key", _put(output, path, extra)))
        elif isinstance(value, list):
            found.append((f"{at} := []", _put(output, path, [])))
            longer = [*value, value[0] if value else 0]
            found.append((f"{at} one element longer", _put(output, path, longer)))
            if huge < FUZZ_HUGE_LISTS:
                huge += 1
                filler = value or [0]
                big = [filler[i % len(filler)] for i in range(FUZZ_HUGE)]
                found.append((f"{at} of {FUZZ_HUGE} elements", _put(output, path, big)))
        if path and isinstance(value, (dict, list)):
            deep: Any = value
            for _ in range(FUZZ_DEPTH):
                deep = [deep]
            found.append((f"{at} nested {FUZZ_DEPTH} lists deep", _put(output, path, deep)))
    return found


def _nodes(value: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """Every value inside `value` with its path of keys and indices, breadth first."""
    found: list[tuple[tuple[Any, ...], Any]] = []
    level: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while level and len(found) < FUZZ_NODES:
        found += level
        nested: list[tuple[tuple[Any, ...], Any]] = []
        for path, item in level:
            if isinstance(item, dict):
                nested += [((*path, k), v) for k, v in item.items()]
            elif isinstance(item, list):
                nested += [((*path, i), v) for i, v in enumerate(item)]
        level = nested
    return found


def _put(value: Any, path: tuple[Any, ...], replacement: Any) -> Any:
    """A copy of `value` with the value at `path` replaced."""
    if not path:
        return replacement
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _put(value[head], rest, replacement)}
    copy = list(value)
    copy[head] = _put(value[head], rest, replacement)
    return copy


def _check_fuzzed(code: TaskCode, contract: Contract) -> None:
    """The scorer and the validator return a verdict (a bool; a finite score in [0, 1], 0 when
    infeasible) on every fuzzed variant of each feasible example, within their time limits."""
    for example in contract.examples:
        if not example.feasible:
            continue
        for change, output in fuzzed_outputs(example.output):
            where = f"the fuzzed output of example {example.name!r} with {change}"
            _judge(code, example.instance, output, where)


# --- locking ------------------------------------------------------------------------------


@contextlib.contextmanager
def locked(paths: Sequence[Path]) -> Iterator[list[Path]]:
    """Make each existing directory in `paths` private to its owner (0700) for the block.

    The original modes come back afterwards; by then nothing of the
    submission is running. A path that is not a real directory is an error.
    """
    done: list[tuple[Path, int]] = []
    try:
        for path in paths:
            path = Path(path)
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(info.st_mode):
                raise CheckerError(f"cannot lock {path}: not a directory (a symlink?)")
            try:
                os.chmod(path, 0o700, follow_symlinks=False)
            except OSError as exc:
                raise CheckerError(f"cannot lock {path}: {exc.strerror}") from None
            done.append((path, stat.S_IMODE(info.st_mode)))
        yield [p for p, _ in done]
    finally:
        for path, mode in reversed(done):
            with contextlib.suppress(OSError):
                os.chmod(path, mode, follow_symlinks=False)


# --- the submission -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Submission:
    """The submission as accepted (or why not): its bytes are copied before anything runs."""

    path: str
    accepted: bool
    reason: str = ""
    size: int = 0
    sha256: str = ""
    source: bytes = b""

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "accepted": self.accepted,
            "reason": self.reason,
            "bytes": self.size,
            "sha256": self.sha256,
        }


def read_submission(path: Path, limit: int) -> Submission:
    """Read a regular file of at most `limit` bytes, never through a symlink."""
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return Submission(where, False, "no submission file")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Submission(where, False, "the submission is a symbolic link")
        return Submission(where, False, f"cannot open the submission: {exc.strerror}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Submission(where, False, "the submission is not a regular file")
        if info.st_size > limit:
            return Submission(
                where, False, f"the submission is {info.st_size} bytes; the limit is {limit}"
            )
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > limit:
        return Submission(where, False, f"the submission grew past the {limit}-byte limit")
    return Submission(where, True, "", len(data), hashlib.sha256(data).hexdigest(), data)


# --- running it ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RunResult:
    status: str  # OK when the program exited 0 within every limit; otherwise the failure
    wall_seconds: float
    cpu_seconds: float
    stdout: bytes
    detail: str = ""


def _id_map(kind: str) -> list[tuple[int, int, int]]:
    """This process's user-namespace map (/proc/self/uid_map or gid_map): (inside, outside, count)."""
    try:
        text = Path(f"/proc/self/{kind}_map").read_text()
    except OSError:
        return [(0, 0, 1 << 32)]
    ranges = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            ranges.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return ranges


def _mapped(ident: int, ranges: list[tuple[int, int, int]]) -> bool:
    return any(start <= ident < start + count for start, _, count in ranges)


def _owners() -> dict[int, int]:
    """pid -> effective uid (the owner of /proc/PID) of every visible process: one stat each."""
    found: dict[int, int] = {}
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    found[int(entry.name)] = entry.stat(follow_symlinks=False).st_uid
    return found


def _zombie_parent(pid: int) -> int | None:
    """The parent of `pid` if it is a zombie, else None (it runs, or it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]) if fields[0] == b"Z" else None


def choose_sandbox_id() -> int:
    """A random id that no account, no group and no process uses, mapped in this namespace.

    Random, not fixed: graders that share a kernel's ids (containers without
    a user namespace, several gradings on one host) must not share a uid, or
    one's sweep would kill the other's runs and their process limits would
    add up. Where the namespace maps the wide range (a host, a container), the
    id is drawn from SANDBOX_IDS; where it maps only a few ids (atoll-local
    maps 16), from the free ones among those.
    """
    uids, gids = _id_map("uid"), _id_map("gid")
    taken = {entry.pw_uid for entry in pwd.getpwall()}
    with contextlib.suppress(ImportError):
        import grp

        taken |= {entry.gr_gid for entry in grp.getgrall()}
    taken |= set(_owners().values())

    def usable(ident: int) -> bool:
        return ident not in taken and _mapped(ident, uids) and _mapped(ident, gids)

    draw = random.SystemRandom()
    for _ in range(64):
        ident = draw.randrange(SANDBOX_IDS.start, SANDBOX_IDS.stop)
        if usable(ident):
            return ident
    few = [
        ident
        for start, _, count in uids
        for ident in range(max(1, start), min(start + count, 1 << 16))
        if usable(ident)
    ]
    if few:
        return draw.choice(few)
    raise CheckerError("no unused uid/gid is available to run the submission as")


class _Libc:
    """The two system calls the standard library lacks before Python 3.12 (unshare, prctl)."""

    def __init__(self) -> None:
        self.unshare: Callable[[int], int] | None = None
        self.prctl: Callable[..., int] | None = None
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            self.unshare = libc.unshare
            self.prctl = libc.prctl
        except (ImportError, OSError, AttributeError):
            pass


_CLONE_NEWNET = 0x40000000
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36


class Sandbox:
    """Runs the copied submission once per instance as one unused unprivileged uid.

    The grader must be root (or root of its user namespace): it needs to switch
    uid, lock directories and kill whatever the submission leaves behind.
    """

    def __init__(
        self, submission: Submission, limits: Limits, build: Compile | None = None
    ) -> None:
        if os.geteuid() != 0:
            raise CheckerError(
                "the grader runs submissions as another user and needs root: run it as root "
                "(as the task's verifier does), or grade in a trial with `atoll run`"
            )
        self.limits = limits
        self.uid = self.gid = choose_sandbox_id()
        self._libc = _Libc()
        self.network_namespace = self._probe_network_namespace()
        self.python = shutil.which("python3", path=CHILD_PATH)
        if self.python is None:
            raise CheckerError(f"no python3 on {CHILD_PATH} to run the submission with")
        self.base = Path(tempfile.mkdtemp(prefix="atoll-grader-"))
        os.chmod(self.base, 0o711)
        self.compiler: str | None = None
        self.compile_seconds = 0.0
        self.compile_error = ""  # why a C++ submission did not build: every case's failure
        self.program = self.base / ("solution.cpp" if build is not None else "solution.py")
        fd = os.open(self.program, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
        with os.fdopen(fd, "wb") as handle:
            handle.write(submission.source)
        self._runs = 0
        self.argv: list[str] = [self.python, "-I", str(self.program)]
        if build is not None:
            try:
                self.argv = [self._compile(build)]
            except BaseException:
                self.close()
                raise

    def _compile(self, build: Compile) -> str:
        """Build the C++ submission once, as the run uid under the compile limits; the binary.

        The compiler reads untrusted source, so it runs exactly as the program
        will (same uid, no network, rlimits, a wall clock). A source that does
        not build sets `compile_error` (the candidate's failure, graded 0 on
        every case); a missing compiler is the task's environment at fault.
        """
        compiler = shutil.which(COMPILER, path=CHILD_PATH)
        if compiler is None:
            raise CheckerError(f"no {COMPILER} on {CHILD_PATH} to compile the C++ submission with")
        self.compiler = compiler
        workdir = self.base / "build"
        os.mkdir(workdir, 0o700)
        os.chown(workdir, self.uid, self.gid)
        binary = self.base / "solution"
        try:
            argv = [compiler, str(self.program), *build.flags, "-o", str(workdir / "solution")]
            result = self._run(argv, b"", workdir, build.limits, keep_stderr_head=True)
            self.compile_seconds = result.wall_seconds
            built = workdir / "solution"
            if result.status != OK or not built.is_file() or built.is_symlink():
                text = result.detail.replace(str(self.program), "solution.cpp")
                text = text or "the compiler produced no program"
                self.compile_error = f"compilation failed: {text}"
            else:
                shutil.copyfile(built, binary)  # root's copy: the run uid cannot swap it
                os.chmod(binary, 0o555)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return str(binary)

    def _probe_network_namespace(self) -> bool:
        """Whether a fresh network namespace per run is possible (root on a host: yes)."""
        if self._libc.unshare is None:
            return False
        try:
            probe = subprocess.run(
                ["/bin/sh", "-c", "exit 0"],
                preexec_fn=self._enter_network_namespace,
                env=CHILD_ENV,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            return False  # no CAP_SYS_ADMIN here: the verifier phase itself has no network
        return probe.returncode == 0

    def _enter_network_namespace(self) -> None:
        assert self._libc.unshare is not None
        if self._libc.unshare(_CLONE_NEWNET) != 0:
            raise OSError(errno.EPERM, "unshare(CLONE_NEWNET) failed")

    def close(self) -> None:
        try:
            self.sweep()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _preexec(self, limits: Limits) -> None:
        """In the child, between fork and exec: everything that makes it unprivileged and bounded."""
        if self.network_namespace:
            self._enter_network_namespace()
        cpu = max(1, math.ceil(limits.cpu_seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setgroups([])
        os.setresgid(self.gid, self.gid, self.gid)
        os.setresuid(self.uid, self.uid, self.uid)
        if self._libc.prctl is not None:
            self._libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        os.umask(0o077)

    def run(self, stdin: bytes) -> RunResult:
        """One run of the submission with `stdin`; afterwards nothing of it is left."""
        self._runs += 1
        workdir = self.base / f"case-{self._runs}"
        os.mkdir(workdir, 0o700)
        os.chown(workdir, self.uid, self.gid)
        try:
            return self._run(self.argv, stdin, workdir, self.limits)
        finally:
            try:
                os.rmdir(workdir)  # the usual case: the program wrote nothing there
            except OSError:
                shutil.rmtree(workdir, ignore_errors=True)

    def _run(
        self,
        argv: list[str],
        stdin: bytes,
        workdir: Path,
        limits: Limits,
        *,
        keep_stderr_head: bool = False,
    ) -> RunResult:
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=CHILD_ENV,
                start_new_session=True,
                preexec_fn=lambda: self._preexec(limits),
                close_fds=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise CheckerError(f"cannot start the submission: {exc}") from None
        killed_for = ""
        stdout, stderr = bytearray(), bytearray()
        try:
            killed_for = self._pump(
                proc, stdin, stdout, stderr, started + limits.wall_seconds, limits
            )
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            _, wait_status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(wait_status)
            self.sweep()
            for stream in (proc.stdout, proc.stderr, proc.stdin):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        wall = time.monotonic() - started
        cpu = usage.ru_utime + usage.ru_stime
        status, detail = _classify(limits, killed_for, wait_status, cpu, bytes(stderr))
        if keep_stderr_head:  # a compiler's first diagnostics say what is wrong
            text = bytes(stderr).decode("utf-8", errors="replace").strip()
            head = text[:COMPILE_MESSAGE] + (" [...]" if len(text) > COMPILE_MESSAGE else "")
            detail = head if status == CRASH and head else detail
        return RunResult(status, wall, cpu, bytes(stdout), detail)

    def _pump(
        self,
        proc: subprocess.Popen[bytes],
        stdin: bytes,
        stdout: bytearray,
        stderr: bytearray,
        deadline: float,
        limits: Limits,
    ) -> str:
        """Feed stdin and collect capped output until the program exits; why it was killed, if so."""
        assert proc.stdin and proc.stdout and proc.stderr
        out_fd, err_fd, in_fd = proc.stdout.fileno(), proc.stderr.fileno(), proc.stdin.fileno()
        buffers = {out_fd: stdout, err_fd: stderr}
        caps = {out_fd: limits.stdout_bytes, err_fd: limits.stderr_bytes}
        selector = selectors.DefaultSelector()
        pidfd = os.pidfd_open(proc.pid)
        try:
            for fd in (out_fd, err_fd, in_fd):
                os.set_blocking(fd, False)
            selector.register(out_fd, selectors.EVENT_READ)
            selector.register(err_fd, selectors.EVENT_READ)
            selector.register(pidfd, selectors.EVENT_READ)
            pending = memoryview(stdin)
            selector.register(in_fd, selectors.EVENT_WRITE)
            exited = False
            while not exited:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return "wall"
                for key, _ in selector.select(remaining):
                    fd = key.fd
                    if fd == pidfd:
                        exited = True
                    elif fd == in_fd:
                        try:
                            pending = pending[os.write(fd, pending[: 1 << 16]) :]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            pending = pending[:0]
                        if not pending:
                            selector.unregister(fd)
                            proc.stdin.close()
                    elif not _drain(fd, buffers[fd], caps[fd], once=True):
                        selector.unregister(fd)
                    if len(stdout) > caps[out_fd]:
                        return "output"
            # The program is gone: take what its pipes still hold, within the caps.
            for fd in (out_fd, err_fd):
                _drain(fd, buffers[fd], caps[fd], once=False)
            return "output" if len(stdout) > caps[out_fd] else ""
        finally:
            selector.close()
            os.close(pidfd)

    def sweep(self) -> None:
        """Kill every process of the sandbox uid and remove its files from the shared temp dirs.

        Zombies are not running; those that are this process's own children
        are reaped, the others are their parent's (or init's) to reap.
        """
        me = os.getpid()
        for _ in range(200):
            live = []
            for pid in [pid for pid, uid in _owners().items() if uid == self.uid]:
                parent = _zombie_parent(pid)
                if parent is None:
                    live.append(pid)
                elif parent == me:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, os.WNOHANG)
            if not live:
                break
            for pid in live:
                _kill_exactly(pid, self.uid)
            time.sleep(0.001)
        else:
            raise CheckerError(f"cannot stop the processes the submission left as uid {self.uid}")
        for directory in SHARED_WRITABLE:
            _remove_owned_by(Path(directory), self.uid)


def _classify(
    limits: Limits, killed_for: str, wait_status: int, cpu: float, stderr: bytes
) -> tuple[str, str]:
    """A finished run's status and why: the limit it hit, its crash, or OK."""
    tail = stderr.decode("utf-8", errors="replace").strip()[-STDERR_TAIL:]
    if killed_for == "wall":
        return TIMEOUT, f"ran past the {limits.wall_seconds:g} s wall clock"
    if killed_for == "output":
        return OUTPUT_LIMIT, f"wrote more than {limits.stdout_bytes} bytes to stdout"
    if os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= limits.cpu_seconds):
            return TIMEOUT, f"used more than {limits.cpu_seconds:g} s of CPU time"
        if sig == signal.SIGXFSZ:
            return OUTPUT_LIMIT, f"wrote a file larger than {limits.file_size_bytes} bytes"
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        if "MemoryError" in tail or "bad_alloc" in tail:
            return MEMORY, f"ran out of its {limits.memory_bytes} bytes of memory"
        detail = f"killed by {name} after {cpu:.2f} s of CPU"
        return CRASH, f"{detail}: {tail}" if tail else detail
    code = os.WEXITSTATUS(wait_status)
    if code != 0:
        if "MemoryError" in tail or "Cannot allocate memory" in tail:
            return MEMORY, f"ran out of its {limits.memory_bytes} bytes of memory"
        if "File too large" in tail:  # Python ignores SIGXFSZ: the write fails with EFBIG
            return OUTPUT_LIMIT, f"wrote a file larger than {limits.file_size_bytes} bytes"
        return CRASH, f"exit status {code}" + (f": {tail}" if tail else "")
    if cpu >= limits.cpu_seconds:
        return TIMEOUT, f"used more than {limits.cpu_seconds:g} s of CPU time"
    return OK, ""


def _drain(fd: int, buffer: bytearray, cap: int, *, once: bool) -> bool:
    """Read what `fd` holds into `buffer`, keeping at most cap + 1 bytes; False at end of file.

    One byte past the cap is kept so the caller can tell "exactly the cap"
    from "over it"; the rest is read and dropped, so a writer never blocks.
    """
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not chunk:
            return False
        room = cap + 1 - len(buffer)
        if room > 0:
            buffer.extend(chunk[:room])
        if once:
            return True


def _kill_exactly(pid: int, uid: int) -> None:
    """SIGKILL `pid` if it is still a process of `uid`: a pidfd pins it against pid reuse."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if os.stat(f"/proc/{pid}").st_uid == uid:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(pidfd)


def _remove_owned_by(directory: Path, uid: int) -> None:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if info.st_uid != uid:
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)


# --- grading ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """One instance's verdict, as scores.json records it."""

    case: int
    status: str
    score: float
    feasible: bool
    wall_time: float  # seconds, to the microsecond
    detail: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "wall_time", round(self.wall_time, 6))

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "status": self.status,
            "score": self.score,
            "feasible": self.feasible,
            "wall_time": self.wall_time,
            "detail": self.detail,
        }


@dataclasses.dataclass(frozen=True)
class GradeReport:
    """Everything a grading produced: the reward and each case, as scores.json holds it."""

    reward: float
    cases: tuple[CaseResult, ...]
    submission: dict[str, Any]
    contract: dict[str, Any]
    isolation: dict[str, Any]
    grader_version: str = GRADER_VERSION

    @property
    def feasible_fraction(self) -> float:
        return sum(c.feasible for c in self.cases) / len(self.cases) if self.cases else 0.0

    @property
    def scores(self) -> list[float]:
        return [c.score for c in self.cases]

    @property
    def statuses(self) -> list[str]:
        return [c.status for c in self.cases]

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.cases) for s in STATUSES}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCORES_SCHEMA,
            "grader_version": self.grader_version,
            "reward": self.reward,
            "feasible_fraction": self.feasible_fraction,
            "counts": self.counts(),
            "submission": self.submission,
            "contract": self.contract,
            "isolation": self.isolation,
            "cases": [c.to_json() for c in self.cases],
        }

    def rewards(self) -> dict[str, float]:
        """reward.json, as Harbor reads it: the one reward (scores.json has the rest)."""
        return {"reward": self.reward}

    @classmethod
    def from_json(cls, data: Any) -> GradeReport:
        """A report from scores.json; CheckerError if it is not one."""
        try:
            if data.get("schema") != SCORES_SCHEMA:
                raise CheckerError(f"not a scores file of schema {SCORES_SCHEMA}")
            cases = tuple(
                CaseResult(
                    case=int(c["case"]),
                    status=str(c["status"]),
                    score=float(c["score"]),
                    feasible=bool(c["feasible"]),
                    wall_time=float(c["wall_time"]),
                    detail=str(c.get("detail", "")),
                )
                for c in data["cases"]
            )
            if any(c.status not in STATUSES for c in cases):
                raise CheckerError("scores file has an unknown case status")
            return cls(
                reward=float(data["reward"]),
                cases=cases,
                submission=dict(data["submission"]),
                contract=dict(data["contract"]),
                isolation=dict(data["isolation"]),
                grader_version=str(data["grader_version"]),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise CheckerError(f"malformed scores file: {exc!r}") from None


def read_scores(path: Path) -> GradeReport:
    """The report in a scores.json (e.g. from a trial's verifier directory)."""
    try:
        data = json.loads(Path(path).read_bytes(), parse_constant=_reject_constant)
    except (OSError, ValueError) as exc:
        raise CheckerError(f"cannot read {path}: {exc}") from None
    return GradeReport.from_json(data)


OUTPUT_FILES = ("reward.json", "reward.txt", "scores.json")


def grade(
    tests_dir: Path,
    submission: Path,
    *,
    out_dir: Path | None = None,
    lock: Sequence[Path] = (),
    cross_process: bool = True,
) -> GradeReport:
    """Grade one submission against the task whose private files are in `tests_dir`.

    Self-checks the task first (SelfCheckFailed on any failure), locks
    `tests_dir`, every directory in `lock` and `out_dir` while the submission
    can run, and writes reward.txt, reward.json and scores.json into `out_dir`
    when given. A rejected submission (missing, a symlink, too large, not a
    regular file) scores 0 on every case. CheckerError: nothing was graded.
    """
    tests_dir = Path(tests_dir).absolute()
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in OUTPUT_FILES:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(out_dir / name)
    private = [tests_dir, *map(Path, lock)] + ([out_dir] if out_dir is not None else [])
    with locked(list(dict.fromkeys(private))):
        contract = load_contract(tests_dir)
        code = load_task_code(tests_dir)
        checked = self_check(tests_dir, contract=contract, code=code, cross_process=cross_process)
        checked.require()
        assert checked.instances is not None
        report = _grade_instances(code, contract, checked.instances, Path(submission))
        if out_dir is not None:
            write_outputs(out_dir, report)
    return report


def _grade_instances(
    code: TaskCode, contract: Contract, instances: list[dict[str, Any]], path: Path
) -> GradeReport:
    accepted = read_submission(path, contract.limits.source_bytes)
    cases: list[CaseResult] = []
    isolation: dict[str, Any] = {}
    if not accepted.accepted:
        cases = [
            CaseResult(i, CRASH, 0.0, False, 0.0, f"submission rejected: {accepted.reason}")
            for i in range(len(instances))
        ]
    else:
        with Sandbox(accepted, contract.limits, contract.compile) as sandbox:
            isolation = {
                "uid": sandbox.uid,
                "gid": sandbox.gid,
                "network_namespace": sandbox.network_namespace,
                "python": sandbox.python,
            }
            if sandbox.compiler is not None:
                isolation |= {
                    "compiler": sandbox.compiler,
                    "compile_seconds": round(sandbox.compile_seconds, 6),
                }
            for index, instance in enumerate(instances):
                if sandbox.compile_error:
                    cases.append(CaseResult(index, CRASH, 0.0, False, 0.0, sandbox.compile_error))
                else:
                    cases.append(_grade_case(code, sandbox, index, instance))
    reward = math.fsum(c.score for c in cases) / len(cases) if cases else 0.0
    return GradeReport(
        reward=reward,
        cases=tuple(cases),
        submission=accepted.to_json(),
        contract=contract.to_json() | {"instances": len(instances)},
        isolation=isolation,
    )


def _grade_case(
    code: TaskCode, sandbox: Sandbox, index: int, instance: dict[str, Any]
) -> CaseResult:
    run = sandbox.run(canonical_json(instance) + b"\n")
    if run.status != OK:
        return CaseResult(index, run.status, 0.0, False, run.wall_seconds, run.detail)
    output, why = parse_output(run.stdout)
    if output is None:
        return CaseResult(index, MALFORMED, 0.0, False, run.wall_seconds, why)
    try:
        feasible, score = _judge(code, instance, output, f"the output of case {index}")
    except SelfCheckFailed as failed:
        # The task's own code failed on this output: never an infrastructure error, which a
        # trainer would drop or retry; the case scores 0, with the reason in the log.
        shown = json.dumps(output, sort_keys=True)
        shown = shown if len(shown) <= JUDGE_OUTPUT_SHOWN else shown[:JUDGE_OUTPUT_SHOWN] + "..."
        detail = f"{failed.check}: {failed.detail}; the output: {shown}"
        print(f"grader: case {index} scores 0: {detail}", file=sys.stderr, flush=True)
        return CaseResult(index, JUDGE_ERROR, 0.0, False, run.wall_seconds, detail)
    if not feasible:
        return CaseResult(index, INFEASIBLE, 0.0, False, run.wall_seconds, "infeasible output")
    return CaseResult(index, OK, score, True, run.wall_seconds)


# --- outputs ------------------------------------------------------------------------------


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_outputs(out_dir: Path, report: GradeReport) -> None:
    """scores.json, reward.txt, then reward.json (Harbor reads it first), each atomically."""
    out_dir = Path(out_dir)
    pretty = json.dumps(report.to_json(), indent=2, sort_keys=True, allow_nan=False) + "\n"
    _atomic_write(out_dir / "scores.json", pretty.encode())
    _atomic_write(out_dir / "reward.txt", f"{report.reward!r}\n".encode())
    _atomic_write(out_dir / "reward.json", canonical_json(report.rewards()) + b"\n")


def format_table(report: GradeReport) -> str:
    """The per-case table and the reward, as plain text."""
    lines = [f"{'case':>4}  {'status':<12} {'feasible':<8} {'score':>10} {'wall s':>8}  detail"]
    for c in report.cases:
        lines.append(
            f"{c.case:>4}  {c.status:<12} {str(c.feasible).lower():<8} {c.score:>10.6f} "
            f"{c.wall_time:>8.3f}  {c.detail[:80]}"
        )
    lines.append(f"reward {report.reward:.6f} over {len(report.cases)} cases")
    return "\n".join(lines)


# --- command line -------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grader.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    grade_cmd = commands.add_parser("grade", help="grade a submission and write the reward files")
    grade_cmd.add_argument("--tests", type=Path, required=True)
    grade_cmd.add_argument("--submission", type=Path, required=True)
    grade_cmd.add_argument("--out", type=Path)
    grade_cmd.add_argument("--lock", type=Path, action="append", default=[])
    grade_cmd.add_argument("--json", action="store_true", help="print scores.json's content")
    check_cmd = commands.add_parser("self-check", help="check the task's own code")
    check_cmd.add_argument("--tests", type=Path, required=True)
    check_cmd.add_argument("--json", action="store_true")
    check_cmd.add_argument(
        "--fuzz", action="store_true", help="also judge outputs fuzzed from the examples"
    )
    args = parser.parse_args(argv)
    libc = _Libc()
    if libc.prctl is not None:
        # Orphans of the submission become this process's children, so it can reap them.
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        if args.command == "self-check":
            report = self_check(args.tests, fuzz=args.fuzz)
            if args.json:
                print(json.dumps([dataclasses.asdict(c) for c in report.checks], indent=2))
            else:
                for check in report.checks:
                    print(f"{'ok  ' if check.ok else 'FAIL'} {check.name}  {check.detail}".rstrip())
            return 0 if report.ok else 2
        graded = grade(args.tests, args.submission, out_dir=args.out, lock=args.lock)
    except CheckerError as exc:
        print(f"checker error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a grader bug: still an error, never a score
        import traceback

        print(f"checker error: internal {_describe(exc)}", file=sys.stderr)
        traceback.print_exc()
        return 2
    print(json.dumps(graded.to_json(), indent=2) if args.json else format_table(graded))
    return 0


if __name__ == "__main__":
    sys.exit(main())
