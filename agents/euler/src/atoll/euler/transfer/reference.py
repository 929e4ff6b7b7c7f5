"""Reference solutions of the transfer tasks: their answers are computed, never stored.

The suite's pinned digest covers these answers together with the statements
and resources, so a changed solution or file is caught before any sampling.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping

Files = Mapping[str, bytes]


def filtered_logs(files: Files) -> int:
    total = 0
    for line in files["service.log"].decode().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        _, level, *fields = line.split()
        values = dict(f.split("=", 1) for f in fields)
        if (
            level == "ERROR"
            and values["service"] == "billing"
            and 500 <= int(values["status"]) <= 599
        ):
            total += int(values["latency_ms"])
    return total


def signed_inventory(files: Files) -> int:
    stock = {
        row["sku"]: int(row["stock"])
        for row in csv.DictReader(io.StringIO(files["opening.csv"].decode()))
    }
    for row in csv.DictReader(io.StringIO(files["movements.csv"].decode())):
        if row["note"].strip() == "VOID":
            continue
        stock[row["sku"]] = stock.get(row["sku"], 0) + int(row["quantity"])
    return sum(v for v in stock.values() if v < 0)


def weighted_checksum(files: Files) -> int:
    lines = files["records.txt"].decode().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return sum(i * sum(line.encode()) for i, line in enumerate(lines, start=1)) % 1_000_000_007


def shard_totals(files: Files) -> int:
    totals: dict[str, int] = {}
    for part in range(4):
        for line in files[f"shard-{part}.jsonl"].decode().splitlines():
            if line.strip():
                record = json.loads(line)
                if record["ok"] is True:
                    totals[record["user"]] = totals.get(record["user"], 0) + int(record["bytes"])
    return max(totals.values())


SOLUTIONS: dict[str, Callable[[Files], int]] = {
    "filtered-logs": filtered_logs,
    "signed-inventory": signed_inventory,
    "weighted-checksum": weighted_checksum,
    "shard-totals": shard_totals,
}
