"""What a FrontierSmith task bundle is made of, before it is rendered into files.

The pipeline fills a `BundleSpec`; `write_bundle` renders it into the fixed
layout of `atoll.checker.layout` and `read_bundle` gives it back. Every
field is checked here, so a bad value fails before anything is written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from atoll.checker import Contract
from atoll.checker import layout as bundle_layout

RECIPE = "frontiersmith"
RECIPE_VERSION = "1"
# "harden": a task of a later round (`--rounds`) made harder than the task it came from.
MUTATIONS = ("objective", "output_constraints", "input_constraints", "harden")
REFERENCE_NOTE = "best sampled feasible solution, not proven optimum"
# Construction checks alone never earn "verified" (see the design): every bundle says so.
VERIFICATION = "unverified"
VERIFICATION_STAGE = "construction"

# Where the image comes from. The default is a public image any Docker (or Harbor cloud
# environment) can pull; OFFLINE_BASE_IMAGE is the one `atoll docker up` builds without a
# registry. Both give python3 >= 3.11 and useradd. See the plugin README.
DEFAULT_BASE_IMAGE = "python:3.12-slim"
OFFLINE_BASE_IMAGE = "atoll/base:bookworm"

BASELINE_FILE = "solution/baseline.py"  # solution/baseline.cpp in a C++ bundle
SOLUTION_FILE = "solution/solution.py"  # solution/solution.cpp in a C++ bundle
BASELINE_SUMMARY_FILE = "solution/baseline-summary.txt"
SOLUTION_SUMMARY_FILE = "solution/summary.txt"

AGENT_USER = "solver"
VERIFIER_USER = "root"
CPUS = 1
MEMORY_MB = 2048

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$")


class BundleError(Exception):
    """A bundle cannot be written or read as asked: the message says what and where."""


Scalar = str | int | float | bool


@dataclass(frozen=True)
class BundleSpec:
    """Everything a task bundle holds, as values.

    `statement` is the public problem in Markdown (input and output format,
    feasibility, score formula, an example); the writer adds the submission
    rules and the runtime limits from `contract.limits`. `solution` is the
    reference program (the best sampled feasible solution). `generator`,
    `scorer` and `feasibility` are the task's private checker modules.
    `seed_lineage` says where the task came from (seed id, seed set, family,
    licence, ...): short keys, scalar values.

    What a search of the task reads, outside the learner's view and covered
    by the bundle hash like everything else: `baseline` (the simple program
    the reference is measured against, `solution/baseline.py`, where a
    Guidance-TTT search starts), the two programs' summaries, and
    `search_contract` (the task's `contract.json`: scorer, language,
    objective, score label and direction, solution contract).
    """

    name: str
    title: str
    summary: str
    statement: str
    solution: str
    generator: str
    scorer: str
    feasibility: str
    contract: Contract
    mutation: str
    seed_lineage: Mapping[str, Scalar] = field(default_factory=dict)
    recipe_version: str = RECIPE_VERSION
    reference_reward: float | None = None
    keywords: tuple[str, ...] = ()
    base_image: str = DEFAULT_BASE_IMAGE
    agent_timeout_sec: float = 3600.0
    baseline: str | None = None
    baseline_summary: str = ""
    solution_summary: str = ""
    search_contract: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        # One form per statement, so that a bundle read back equals the spec it was written from.
        object.__setattr__(self, "statement", self.statement.strip() + "\n")
        object.__setattr__(self, "seed_lineage", dict(self.seed_lineage))
        object.__setattr__(self, "keywords", tuple(self.keywords))
        for label in ("baseline_summary", "solution_summary"):
            object.__setattr__(self, label, " ".join(getattr(self, label).split()))
        if self.search_contract is not None:
            object.__setattr__(self, "search_contract", dict(self.search_contract))
            for key, value in self.search_contract.items():
                if not _KEY.match(key) or not isinstance(value, str) or not value.strip():
                    raise BundleError(
                        f"search contract field {key!r} must be a non-empty string under a "
                        "short name"
                    )
        if not _NAME.match(self.name):
            raise BundleError(
                f"bundle name {self.name!r} must be 1-63 lowercase letters, digits, '-' or '_'"
            )
        for label, text in (("title", self.title), ("summary", self.summary)):
            if not text.strip() or "\n" in text:
                raise BundleError(f"the bundle's {label} must be one non-empty line")
        if not self.statement.strip():
            raise BundleError("the bundle's statement is empty")
        if self.mutation not in MUTATIONS:
            raise BundleError(f"mutation {self.mutation!r} is not one of {', '.join(MUTATIONS)}")
        for label, source in self.sources().items():
            if not label.endswith(".py"):  # a C++ program: its grading compiles it
                if not source.strip():
                    raise BundleError(f"{label} is empty")
                continue
            try:
                compile(source, label, "exec", dont_inherit=True)
            except SyntaxError as exc:
                raise BundleError(f"{label} does not parse: {exc}") from None
        for key, scalar in self.seed_lineage.items():
            if not _KEY.match(key):
                raise BundleError(f"seed_lineage key {key!r} must be letters, digits, '-' or '_'")
            if not isinstance(scalar, Scalar) or (
                isinstance(scalar, float) and not math.isfinite(scalar)
            ):
                raise BundleError(f"seed_lineage {key} must be a string, number or bool")
        if self.reference_reward is not None and not 0.0 <= self.reference_reward <= 1.0:
            raise BundleError("reference_reward must be in [0, 1]")
        if not _IMAGE.match(self.base_image):
            raise BundleError(f"base image {self.base_image!r} is not an image reference")
        if not self.agent_timeout_sec > 0:
            raise BundleError("agent_timeout_sec must be positive")
        if any(not _KEY.match(k) for k in self.keywords):
            raise BundleError("keywords must be letters, digits, '-' or '_'")

    @property
    def language(self) -> str:
        """The language of the solution programs (`python` or `cpp`), as the contract says."""
        return self.contract.language

    def program_path(self, python_path: str) -> str:
        """Where a program the Python layout keeps at `python_path` is in this bundle."""
        return (
            bundle_layout.CPP_NAMES.get(python_path, python_path)
            if self.language == "cpp"
            else python_path
        )

    def sources(self) -> dict[str, str]:
        """The programs (four, five with a baseline) by their file path in the bundle."""
        programs = {
            self.program_path(SOLUTION_FILE): self.solution,
            "tests/generator.py": self.generator,
            "tests/scorer.py": self.scorer,
            "tests/feasibility.py": self.feasibility,
        }
        if self.baseline is not None:
            programs[self.program_path(BASELINE_FILE)] = self.baseline
        return programs

    @property
    def task_name(self) -> str:
        """The Harbor package name in task.toml's [task] section."""
        return f"{RECIPE}/{self.name}"


@dataclass(frozen=True)
class BundleInfo:
    """What `write_bundle` left on disk."""

    path: str
    bundle_hash: str
    files: tuple[str, ...]
    resumed: bool = False  # an identical bundle was already there and was kept
