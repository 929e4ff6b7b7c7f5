"""The promotion rule file: the numbers a checkpoint must beat, fixed before sampling.

A small JSON (`.json`) or TOML (`.toml`) document:

    {"format": 1,
     "transfer": {"min_delta": 0.1, "alpha": 0.05},
     "euler": {"min_delta": 0.0, "alpha": 0.5}}

Each section holds for its evaluation when the candidate's overall pass
fraction minus the baseline's is at least `min_delta` (in [-1, 1]) and the
one-sided Fisher exact test (candidate > baseline) gives p <= `alpha` (in
(0, 1)). The checkpoint is promoted only when both hold. Every field is
required and no other is allowed, so a typo cannot loosen a rule unseen.
Its hash is the sha256 of the canonical JSON of the checked rule, so the
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

FORMAT = 1
SECTIONS = ("transfer", "euler")


class RuleError(ValueError):
    """A rule file that cannot be used; the message is one line naming the file and field."""


@dataclass(frozen=True)
class Threshold:
    min_delta: float
    alpha: float

    def holds(self, delta: float | None, p_greater: float | None) -> bool:
        return (
            delta is not None
            and p_greater is not None
            and delta >= self.min_delta
            and p_greater <= self.alpha
        )

    def accept_flag(self) -> str:
        """The same threshold as `atoll euler transfer run --accept` takes it."""
        return f"min_delta={self.min_delta!r},alpha={self.alpha!r}"


@dataclass(frozen=True)
class Rule:
    transfer: Threshold
    euler: Threshold

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
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
    if not 0.0 < alpha < 1.0:
        raise RuleError(f"{where}.alpha must lie in (0, 1) (got {alpha})")
    return Threshold(min_delta, alpha)


def parse(data: Any, source: str = "rule") -> Rule:
    """A checked rule from its decoded document; RuleError (one line) otherwise."""
    if not isinstance(data, dict):
        raise RuleError(f"{source}: the rule must be an object")
    unknown = sorted(set(data) - {"format", *SECTIONS})
    if unknown:
        raise RuleError(f"{source}: unknown field {unknown[0]!r} (format, transfer, euler)")
    if data.get("format") != FORMAT:
        raise RuleError(f"{source}: format must be {FORMAT} (got {data.get('format')!r})")
    for name in SECTIONS:
        if name not in data:
            raise RuleError(f"{source}: the {name!r} section is missing")
    return Rule(
        transfer=_threshold(data["transfer"], f"{source}: transfer"),
        euler=_threshold(data["euler"], f"{source}: euler"),
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
