"""`atoll pi train hidden`'s two task sets: the mixed training groups and the held-out ones.

Training draws from the families' `train` namespace in the seeded mixed order
(atoll.pi_train.training.batches): every batch across families and languages. The
held-out set is the `eval` namespace, balanced: `per_cell` instances of every
family in every language. The namespaces share no hidden case by
construction (atoll.pi_train.hidden.families), so the curves measure instances the
policy never received a gradient on.
"""

from __future__ import annotations

from atoll.pi_train.hidden.families import FAMILIES
from atoll.pi_train.training import batches
from atoll.pi_train.training.tasks import HiddenTask, check_languages


def train_tasks(
    languages: tuple[str, ...], per_batch: int, count: int, seed: int
) -> list[HiddenTask]:
    """`count` training groups, batch after batch of `per_batch`, mixed from `seed`.

    A (family, language) pair's n-th group is the family's train instance n, so
    an instance is met in every language, as in the fixed order before.
    """
    check_languages(languages)
    return [
        HiddenTask(
            f"{slot.family}/train/{slot.pair_index}/{slot.language}",
            FAMILIES[slot.family].instance("train", slot.pair_index),
            slot.language,
        )
        for slot in batches.mix(sorted(FAMILIES), languages, per_batch, count, seed)
    ]


def eval_tasks(languages: tuple[str, ...], per_cell: int) -> list[HiddenTask]:
    """Held-out groups: `per_cell` eval instances of every family in every language."""
    check_languages(languages)
    return [
        HiddenTask(
            f"{family}/eval/{index}/{language}", FAMILIES[family].instance("eval", index), language
        )
        for index in range(per_cell)
        for family in sorted(FAMILIES)
        for language in languages
    ]


def batches_record(languages: tuple[str, ...], per_batch: int, seed: int) -> dict[str, object]:
    return batches.record(seed, per_batch, sorted(FAMILIES), languages)
