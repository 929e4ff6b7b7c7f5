"""The seeded order of a run's groups: every batch across families and languages (fast)."""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from math import comb

import pytest

from atoll.pi_train.hidden import sets as hidden_sets
from atoll.pi_train.hidden.families import FAMILIES
from atoll.pi_train.managed import pass_at_k
from atoll.pi_train.shell import train as shell_train
from atoll.pi_train.shell.families import FAMILIES as SHELL_FAMILIES
from atoll.pi_train.training import batches
from atoll.pi_train.training.tasks import TaskSetError


def _batches(slots: list[batches.Slot], per: int) -> list[list[batches.Slot]]:
    return [slots[i : i + per] for i in range(0, len(slots), per)]


@pytest.mark.parametrize(
    ("families", "languages", "per"),
    [(2, 2, 2), (2, 2, 3), (2, 2, 4), (4, 2, 2), (4, 2, 3), (4, 3, 2), (4, 3, 5), (2, 3, 8)],
)
@pytest.mark.parametrize("seed", [0, 1, 7, 123456789])
def test_every_batch_mixes_families_and_languages(
    families: int, languages: int, per: int, seed: int
) -> None:
    names = [f"family{i}" for i in range(families)]
    langs = [f"lang{i}" for i in range(languages)]
    slots = batches.mix(names, langs, per, per * 40, seed)
    for batch in _batches(slots, per):
        assert len({s.family for s in batch}) == min(per, families), batch
        assert len({s.language for s in batch}) == min(per, languages), batch
    # No share is more than one slot off, and every family meets every language.
    by_family = Counter(s.family for s in slots)
    by_language = Counter(s.language for s in slots)
    assert max(by_family.values()) - min(by_family.values()) <= 1
    assert max(by_language.values()) - min(by_language.values()) <= 1
    assert {(s.family, s.language) for s in slots} == {(f, g) for f in names for g in langs}
    # Each (family, language) pair counts its own instances: no group is dealt twice.
    assert len({(s.family, s.language, s.pair_index) for s in slots}) == len(slots)
    assert len({(s.family, s.family_index) for s in slots}) == len(slots)


def test_the_order_is_reproducible_from_its_seed_and_a_longer_run_extends_it() -> None:
    families, languages = sorted(FAMILIES), ("python", "javascript")
    one = batches.mix(families, languages, 2, 24, seed=5)
    assert batches.mix(families, languages, 2, 24, seed=5) == one
    assert batches.mix(families, languages, 2, 60, seed=5)[:24] == one
    # Another seed deals another order of the same kind.
    others = [batches.mix(families, languages, 2, 24, seed=s) for s in range(1, 6)]
    assert any(other != one for other in others)
    # The fixed order of old (one family per batch) is not what a batch holds any more.
    assert all(len({s.family for s in batch}) == 2 for batch in _batches(one, 2))


def test_hidden_training_groups_mix_every_batch_and_stay_in_the_train_namespace() -> None:
    languages = ("python", "javascript")
    tasks = hidden_sets.train_tasks(languages, 2, 20, seed=3)
    assert tasks == hidden_sets.train_tasks(languages, 2, 20, seed=3)
    assert [t.id for t in hidden_sets.train_tasks(languages, 2, 8, seed=3)] == [
        t.id for t in tasks[:8]
    ]
    for batch in [tasks[i : i + 2] for i in range(0, 20, 2)]:
        assert {t.instance.family for t in batch} == set(FAMILIES)
        assert {t.language for t in batch} == set(languages)
    assert all(t.instance.split == "train" and "/train/" in t.id for t in tasks)
    assert len({t.id for t in tasks}) == 20
    # An instance is met in every language (the hidden cases are checked per language).
    first = {t.language for t in tasks if t.id.startswith("multiples/train/0/")}
    assert first == set(languages)
    held_out = hidden_sets.eval_tasks(languages, 2)
    assert len(held_out) == 2 * len(FAMILIES) * 2
    assert all(t.instance.split == "eval" for t in held_out)
    assert not {t.id for t in tasks} & {t.id for t in held_out}
    assert not {t.instance.digest() for t in tasks} & {t.instance.digest() for t in held_out}
    with pytest.raises(TaskSetError, match="julia"):
        hidden_sets.train_tasks(("python", "julia"), 2, 4, seed=0)


def test_shell_batches_mix_and_keep_julias_weight() -> None:
    tasks = shell_train.train_tasks(("python", "javascript"), 24, per_batch=3, seed=9)
    for batch in [tasks[i : i + 3] for i in range(0, 24, 3)]:
        assert len({t.instance.family for t in batch}) == 3
        assert {t.language for t in batch} == {"python", "javascript"}
    # A shell instance is met once: its answer is a constant a policy could otherwise learn.
    assert len({(t.instance.family, t.instance.index) for t in tasks}) == 24
    weighted = shell_train.train_tasks(("julia", "python", "javascript"), 50, 5, seed=1)
    assert Counter(t.language for t in weighted) == {"julia": 30, "python": 10, "javascript": 10}
    for batch in [weighted[i : i + 5] for i in range(0, 50, 5)]:
        assert len({t.instance.family for t in batch}) == len(SHELL_FAMILIES)
        assert Counter(t.language for t in batch) == {"julia": 3, "python": 1, "javascript": 1}


def test_the_manifest_record_names_what_reproduces_the_order() -> None:
    record = hidden_sets.batches_record(("python", "javascript"), 2, 11)
    assert record == {
        "order": batches.ORDER,
        "seed": 11,
        "groups_per_batch": 2,
        "families": sorted(FAMILIES),
        "languages": ["python", "javascript"],
        "weights": {"python": 1, "javascript": 1},
    }


def test_bad_orders_are_refused() -> None:
    with pytest.raises(ValueError, match="per_batch"):
        batches.mix(["a"], ["x"], 0, 3, 0)
    with pytest.raises(ValueError, match="one family"):
        batches.mix([], ["x"], 2, 3, 0)
    with pytest.raises(ValueError, match="weights"):
        batches.mix(["a"], ["x"], 2, 3, 0, {"x": 0})


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8])
def test_pass_at_k_is_the_chance_that_k_of_the_n_samples_hold_a_solved_one(n: int) -> None:
    assert pass_at_k.ks(n) == sorted({1, n, *(2**i for i in range(4) if 2**i < n)})
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        metrics = pass_at_k.group_metrics(outcomes)
        for k in pass_at_k.ks(n):
            draws = list(combinations(outcomes, k))
            expected = sum(any(d) for d in draws) / comb(n, k)
            assert metrics[f"pass@{k}"] == pytest.approx(expected)
    assert pass_at_k.solved([{"all_cases": 0.0}, {"all_cases": 1.0}], "all_cases")
    assert not pass_at_k.solved([{"all_cases": 1.0}, {"all_cases": 0.0}], "all_cases")
    assert not pass_at_k.solved([{"turns": 2.0}], "conjunction")
    with pytest.raises(ValueError, match="pass@3"):
        pass_at_k.estimate(2, 1, 3)
