"""The promotion rule file: the numbers a checkpoint must beat, fixed before sampling.

A small JSON (`.json`) or TOML (`.toml`) document:

    {"format": 2,
     "checkpoints": 3,
     "transfer": {"min_delta": -0.05, "alpha": 1},
     "euler": {"min_delta": 0.1, "alpha": 0.05}}

Each section holds for its evaluation when the candidate's mean per-problem
pass fraction minus the baseline's (per transfer task for `transfer`) is at
least `min_delta` (in [-1, 1]) and the one-sided exact paired test over
problems (atoll.pi_train.promotion.paired_test), Holm-adjusted for `checkpoints`
comparisons, gives p <= `alpha` (in (0, 1]; 1 asks for no evidence beyond
the delta, a "not worse than" guard). `checkpoints` (at least 1) is how many
promotions the run may make under the rule: Holm's m, fixed before the
first. The checkpoint is promoted only when both sections hold. Every field
is required and no other is allowed, so a typo cannot loosen a rule unseen.

Format 1 rules decided by one-sided Fisher tests on attempts pooled across
problems, which treats correlated attempts as independent; they are refused
with a line saying how to write format 2.

The hash is the sha256 of the canonical JSON of the checked rule, so the
same rule in JSON or TOML, spaced any way, has one hash.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.durable import canonical_json

FORMAT = 2
SECTIONS = ("transfer", "euler")
FIELDS = ("format", "checkpoints", *SECTIONS)


class RuleError(ValueError):
    """A rule file that cannot be used; the message is one line naming the file and field."""


@dataclass(frozen=True)
class Threshold:
    min_delta: float
    alpha: float

    def holds(self, delta: float | None, p_adjusted: float | None) -> bool:
        """The delta clears `min_delta` and the (Holm-adjusted) paired p-value is <= `alpha`."""
        return (
            delta is not None
            and p_adjusted is not None
            and delta >= self.min_delta
            and p_adjusted <= self.alpha
        )


@dataclass(frozen=True)
class Rule:
    transfer: Threshold
    euler: Threshold
    checkpoints: int = 1  # promotions the run may make under this rule: Holm's m

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "checkpoints": self.checkpoints,
            **{
                name: {"min_delta": t.min_delta, "alpha": t.alpha}
                for name, t in (("transfer", self.transfer), ("euler", self.euler))
            },
        }

    def sha256(self) -> str:
        return hashlib.sha256(canonical_json(self.to_json())).hexdigest()


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RuleError(f"{where} must be a number (got {value!r})")
    return float(value)


def _threshold(data: Any, where: str) -> Threshold:
    if not isinstance(data, dict):
        raise RuleError(f"{where} must be a table with min_delta and alpha")
    unknown = sorted(set(data) - {"min_delta", "alpha"})
    if unknown:
        raise RuleError(f"{where}: unknown field {unknown[0]!r} (only min_delta and alpha)")
    for key in ("min_delta", "alpha"):
        if key not in data:
            raise RuleError(f"{where}.{key} is missing")
    min_delta = _number(data["min_delta"], f"{where}.min_delta")
    alpha = _number(data["alpha"], f"{where}.alpha")
    if not -1.0 <= min_delta <= 1.0:
        raise RuleError(f"{where}.min_delta must lie in [-1, 1] (got {min_delta})")
    if not 0.0 < alpha <= 1.0:
        raise RuleError(f"{where}.alpha must lie in (0, 1] (got {alpha})")
    return Threshold(min_delta, alpha)


def parse(data: Any, source: str = "rule") -> Rule:
    """A checked rule from its decoded document; RuleError (one line) otherwise."""
    if not isinstance(data, dict):
        raise RuleError(f"{source}: the rule must be an object")
    if data.get("format") == 1:
        raise RuleError(
            f"{source}: format 1 decides by Fisher's test on attempts pooled across problems, "
            "which counts correlated attempts as independent; write format 2 (add "
            '"checkpoints": N, the promotions this run may make; the test is then per problem)'
        )
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise RuleError(f"{source}: unknown field {unknown[0]!r} ({', '.join(FIELDS)})")
    if data.get("format") != FORMAT:
        raise RuleError(f"{source}: format must be {FORMAT} (got {data.get('format')!r})")
    for name in SECTIONS:
        if name not in data:
            raise RuleError(f"{source}: the {name!r} section is missing")
    if "checkpoints" not in data:
        raise RuleError(
            f"{source}: the 'checkpoints' field is missing (how many promotions the run may "
            "make under this rule)"
        )
    checkpoints = data["checkpoints"]
    if isinstance(checkpoints, bool) or not isinstance(checkpoints, int) or checkpoints < 1:
        raise RuleError(
            f"{source}: checkpoints must be a whole number, at least 1 (got {checkpoints!r})"
        )
    return Rule(
        transfer=_threshold(data["transfer"], f"{source}: transfer"),
        euler=_threshold(data["euler"], f"{source}: euler"),
        checkpoints=checkpoints,
    )


def load(path: Path) -> Rule:
    """The rule in `path` (.json or .toml), checked."""
    if path.suffix not in (".json", ".toml"):
        raise RuleError(f"{path}: a rule file is .json or .toml")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RuleError(f"{path}: cannot read the rule file ({exc.strerror})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8")) if path.suffix == ".toml" else json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RuleError(f"{path}: not valid {path.suffix[1:].upper()}: {first}") from None
    return parse(data, str(path))
