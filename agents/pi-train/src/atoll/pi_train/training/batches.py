"""The order of a run's groups: every batch draws across families and languages, from a seed.

Taken one family at a time, an iteration's update would pull the whole
policy toward that family, and the next iteration toward another; a curve
would then show which family was trained last, not what was learnt. So the
groups are dealt slot by slot, batch by batch (`per_batch` slots each):

- the family is the one furthest below its share of the slots dealt so far
  (equal shares), then the one this batch has used least;
- the language likewise (shares by `weights`: shell's Julia 3x), then the one
  this batch has used least, then the one this family has met least;
- what is still tied is drawn by a `random.Random` seeded from `seed` alone
  (`randrange` only: its algorithm is stable across Python versions).

With equal weights every batch of B groups therefore holds min(B, families)
families and min(B, languages) languages, every family meets every language,
and no share is ever more than one slot off. The deal of slot i depends only
on the slots before it, so a longer run starts with a shorter run's groups,
and the same seed gives the same order (the manifest records it, so a resumed
run deals the same groups).
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ORDER = "mixed-v1"  # part of the manifest's record: another dealing rule is another order


@dataclass(frozen=True)
class Slot:
    """One group of the run: a family, a language, and how many slots came before it with
    the same pair (`pair_index`) and with the same family (`family_index`): which of the
    family's instances it takes (hidden meets each instance in every language; shell
    meets each once)."""

    family: str
    language: str
    pair_index: int
    family_index: int


def _rng(seed: int) -> random.Random:
    digest = hashlib.sha256(f"atoll-pi-train/batches/{ORDER}/{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def _pick(
    options: Sequence[str],
    weights: Mapping[str, int],
    dealt: Counter[str],
    in_batch: Counter[str],
    met: Mapping[str, int],
    rng: random.Random,
) -> str:
    """The option furthest below its weighted share, then least used in this batch, then
    least met (`met`), ties drawn. Shares compare as integers: w_o * (n + 1) - W * count_o."""
    n = sum(dealt.values())
    total = sum(weights[o] for o in options)

    def key(option: str) -> tuple[int, int, int]:
        deficit = weights[option] * (n + 1) - total * dealt[option]
        return (-deficit, in_batch[option], met.get(option, 0))

    best = min(key(o) for o in options)
    tied = [o for o in options if key(o) == best]
    return tied[rng.randrange(len(tied))]


def mix(
    families: Sequence[str],
    languages: Sequence[str],
    per_batch: int,
    count: int,
    seed: int,
    weights: Mapping[str, int] | None = None,
) -> list[Slot]:
    """`count` slots, batch after batch of `per_batch`, dealt as the module says."""
    if not families or not languages:
        raise ValueError("a mixed order needs at least one family and one language")
    if per_batch < 1:
        raise ValueError(f"per_batch must be at least 1 (got {per_batch})")
    lang_weights = {lang: int((weights or {}).get(lang, 1)) for lang in languages}
    if min(lang_weights.values()) < 1:
        raise ValueError(f"language weights must be at least 1 (got {lang_weights})")
    fam_weights = dict.fromkeys(families, 1)
    rng = _rng(seed)
    fam_dealt: Counter[str] = Counter()
    lang_dealt: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    slots: list[Slot] = []
    while len(slots) < count:
        fam_batch: Counter[str] = Counter()
        lang_batch: Counter[str] = Counter()
        for _ in range(min(per_batch, count - len(slots))):
            family = _pick(families, fam_weights, fam_dealt, fam_batch, {}, rng)
            met = {lang: pairs[(family, lang)] for lang in languages}
            language = _pick(languages, lang_weights, lang_dealt, lang_batch, met, rng)
            slots.append(Slot(family, language, pairs[(family, language)], fam_dealt[family]))
            for counter, value in ((fam_dealt, family), (fam_batch, family)):
                counter[value] += 1
            for counter, value in ((lang_dealt, language), (lang_batch, language)):
                counter[value] += 1
            pairs[(family, language)] += 1
    return slots


def record(
    seed: int,
    per_batch: int,
    families: Sequence[str],
    languages: Sequence[str],
    weights: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The manifest's `batches`: what reproduces the order (a resume with another is refused)."""
    return {
        "order": ORDER,
        "seed": seed,
        "groups_per_batch": per_batch,
        "families": list(families),
        "languages": list(languages),
        "weights": {lang: int((weights or {}).get(lang, 1)) for lang in languages},
    }
