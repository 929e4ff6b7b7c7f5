"""The one place atoll-pi-train reaches into the Euler code: atoll-euler's public store API and
curriculum state (with the rows that say which model it measured), and the gate's reading of a
printed and a stated value (the shell reward compares as it does)."""

from __future__ import annotations

from pathlib import Path

from atoll.euler import LANGUAGES as EULER_LANGUAGES
from atoll.euler import (
    CurriculumError,
    Store,
    StoreError,
    equals,
    final_nonempty_line,
    load_curriculum,
    normalize,
    stated_in,
)

__all__ = [
    "EULER_LANGUAGES",
    "CurriculumError",
    "Store",
    "StoreError",
    "equals",
    "final_nonempty_line",
    "load_curriculum",
    "measured_models",
    "normalize",
    "stated_in",
]


def measured_models(state_dir: Path, signature: str) -> set[tuple[str, str | None]]:
    """(model, model_revision) of the curriculum's rows signed with `signature`.

    The state keeps only the signature's digest; the rows under its directory
    (atoll-euler's public `rows`) say which model and checkpoint it stands for.
    """
    from atoll.euler import rows

    found = sorted(state_dir.rglob(rows.ROWS_FILE))
    try:
        read = rows.read_all(found) if found else []
    except rows.RowsError as exc:
        raise CurriculumError(str(exc)) from None
    return {
        (str(row.get("model")), row.get("model_revision"))
        for row in read
        if row.get("model_signature") == signature
    }
