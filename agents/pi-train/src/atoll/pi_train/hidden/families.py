"""Hidden-variant task families: the mathematics of Euler problems 1 and 2, parameterised.

A policy trained on Euler's own numbers learns a constant; one trained on a
family of hidden variants has to write the function. Each family is a public
contract (name, signature, meaning) and a deterministic generator of
instances: `FAMILIES[name].instance(split, index)` always gives the same
public examples and hidden cases for the same arguments.

Train and eval never share a hidden case, by construction rather than by
luck: every argument tuple belongs to exactly one split, decided by a hash of
the tuple itself, and a split's generator draws only tuples of its own. So no
instance (nor any single case) can be in both, whatever the indices. Euler's
own parameters are in neither, so an Euler evaluation stays untouched by
training on these families.

Hidden cases grow from sizes a brute-force loop finishes (partial credit) to
sizes it cannot finish in the time allowed (limits up to 10^12 for
`multiples`), which only the closed form or a short recurrence walk reaches.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any, Literal, get_args

from atoll.pi_train.hidden import references as hidden_references

Split = Literal["train", "eval"]
SPLITS: tuple[Split, ...] = get_args(Split)
Language = Literal["python", "javascript"]
LANGUAGES: tuple[Language, ...] = get_args(Language)

# Part of every seed: changing how instances are drawn must change this, so that
# a run directory made by the old generator is never silently mixed with the new.
GENERATOR_VERSION = "hidden-variant-v1"
JS_SAFE = 2**53 - 1  # Number.MAX_SAFE_INTEGER


@dataclass(frozen=True)
class Case:
    """One call of `solve`: its positional arguments and the value it must return."""

    args: tuple[Any, ...]
    expected: int


@dataclass(frozen=True)
class Instance:
    """One task: a family's public examples and hidden cases, from (split, index)."""

    family: str
    split: Split
    index: int
    examples: tuple[Case, ...]  # shown in the prompt
    cases: tuple[Case, ...]  # hidden: only the checker's host side ever sees `expected`

    def prompt(self, language: str) -> str:
        """The task as the policy reads it: the contract and the public examples."""
        return FAMILIES[self.family].prompt(self, language)

    def public_json(self) -> dict[str, Any]:
        """Everything a policy may see, per language (no hidden case)."""
        return {
            "family": self.family,
            "split": self.split,
            "index": self.index,
            "generator": GENERATOR_VERSION,
            "prompts": {language: self.prompt(language) for language in LANGUAGES},
        }

    def digest(self) -> str:
        """sha256 of the whole instance, hidden cases included: its identity in a manifest."""
        data = {
            "family": self.family,
            "split": self.split,
            "index": self.index,
            "generator": GENERATOR_VERSION,
            "examples": [_case_json(c) for c in self.examples],
            "cases": [_case_json(c) for c in self.cases],
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _case_json(case: Case) -> dict[str, Any]:
    return {"args": list(case.args), "expected": case.expected}


def canonical_args(args: Sequence[Any]) -> str:
    """One text per argument tuple (lists as lists), the input of `case_split`."""
    return json.dumps(list(args), separators=(",", ":"))


def case_split(family: str, args: Sequence[Any]) -> Split:
    """The one split an argument tuple belongs to: a hash of the tuple, not of any index."""
    digest = hashlib.sha256(f"{GENERATOR_VERSION}/{family}/{canonical_args(args)}".encode())
    return SPLITS[digest.digest()[0] & 1]


def _rng(family: str, split: str, index: int, purpose: str) -> random.Random:
    """A generator seeded from the instance's identity alone (stable across runs and versions)."""
    seed = hashlib.sha256(f"{GENERATOR_VERSION}/{family}/{split}/{index}/{purpose}".encode())
    return random.Random(int.from_bytes(seed.digest()[:16], "big"))


def _between(rng: random.Random, low: int, high: int) -> int:
    """A uniform integer in [low, high] (randrange only: its algorithm is stable)."""
    return low + rng.randrange(high - low + 1)


# --- multiples: Euler 1 -------------------------------------------------------------------


def solve_multiples(factors: Sequence[int], limit: int) -> int:
    """Sum of the naturals below `limit` divisible by at least one factor (inclusion-exclusion)."""
    distinct = sorted(set(factors))
    total = 0
    for mask in range(1, 1 << len(distinct)):
        chosen = [f for bit, f in enumerate(distinct) if mask >> bit & 1]
        step = reduce(math.lcm, chosen)
        count = (limit - 1) // step if limit > 0 else 0
        sign = 1 if len(chosen) % 2 else -1
        total += sign * step * count * (count + 1) // 2
    return total


def _draw_factors(rng: random.Random, count: int, high: int) -> list[int]:
    factors: list[int] = []
    while len(factors) < count:
        factor = _between(rng, 2, high)
        if factor not in factors:
            factors.append(factor)
    return factors


def _multiples_example(rng: random.Random) -> tuple[Any, ...]:
    return (_draw_factors(rng, _between(rng, 1, 3), 9), _between(rng, 10, 60))


def _multiples_case(rng: random.Random, low: int, high: int) -> tuple[Any, ...]:
    return (_draw_factors(rng, _between(rng, 1, 4), 60), _between(rng, low, high))


# --- recurrence: Euler 2 ------------------------------------------------------------------


def solve_recurrence(a: int, b: int, limit: int, modulus: int, residue: int) -> int:
    """Sum of the terms of t0=a, t1=b, t(n)=t(n-1)+t(n-2) that are <= limit and = residue mod modulus.

    For positive a and b every term from t2 on exceeds the two before it, so the
    walk can stop at the first term past `limit` once t0 and t1 are counted.
    """
    total = sum(t for t in (a, b) if t <= limit and t % modulus == residue)
    previous, current = a, b
    while True:
        previous, current = current, previous + current
        if current > limit:
            return total
        if current % modulus == residue:
            total += current


def _recurrence_args(rng: random.Random, low: int, high: int, seed_high: int) -> tuple[Any, ...]:
    modulus = _between(rng, 2, 12)
    return (
        _between(rng, 1, seed_high),
        _between(rng, 1, seed_high),
        _between(rng, low, high),
        modulus,
        rng.randrange(modulus),
    )


def _recurrence_example(rng: random.Random) -> tuple[Any, ...]:
    return _recurrence_args(rng, 20, 200, 5)


def _recurrence_case(rng: random.Random, low: int, high: int) -> tuple[Any, ...]:
    return _recurrence_args(rng, low, high, 100)


# --- the families -------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """A public contract (name, signature, meaning) and its instance generator."""

    name: str
    params: tuple[str, ...]
    python_signature: str
    meaning: str  # what solve returns, in words
    domain: tuple[str, ...]  # the arguments' ranges, one line each
    reference: Callable[..., int]
    draw_example: Callable[[random.Random], tuple[Any, ...]]
    # One hidden case per (low, high) range of `limit`, smallest first, so that a slow
    # submission still earns the cases it finishes before the time runs out.
    draw_case: Callable[[random.Random, int, int], tuple[Any, ...]]
    sizes: tuple[tuple[int, int], ...]
    speed_note: str  # why the largest hidden sizes need more than the obvious loop, if they do
    reserved: tuple[tuple[Any, ...], ...]  # Euler's own arguments: in no split
    # A trusted `solve` per language (atoll.pi_train.hidden.references): the preflight
    # checks each through the sandbox before a run may spend anything.
    solutions: Mapping[str, str]
    examples_per_instance: int = 3

    def instance(self, split: Split, index: int) -> Instance:
        """The instance `index` of `split` (index >= 0); the same for the same arguments."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"an instance index is a whole number >= 0, not {index!r}")
        seen: set[str] = set()
        examples = self._draw(split, index, "examples", seen)
        cases = self._draw(split, index, "cases", seen)
        return Instance(self.name, split, index, examples, cases)

    def _draw(self, split: Split, index: int, purpose: str, seen: set[str]) -> tuple[Case, ...]:
        """Draws, redrawn until each tuple is new, of `split`'s own, and not Euler's."""
        rng = _rng(self.name, split, index, purpose)
        reserved = {canonical_args(a) for a in self.reserved}

        def accept(args: tuple[Any, ...]) -> bool:
            key = canonical_args(args)
            if key in seen or key in reserved or case_split(self.name, args) != split:
                return False
            if self.reference(*args) == 0:  # a constant 0 must earn nothing
                return False
            seen.add(key)
            return True

        drawn: list[tuple[Any, ...]] = []
        if purpose == "examples":
            while len(drawn) < self.examples_per_instance:
                args = self.draw_example(rng)
                if accept(args):
                    drawn.append(args)
        else:
            for low, high in self.sizes:
                args = self.draw_case(rng, low, high)
                while not accept(args):
                    args = self.draw_case(rng, low, high)
                drawn.append(args)
        return tuple(Case(args, self.reference(*args)) for args in drawn)

    def prompt(self, instance: Instance, language: str) -> str:
        if language == "python":
            signature = f"def {self.python_signature}"
            returns = "Return an `int`."
            shown = [f"solve({_py_args(c.args)}) == {c.expected}" for c in instance.examples]
        elif language == "javascript":
            signature = f"function solve({', '.join(self.params)})"
            returns = (
                "Every argument is a Number (arrays hold Numbers). Return a Number while "
                f"the result is at most Number.MAX_SAFE_INTEGER ({JS_SAFE}); a larger "
                "result must be a BigInt or a decimal string (both are always accepted)."
            )
            shown = [f"solve({_js_args(c.args)}) === {c.expected}" for c in instance.examples]
        else:
            raise ValueError(
                f"unknown language {language!r}; choose one of: {', '.join(LANGUAGES)}"
            )
        lines = [
            f"Write the {_LANGUAGE_NAMES[language]} function",
            "",
            f"    {signature}",
            "",
            f"that returns {self.meaning}",
            "",
            *(f"- {line}" for line in self.domain),
            f"- {returns}",
            "",
            "Examples:",
            "",
            *(f"    {line}" for line in shown),
            "",
            "The function is then called on hidden arguments of the same form, up to the "
            "largest sizes above, and all the calls together must finish within a few "
            f"seconds{self.speed_note}. The function may define helpers and use the standard "
            "library; it must not read input, and whatever it prints is ignored.",
        ]
        return "\n".join(lines) + "\n"


_LANGUAGE_NAMES = {"python": "Python", "javascript": "JavaScript"}


def _py_args(args: Sequence[Any]) -> str:
    return ", ".join(repr(a) for a in args)


def _js_args(args: Sequence[Any]) -> str:
    return ", ".join(json.dumps(a) for a in args)


FAMILIES: dict[str, Family] = {
    "multiples": Family(
        name="multiples",
        params=("factors", "limit"),
        python_signature="solve(factors: list[int], limit: int) -> int",
        meaning=(
            "the sum of the natural numbers below `limit` that are divisible by at "
            "least one of `factors`."
        ),
        domain=(
            "`factors`: one to four distinct integers, each at least 2.",
            "`limit`: an integer, 1 <= limit <= 10**12.",
        ),
        reference=solve_multiples,
        speed_note=": a loop over every number below `limit` is far too slow",
        draw_example=_multiples_example,
        draw_case=_multiples_case,
        # Brute force finishes the first two in time, never the rest.
        sizes=(
            (10**3, 10**4),
            (10**5, 10**6),
            (10**8, 10**9),
            (10**9, 10**10),
            (10**10, 10**11),
            (10**11, 10**12),
        ),
        reserved=(([3, 5], 1000),),
        solutions=hidden_references.MULTIPLES,
    ),
    "recurrence": Family(
        name="recurrence",
        params=("a", "b", "limit", "modulus", "residue"),
        python_signature=("solve(a: int, b: int, limit: int, modulus: int, residue: int) -> int"),
        meaning=(
            "the sum of the terms of the sequence t0 = a, t1 = b, t(n) = t(n-1) + t(n-2) "
            "that are <= `limit` and congruent to `residue` modulo `modulus`."
        ),
        domain=(
            "`a`, `b`: integers, 1 <= a, b <= 100 (t0 may exceed t1).",
            f"`limit`: an integer, 20 <= limit <= {JS_SAFE} (2**53 - 1).",
            "`modulus`: an integer, 2 <= modulus <= 12; `residue`: 0 <= residue < modulus.",
        ),
        reference=solve_recurrence,
        speed_note="",
        draw_example=_recurrence_example,
        draw_case=_recurrence_case,
        # The last reach Number.MAX_SAFE_INTEGER: their sums exceed it in JavaScript.
        sizes=(
            (10**2, 10**3),
            (10**5, 10**6),
            (10**9, 10**10),
            (10**12, 10**13),
            (10**14, 10**15),
            (10**15, JS_SAFE),
        ),
        reserved=((1, 2, 4_000_000, 2, 0),),
        solutions=hidden_references.RECURRENCE,
    ),
}
