"""Problems as directories, so that adding one means adding data, not code.

Two layouts load into the same `Problem`:

- atoll's own: `problem.toml` (id, title, limits, and the checker: an
  importable module name, or a `.py` file beside it), the statement and the
  test inputs `N.in`. The problems shipped with this package live in
  `atoll/judge/problems/`; `--problems DIR` points the judge at another set.
- a FrontierCS checkout's `algorithmic/problems/<id>/`: `config.yaml`, a
  testlib checker or interactor compiled from the checkout, test inputs and
  answers (see `checkout`).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import threading
import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import ModuleType
from typing import Any

from atoll.core.sizes import MiB
from atoll.judge.case_inputs import CASE_INPUTS
from atoll.judge.verdict import CheckResult

BUILTIN_PROBLEMS = Path(__file__).parent / "problems"
_CASE_NAME = re.compile(r"(\d+)\.in")


class ProblemError(Exception):
    """A problem directory that cannot be used; the message names the file to fix."""


@dataclass(frozen=True)
class Limits:
    cpu_seconds: float
    wall_seconds: float
    memory_bytes: int


class Mode(StrEnum):
    """How a case is judged: output checked after the run, or a live dialogue."""

    CHECKED = "default"
    INTERACTIVE = "interactive"


@dataclass(frozen=True)
class Tool:
    """A testlib checker or interactor, compiled from its source when first needed."""

    role: str  # "checker" or "interactor"
    source: Path
    include_dir: Path  # the testlib headers it is compiled against


@dataclass(frozen=True)
class Case:
    """One test: the input, the answer file (for compiled checkers), and its limits."""

    input: Path
    answer: Path | None
    limits: Limits


@dataclass
class Problem:
    """One problem: its statement, its cases and how they are judged.

    Exactly one of `checker` (a Python module with `prepare` and `check`;
    inputs parsed on first use) and `tool` (a compiled testlib checker or
    interactor) is set.
    """

    id: str
    title: str
    directory: Path
    statement_path: Path
    cases: list[Case]
    limits: Limits  # the problem-wide limits (a case may override them)
    checker: ModuleType | None = None
    tool: Tool | None = None
    mode: Mode = Mode.CHECKED
    origin: str = "atoll"
    _prepared: dict[int, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def statement(self) -> str:
        return self.statement_path.read_text(encoding="utf-8")

    def case_input(self, index: int) -> bytes:
        return CASE_INPUTS.read(self.cases[index].input)

    def prepared(self, index: int) -> Any:
        """The checker's parsed form of case `index`, parsed once per process."""
        if self.checker is None:
            raise TypeError(f"problem {self.id} is judged by a compiled {self.mode} tool")
        with self._lock:
            found = self._prepared.get(index)
            if found is None:
                found = self._prepared[index] = self.checker.prepare(self.case_input(index))
            return found

    def warm(self) -> None:
        """Parse every case now (Python checkers), so that no submission pays for it."""
        if self.checker is None:
            return
        for index in range(len(self.cases)):
            self.prepared(index)

    def check(self, index: int, output: bytes) -> CheckResult:
        if self.checker is None:
            raise TypeError(f"problem {self.id} is judged by a compiled {self.mode} tool")
        # A checker module is vetted for prepare() and check() when it is loaded.
        verdict: CheckResult = self.checker.check(self.prepared(index), output)
        return verdict

    @property
    def judged_by(self) -> str:
        """In words: atoll's own checker, or the checkout's testlib checker or interactor."""
        if self.tool is None:
            return "atoll's checker"
        return self.tool.source.name

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "type": self.mode.value,
            "judgedBy": self.judged_by,
            "source": self.origin,
            "cases": len(self.cases),
            "timeLimit": self.limits.cpu_seconds,
            "memoryLimit": self.limits.memory_bytes,
        }


def load_problem(directory: Path) -> Problem:
    config_path = directory / "problem.toml"
    try:
        config = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProblemError(f"{config_path} is missing") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProblemError(f"{config_path} is not valid TOML: {exc}") from None
    try:
        pid = str(config["id"])
        checker_name = str(config["checker"])
        limits = Limits(
            cpu_seconds=float(config["cpu_seconds"]),
            wall_seconds=float(config["wall_seconds"]),
            memory_bytes=int(config["memory_mib"]) * MiB,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ProblemError(f"{config_path}: missing or bad field {exc}") from None
    statement_path = directory / str(config.get("statement", "statement.txt"))
    if not statement_path.is_file():
        raise ProblemError(f"{statement_path} is missing")
    tests = directory / str(config.get("tests", "testdata"))
    numbered = []
    for path in tests.glob("*.in"):
        match = _CASE_NAME.fullmatch(path.name)
        if match:
            numbered.append((int(match.group(1)), path))
    if not numbered:
        raise ProblemError(f"{tests} holds no test inputs named N.in")
    checker = _load_checker(directory, checker_name, config_path)
    if not (hasattr(checker, "prepare") and hasattr(checker, "check")):
        raise ProblemError(f"{config_path}: checker {checker_name} lacks prepare() and check()")
    return Problem(
        id=pid,
        title=str(config.get("title", pid)),
        directory=directory,
        statement_path=statement_path,
        cases=[Case(path, None, limits) for _, path in sorted(numbered)],
        limits=limits,
        checker=checker,
    )


def _load_checker(directory: Path, name: str, config_path: Path) -> ModuleType:
    """A checker module by import name, or a `.py` file inside the problem directory."""
    if name.endswith(".py"):
        path = directory / name
        spec = importlib.util.spec_from_file_location(
            f"atoll_problem_checker_{abs(hash(path))}", path
        )
        if spec is None or spec.loader is None or not path.is_file():
            raise ProblemError(f"{config_path}: checker file {path} is missing")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise ProblemError(f"{config_path}: checker {path} fails to load: {exc}") from None
        return module
    try:
        return importlib.import_module(name.partition(":")[0])
    except ImportError as exc:
        raise ProblemError(f"{config_path}: cannot import checker {name}: {exc}") from None


def load_problems(root: Path | None = None) -> dict[str, Problem]:
    """Every problem directory under `root` (the shipped problems by default), by id."""
    root = root or BUILTIN_PROBLEMS
    if not root.is_dir():
        raise ProblemError(f"problems directory {root} does not exist")
    problems: dict[str, Problem] = {}
    for child in sorted(root.iterdir()):
        if (child / "problem.toml").is_file():
            problem = load_problem(child)
            if problem.id in problems:
                raise ProblemError(f"two problem directories under {root} use id {problem.id!r}")
            problems[problem.id] = problem
    if not problems:
        raise ProblemError(f"{root} holds no problem directory (none has a problem.toml)")
    return problems
