"""Which lost requests a resume sends again, and which it never will.

A resume re-runs only the seeds that have no final outcome (an error
outcome, such as a skipped uncertain request, is tried again). A model
request of such a seed is sent again if its answer was lost and no
identical request was answered since. A rollout's request is never sent
again: a rollout runs after its task was accepted, and an accepted seed is
journaled and skipped on resume. `reconcile`, the command's exit line and
the report all count from here, so they say the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from atoll.core.ledger import Ledger, Receipt
from atoll.frontiersmith.outcome import Status

ROLLOUT_STAGE = "rollout"


def stage_and_seed(receipt: Receipt) -> tuple[str, str]:
    """A receipt's label `STAGE:SEED_ID`, split (a seed id may itself hold a colon)."""
    stage, _, seed_id = receipt.label.partition(":")
    return stage, seed_id


def is_rollout(receipt: Receipt) -> bool:
    return stage_and_seed(receipt)[0] == ROLLOUT_STAGE


def resent_on_resume(
    ledger: Ledger, receipts: Iterable[Receipt], outcomes: Mapping[str, Mapping[str, Any]]
) -> list[Receipt]:
    """Of `receipts` (lost answers), those a resume sends again."""
    again = []
    for receipt in receipts:
        _, seed_id = stage_and_seed(receipt)
        final = outcomes.get(seed_id, {}).get("status") not in (None, Status.ERROR)
        if is_rollout(receipt) or final or ledger.answered(receipt.key) is not None:
            continue
        again.append(receipt)
    return again
