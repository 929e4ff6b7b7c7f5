"""A run's configuration and its fingerprint.

The fingerprint binds everything that decides what a run produces: the
settings below, the seeds' exact content, and the identity of the installed
code that turns them into tasks: the source hash of every atoll
distribution (the pipeline, the grader it ships, and atoll.core's ledger,
sandbox and atoll-local environment the trials run in), the Harbor version
and the Python version. Changed code or a changed seed file means a new run
identity, so a resume can never mix two pipelines' outputs. What does not change the result (how many
workers, where the key lives) stays out of it; the money limit lives in the
ledger, where it can only be changed explicitly.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import pkgutil
import platform
from dataclasses import asdict, dataclass, fields
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from atoll.core.durable import canonical_json
from atoll.core.llm import Endpoint, Prices
from atoll.frontiersmith.seeds import Seed

RECIPE = "frontiersmith"
RECIPE_VERSION = "1"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_COMPLETION_TOKENS = 16384
# Settings that do not change what a run produces.
NOT_FINGERPRINTED = frozenset(
    {"workers", "api_key_env", "budget_micro", "worker_price", "environment_choice"}
)
NAMESPACE = "atoll"


# The languages the tasks' programs may be written in (the task's own files stay Python).
LANGUAGES = ("python", "cpp")


class ConfigError(ValueError):
    """Settings that cannot make a run; the message names the flag to fix."""


@dataclass(frozen=True)
class RunConfig:
    seeds: str
    target: int
    budget_micro: int
    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = "OPENAI_API_KEY"
    price_in: str = ""
    price_out: str = ""
    workers: int = 1
    environment: str = "atoll-local"
    environment_choice: str = ""  # why the trials run there, when the run chose it
    max_candidates: int = 0  # 0: every seed
    solutions: int = 3
    max_repairs: int = 2
    min_divergence: float = 0.3
    # execution diversity, as repo2rlenv measures it: a pair of feasible samples is distinct when
    # their mean per-case score distance is at least min_score_spread; at least
    # min_execution_diversity of the pairs must be
    min_score_spread: float = 0.001
    min_execution_diversity: float = 0.3
    rollout_tasks: int = 0
    rollout_agent: str = "pi-docker"  # a Harbor trial of the finished task with this agent
    rollout_timeout: float = 1800.0  # the rollout agent's time limit, in seconds
    base_image: str = ""  # "" until chosen: the bundle default, python:3.12-slim
    max_completion_tokens: int = DEFAULT_MAX_COMPLETION_TOKENS
    worker_price: str = ""  # USD per hour of trial time, for the report's worker cost ("": unknown)
    language: str = "python"  # what the baseline, samples and references are written in
    # the paper's loop: accepted tasks seed the next round (1: a single round, as before)
    rounds: int = 1
    population: int = 0  # the most accepted tasks kept per family (root seed); 0: no cap

    def validate(self) -> None:
        checks = [
            (self.target >= 1, "--target must be at least 1"),
            (self.budget_micro > 0, "--budget must be above zero"),
            (bool(self.model.strip()), "--model must name a model"),
            (self.workers >= 1, "--workers must be at least 1"),
            (self.max_candidates >= 0, "--max-candidates must not be negative"),
            (
                self.solutions >= 2,
                "--solutions must be at least 2 (two feasible samples are needed)",
            ),
            (self.max_repairs >= 0, "--max-repairs must not be negative"),
            (
                self.language in LANGUAGES,
                f"--language must be one of {', '.join(LANGUAGES)}, not {self.language!r}",
            ),
            (0.0 <= self.min_divergence <= 1.0, "--min-divergence must be between 0 and 1"),
            (0.0 <= self.min_score_spread <= 1.0, "--min-score-spread must be between 0 and 1"),
            (
                0.0 <= self.min_execution_diversity <= 1.0,
                "--min-execution-diversity must be between 0 and 1",
            ),
            (self.rounds >= 1, "--rounds must be at least 1"),
            (
                self.population >= 0,
                "--population must be at least 1 (leave it out to keep every task)",
            ),
            (self.rollout_tasks >= 0, "--rollout-tasks must not be negative"),
            (self.rollout_timeout > 0, "--rollout-timeout must be above zero"),
            (self.max_completion_tokens >= 256, "--max-completion-tokens must be at least 256"),
            (
                self.base_url.startswith(("http://", "https://")),
                "--base-url must be an http(s) URL",
            ),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        self.prices()
        self.worker_usd_per_hour()

    def worker_usd_per_hour(self) -> Decimal | None:
        """The price of an hour of trial time; None when none was given (the cost is unknown)."""
        if self.worker_price == "":
            return None
        try:
            price = Decimal(self.worker_price)
        except ArithmeticError:
            price = Decimal(-1)
        if not price.is_finite() or price < 0:
            raise ConfigError(
                f"--worker-price {self.worker_price!r} is not a price in USD per hour"
            )
        return price

    def prices(self) -> Prices:
        try:
            return Prices.of(self.price_in, self.price_out)
        except (ValueError, ArithmeticError):
            raise ConfigError(
                "--price-in and --price-out must be non-negative dollars per million tokens"
            ) from None

    def endpoint(self) -> Endpoint:
        return Endpoint(
            base_url=self.base_url.rstrip("/"),
            model=self.model,
            api_key_env=self.api_key_env,
            max_completion_tokens=self.max_completion_tokens,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def fingerprinted(self) -> dict[str, Any]:
        return {k: v for k, v in self.to_json().items() if k not in NOT_FINGERPRINTED}


def fingerprint(config: RunConfig, seeds: list[Seed], code_hash: str) -> str:
    """sha256 over the settings that matter, the seeds' content and the code's hash."""
    payload = {
        "recipe": RECIPE,
        "recipe_version": RECIPE_VERSION,
        "config": config.fingerprinted(),
        "seeds": [s.to_json() for s in seeds],
        "code": code_hash,
    }
    return hashlib.sha256(canonical_json(payload)).hexdigest()


@cache
def code_identity() -> dict[str, Any]:
    """The installed code a run depends on: every atoll package's source hash, Harbor, Python."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        harbor = version("harbor")
    except PackageNotFoundError:
        harbor = "not installed"
    return {
        "packages": {name: _source_hash(name) for name in atoll_packages()},
        "harbor": harbor,
        "python": platform.python_version(),
    }


@cache
def code_hash() -> str:
    """sha256 over `code_identity()`: what a run's fingerprint binds of the installed code."""
    return hashlib.sha256(canonical_json(code_identity())).hexdigest()


def atoll_packages() -> list[str]:
    """Every package installed under the `atoll` namespace (one per distribution)."""
    spec = importlib.util.find_spec(NAMESPACE)
    if spec is None or not spec.submodule_search_locations:
        return []
    found = {
        f"{NAMESPACE}.{info.name}"
        for info in pkgutil.iter_modules(list(spec.submodule_search_locations))
        if info.ispkg
    }
    return sorted(found)


def _source_hash(package: str) -> str:
    """sha256 over a package's installed source files (path + content)."""
    digest = hashlib.sha256()
    for root in _package_dirs(package):
        for path in sorted(p for p in root.rglob("*") if _is_source(p)):
            digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _package_dirs(package: str) -> list[Path]:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def _is_source(path: Path) -> bool:
    return path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"


def listed_prices(model: str) -> tuple[Decimal, Decimal] | None:
    """A model's prices in $/Mtok from the table bundled with litellm (no network, no import)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    table = Path(next(iter(spec.submodule_search_locations)))
    table /= "model_prices_and_context_window_backup.json"
    try:
        entries = json.loads(table.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for name in (model, model.split("/", 1)[-1]):
        entry = entries.get(name)
        if isinstance(entry, dict) and "input_cost_per_token" in entry:
            try:
                per_in = Decimal(str(entry["input_cost_per_token"])) * 1_000_000
                per_out = Decimal(str(entry["output_cost_per_token"])) * 1_000_000
            except (KeyError, ArithmeticError, ValueError):
                return None
            return per_in.normalize(), per_out.normalize()
    return None
