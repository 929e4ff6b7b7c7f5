"""The problems of a user's FrontierCS checkout, loaded where they lie.

Nothing of FrontierCS is copied: each problem under
`<checkout>/algorithmic/problems/<id>/` is read at run time, its
`config.yaml` as the authority reads it (`problem_config`), its checker or
interactor compiled against the checkout's own testlib
(`algorithmic/judge/include`) when first needed. A problem that cannot be
judged (unknown type, a missing checker, interactor, statement, input or
answer file) is set aside with one line saying why; the others load.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from atoll.judge.problem_config import ConfigError, answer_file, parse
from atoll.judge.problems import Case, Limits, Mode, Problem, ProblemError, Tool

HOME_ENV = "FRONTIERCS_HOME"
TESTLIB = "testlib.h"
# The authority's wall clock for a program is twice its CPU limit.
WALL_PER_CPU = 2.0
TITLE_CHARS = 80


@dataclass(frozen=True)
class Checkout:
    """Where a FrontierCS checkout keeps its algorithmic problems and its testlib."""

    root: Path
    problems_dir: Path
    include_dir: Path


@dataclass
class Catalog:
    """What loaded from a checkout, and why the rest did not (one line each)."""

    checkout: Checkout
    problems: dict[str, Problem] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


def configured_home() -> Path | None:
    """The checkout FRONTIERCS_HOME names, if any."""
    value = os.environ.get(HOME_ENV, "").strip()
    return Path(value).expanduser() if value else None


def find_checkout(path: Path) -> Checkout:
    """The checkout at `path` (its root, or its `algorithmic` directory); ProblemError if none."""
    path = path.expanduser()
    if not path.is_dir():
        raise ProblemError(f"FrontierCS checkout {path} is not a directory")
    for algorithmic in (path / "algorithmic", path):
        problems = algorithmic / "problems"
        if problems.is_dir():
            include = algorithmic / "judge" / "include"
            if not (include / TESTLIB).is_file():
                raise ProblemError(
                    f"{include / TESTLIB} is missing: the checkers of FrontierCS checkout "
                    f"{path} are compiled against it"
                )
            return Checkout(path.resolve(), problems.resolve(), include.resolve())
    raise ProblemError(
        f"{path} is not a FrontierCS checkout: it has no algorithmic/problems directory"
    )


def problem_ids(checkout: Checkout) -> list[str]:
    """Every problem directory with a config.yaml, as the authority lists them (numbers in order)."""
    found = [
        entry.name
        for entry in checkout.problems_dir.iterdir()
        if entry.is_dir() and (entry / "config.yaml").is_file()
    ]
    return sorted(found, key=_natural)


def load_checkout(checkout: Checkout) -> Catalog:
    catalog = Catalog(checkout)
    for pid in problem_ids(checkout):
        try:
            catalog.problems[pid] = load_checkout_problem(checkout, pid)
        except ProblemError as exc:
            catalog.failures[pid] = str(exc)
    return catalog


def load_checkout_problem(checkout: Checkout, pid: str) -> Problem:
    """Problem `pid` of the checkout; ProblemError naming the problem and what is wrong."""
    directory = checkout.problems_dir / pid
    if not (directory / "config.yaml").is_file():
        raise ProblemError(f"problem {pid}: {directory / 'config.yaml'} is missing")
    try:
        config = parse((directory / "config.yaml").read_text(encoding="utf-8-sig"))
    except (ConfigError, UnicodeDecodeError) as exc:
        raise ProblemError(f"problem {pid}: config.yaml: {exc}") from None
    mode = Mode(config.type)
    if mode is Mode.INTERACTIVE:
        assert config.interactor is not None
        tool = Tool("interactor", directory / config.interactor, checkout.include_dir)
    else:
        tool = Tool("checker", directory / config.checker, checkout.include_dir)
    if not tool.source.is_file():
        raise ProblemError(f"problem {pid}: its {tool.role} {tool.source.name} is missing")
    statement = directory / "statement.txt"
    if not statement.is_file():
        raise ProblemError(f"problem {pid}: statement.txt is missing")
    if not config.cases:
        raise ProblemError(f"problem {pid}: config.yaml names no test cases")
    testdata = directory / "testdata"
    cases = []
    for files in config.cases:
        source = testdata / files.input
        if not source.is_file():
            raise ProblemError(f"problem {pid}: test input testdata/{files.input} is missing")
        answer = answer_file(testdata, files.output)
        if answer is None:
            raise ProblemError(f"problem {pid}: answer file testdata/{files.output} is missing")
        limits = Limits(files.cpu_seconds, WALL_PER_CPU * files.cpu_seconds, files.memory_bytes)
        cases.append(Case(source, answer, limits))
    return Problem(
        id=pid,
        title=_title(statement, pid),
        directory=directory,
        statement_path=statement,
        cases=cases,
        limits=Limits(config.cpu_seconds, WALL_PER_CPU * config.cpu_seconds, config.memory_bytes),
        tool=tool,
        mode=mode,
        origin="frontiercs",
    )


def _title(statement: Path, pid: str) -> str:
    """The statement's first non-empty line (where FrontierCS statements put their title)."""
    try:
        with statement.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                text = " ".join(line.lstrip("\ufeff").lstrip("#").split())
                if text:
                    return text[:TITLE_CHARS]
    except OSError:
        pass
    return f"FrontierCS problem {pid}"


def _natural(name: str) -> tuple[int, int, str]:
    match = re.fullmatch(r"\d+", name)
    return (0, int(name), "") if match else (1, 0, name)


@dataclass
class ProblemSet:
    """What a judge serves: atoll's own problems and a checkout's, and what did not load.

    Where atoll has its own exact checker for a problem (problem 0), the
    problem keeps it; the checkout's version of it is kept aside in
    `shadowed` (the cross-check compares the two).
    """

    problems: dict[str, Problem]
    checkout: Checkout | None = None
    failures: dict[str, str] = field(default_factory=dict)
    shadowed: dict[str, Problem] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: how many problems, from where, and how many did not load."""
        own = len(self.problems) - (len(self.checkout_problems()) if self.checkout else 0)
        parts = [f"{len(self.problems)} problems ({own} of atoll's"]
        if self.checkout is not None:
            parts.append(f", {len(self.checkout_problems())} from {self.checkout.root}")
            if self.failures:
                parts.append(
                    f"; {len(self.failures)} did not load, `atoll judge problems` says why"
                )
        return "".join(parts) + ")"

    def checkout_problems(self) -> list[Problem]:
        return [p for p in self.problems.values() if p.origin == "frontiercs"]


def assemble(own: dict[str, Problem], checkout_path: Path | None) -> ProblemSet:
    """atoll's problems `own`, and every problem of the checkout at `checkout_path` (if any)."""
    if checkout_path is None:
        return ProblemSet(dict(own))
    catalog = load_checkout(find_checkout(checkout_path))
    problems = {pid: p for pid, p in catalog.problems.items() if pid not in own}
    problems.update(own)
    shadowed = {pid: p for pid, p in catalog.problems.items() if pid in own}
    ordered = dict(sorted(problems.items(), key=lambda item: _natural(item[0])))
    return ProblemSet(ordered, catalog.checkout, catalog.failures, shadowed)
