"""The suite's one table: per task and published record, the seed, the best found and the gap.

One row per record of each task (a task without records gets one row with
none): the task, its seed score, the best score its search handed to the
verifier, the record's value, who holds it and where it is stated, and the
gap, positive while the search is short of the record and negative once it
beats it (in the task's direction). Written as Markdown to `OUT/suite.md`
and printed as a terminal table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from atoll.discovery.records import gap

__all__ = ["COLUMNS", "markdown", "rows", "terminal_table"]

COLUMNS = ("task", "status", "seed score", "best found", "record", "by", "source", "gap")


def _number(value: Any) -> str:
    return "" if value is None else f"{value:.6g}"


def _precise(value: Any) -> str:
    """Scores next to records at the records' precision (six decimals or more)."""
    return "" if value is None else f"{value:.9g}"


def rows(order: Sequence[str], tasks: dict[str, dict[str, Any]]) -> list[tuple[str, ...]]:
    """The table's rows, tasks in `order`, each task's records in its task.toml's order."""
    found: list[tuple[str, ...]] = []
    for name in order:
        record = tasks.get(name)
        if record is None:
            found.append((name, "not run", "", "", "", "", "", ""))
            continue
        best = record.get("best_score") if record.get("status") == "done" else None
        direction = f" ({record.get('direction')})" if record.get("direction") else ""
        head = (
            name + direction,
            str(record.get("status")),
            _precise(record.get("seed_score")),
            _precise(best),
        )
        for published in record.get("records") or [None]:
            if published is None:
                found.append((*head, "", "", "", ""))
                continue
            value = published["value"]
            distance = None if best is None else gap(record["direction"], best, value)
            found.append(
                (*head, _precise(value), published["by"], published["source"], _number(distance))
            )
    return found


def markdown(table: list[tuple[str, ...]]) -> str:
    """The rows as a Markdown table (pipes in cells escaped)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in table:
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"


def terminal_table(table: list[tuple[str, ...]], title: str) -> Table:
    out = Table(title=title, title_justify="left")
    for column in COLUMNS:
        justify = "right" if column in ("seed score", "best found", "record", "gap") else "left"
        out.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in table:
        out.add_row(*row)
    return out
