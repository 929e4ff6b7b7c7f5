"""The hidden-variant families: their contract, deterministic instances, disjoint splits."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from atoll.pi_train.hidden.families import (
    FAMILIES,
    JS_SAFE,
    LANGUAGES,
    SPLITS,
    canonical_args,
    case_split,
    solve_multiples,
    solve_recurrence,
)

INDICES = range(300)


def brute_multiples(factors: list[int], limit: int) -> int:
    return sum(n for n in range(1, limit) if any(n % f == 0 for f in factors))


def brute_recurrence(a: int, b: int, limit: int, modulus: int, residue: int) -> int:
    terms = [a, b]
    for _ in range(100):  # past any limit of these tests (the terms grow like Fibonacci's)
        terms.append(terms[-1] + terms[-2])
    return sum(t for t in terms if t <= limit and t % modulus == residue)


def test_the_families_and_their_signatures_are_the_public_contract() -> None:
    assert set(FAMILIES) == {"multiples", "recurrence"}
    assert FAMILIES["multiples"].params == ("factors", "limit")
    assert FAMILIES["recurrence"].params == ("a", "b", "limit", "modulus", "residue")
    assert LANGUAGES == ("python", "javascript")
    assert SPLITS == ("train", "eval")


def test_the_reference_solutions_meet_euler_1_and_2() -> None:
    assert solve_multiples([3, 5], 10) == 23
    assert solve_multiples([3, 5], 1000) == 233168
    assert solve_recurrence(1, 2, 4_000_000, 2, 0) == 4613732


def test_the_reference_solutions_agree_with_brute_force() -> None:
    rng = random.Random(7)
    for _ in range(300):
        factors = [rng.randrange(1, 30) for _ in range(rng.randrange(1, 5))]
        limit = rng.randrange(0, 600)
        assert solve_multiples(factors, limit) == brute_multiples(factors, limit), (factors, limit)
        modulus = rng.randrange(2, 13)
        args = (rng.randrange(1, 101), rng.randrange(1, 101), rng.randrange(1, 10**6), modulus)
        args += (rng.randrange(modulus),)
        assert solve_recurrence(*args) == brute_recurrence(*args), args


@pytest.mark.slow
def test_no_instance_and_no_case_is_in_both_splits() -> None:
    for family in FAMILIES.values():
        seen: dict[str, set[str]] = {split: set() for split in SPLITS}
        instances: dict[str, set[str]] = {split: set() for split in SPLITS}
        for split in SPLITS:
            for index in INDICES:
                instance = family.instance(split, index)
                instances[split].add(json.dumps([canonical_args(c.args) for c in instance.cases]))
                for case in (*instance.examples, *instance.cases):
                    assert case_split(family.name, case.args) == split
                    seen[split].add(canonical_args(case.args))
        assert not instances["train"] & instances["eval"]
        assert not seen["train"] & seen["eval"]
        assert len(instances["train"]) == len(INDICES)  # distinct indices, distinct instances


def test_every_argument_tuple_belongs_to_exactly_one_split() -> None:
    rng = random.Random(11)
    counts = dict.fromkeys(SPLITS, 0)
    for _ in range(400):
        args = ([rng.randrange(2, 60)], rng.randrange(10**3, 10**12))
        counts[case_split("multiples", args)] += 1
    assert all(100 < n < 300 for n in counts.values())  # both halves are well populated


def test_instances_are_deterministic_across_processes() -> None:
    script = (
        "import json; from atoll.pi_train.hidden.families import FAMILIES; "
        "print(json.dumps([FAMILIES[f].instance(s, i).digest() "
        "for f in sorted(FAMILIES) for s in ('train', 'eval') for i in (0, 1, 97)]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    here = [
        FAMILIES[f].instance(s, i).digest()
        for f in sorted(FAMILIES)
        for s in ("train", "eval")
        for i in (0, 1, 97)
    ]
    assert json.loads(done.stdout) == here
    assert len(set(here)) == len(here)


def test_hidden_sizes_defeat_brute_force_and_need_big_integers_in_javascript() -> None:
    for index in range(20):
        multiples = FAMILIES["multiples"].instance("train", index).cases
        limits = [c.args[1] for c in multiples]
        assert limits == sorted(limits)  # smallest first: a slow solver keeps the small ones
        assert limits[0] <= 10**4 and 10**11 <= limits[-1] <= 10**12
        assert multiples[-1].expected > JS_SAFE
        recurrence = FAMILIES["recurrence"].instance("eval", index).cases
        assert all(c.args[2] <= JS_SAFE for c in recurrence)  # exact Numbers in JavaScript
        for family in FAMILIES.values():
            for case in family.instance("eval", index).cases:
                assert case.expected != 0  # a constant 0 earns nothing


def test_eulers_own_parameters_are_in_no_split() -> None:
    euler = {canonical_args(([3, 5], 1000)), canonical_args((1, 2, 4_000_000, 2, 0))}
    for family in FAMILIES.values():
        for split in SPLITS:
            for index in range(100):
                instance = family.instance(split, index)
                drawn = {canonical_args(c.args) for c in (*instance.examples, *instance.cases)}
                assert not drawn & euler


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_prompt_states_the_contract_and_examples_but_no_hidden_value(
    family: str, language: str
) -> None:
    instance = FAMILIES[family].instance("train", 3)
    prompt = instance.prompt(language)
    keyword = "def solve(" if language == "python" else "function solve("
    assert keyword in prompt
    for example in instance.examples:
        assert str(example.expected) in prompt
    for case in instance.cases:
        assert str(case.expected) not in prompt
    public = json.dumps(instance.public_json())
    assert not any(str(case.expected) in public for case in instance.cases)


def test_bad_arguments_are_clear_errors() -> None:
    family = FAMILIES["multiples"]
    with pytest.raises(ValueError, match="unknown split 'test'"):
        family.instance("test", 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="whole number >= 0"):
        family.instance("train", -1)
    with pytest.raises(ValueError, match="unknown language 'julia'"):
        family.instance("train", 0).prompt("julia")
