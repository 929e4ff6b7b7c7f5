"""File-task families of `atoll pi train shell`: generated workspaces with one exact answer.

Four families, the kinds of work Pi does with files: filtered logs, signed
inventory arithmetic, weighted checksums and file-shard aggregation. An
instance is a set of workspace files, a statement and an integer answer,
all drawn deterministically from (family, split, index).

Train and eval are disjoint by construction: an instance's *question* (the
file layout, the filter, what is asked: its `params`) belongs to exactly one
split, decided by a hash of the question itself, and each split draws only
questions of its own; the data files are seeded from the instance's identity.

The frozen transfer suite (atoll-euler's `atoll-transfer-v1`) has one task of
each family. Its four questions are points of these same question spaces
(`SUITE_POINTS`: the reference solvers here reproduce the suite's answers
from its files with them), and the generators never draw them: every
training question differs from the suite's in its file names and its
filter or ask, the data uses other timestamps, names and vocabularies, and
an instance whose answer equals a suite answer is redrawn. A test proves
all of it against the installed suite. Transfer is then measured on unseen
instances of familiar kinds of work, not on unseen kinds.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from atoll.pi_train.shell import references as shell_references

Split = Literal["train", "eval"]
SPLITS: tuple[Split, ...] = get_args(Split)
# Part of every seed: a change to how instances are drawn must change it.
GENERATOR_VERSION = "shell-files-v1"

Params = dict[str, Any]
Files = Mapping[str, bytes]


@dataclass(frozen=True)
class ShellInstance:
    """One workspace task: the files the program reads, what it must print, and the answer."""

    family: str
    split: Split
    index: int
    params: Params  # the question: file layout, filter, what is asked
    files: dict[str, bytes]
    statement: str
    answer: int

    def digest(self) -> str:
        """sha256 over the question, every file and the answer: the instance's identity."""
        data = {
            "family": self.family,
            "split": self.split,
            "index": self.index,
            "generator": GENERATOR_VERSION,
            "params": self.params,
            "files": {n: hashlib.sha256(d).hexdigest() for n, d in sorted(self.files.items())},
            "statement": self.statement,
            "answer": self.answer,
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def params_key(family: str, params: Params) -> str:
    return f"{family}:{json.dumps(params, sort_keys=True, separators=(',', ':'))}"


def question_split(family: str, params: Params) -> Split:
    """The one split a question belongs to: a hash of the question, never of an index."""
    digest = hashlib.sha256(f"{GENERATOR_VERSION}/{params_key(family, params)}".encode()).digest()
    return SPLITS[digest[0] & 1]


def _rng(family: str, split: str, index: int, purpose: str) -> random.Random:
    seed = hashlib.sha256(f"{GENERATOR_VERSION}/{family}/{split}/{index}/{purpose}".encode())
    return random.Random(int.from_bytes(seed.digest()[:16], "big"))


def _pick(rng: random.Random, options: tuple[Any, ...] | list[Any]) -> Any:
    return options[rng.randrange(len(options))]


def _between(rng: random.Random, low: int, high: int) -> int:
    return low + rng.randrange(high - low + 1)


# --- filtered logs -------------------------------------------------------------------------

_LOG_FILES = ("app.log", "gateway.log", "events.log", "worker.log")
_LOG_SERVICES = ("ledger", "search", "auth", "catalog", "mailer", "payments")
_LOG_LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")
_STATUS_CLASSES = ((200, 299), (400, 499), (500, 599))
_STATUSES = (200, 201, 204, 301, 400, 403, 404, 409, 429, 500, 502, 503, 504)


def solve_logs(params: Params, files: Files) -> int:
    low, high = params["status"]
    total = 0
    for line in files[params["file"]].decode().splitlines():
        if not line.strip() or line.startswith(params["comment"]):
            continue
        _, level, *fields = line.split()
        values = dict(f.split("=", 1) for f in fields)
        if (
            level == params["level"]
            and values["service"] == params["service"]
            and low <= int(values["status"]) <= high
        ):
            total += int(values[params["field"]])
    return total


def _logs_params(rng: random.Random) -> Params:
    return {
        "file": _pick(rng, _LOG_FILES),
        "level": _pick(rng, ("WARN", "ERROR", "INFO")),
        "service": _pick(rng, _LOG_SERVICES),
        "status": list(_pick(rng, _STATUS_CLASSES)),
        "field": _pick(rng, ("latency_ms", "bytes")),
        "comment": _pick(rng, ("#", ";")),
    }


def _logs_files(rng: random.Random, params: Params) -> dict[str, bytes]:
    lines = []
    seconds = 0
    field_name = params["field"]
    for _ in range(_between(rng, 120, 260)):
        seconds += _between(rng, 3, 90)
        if rng.random() < 0.04:
            lines.append(f"{params['comment']} rotated segment {seconds // 600}")
            continue
        # Services with a suffix share a prefix with the target: exact names matter.
        service = _pick(rng, _LOG_SERVICES) + _pick(rng, ("", "", "", "-api", "-worker"))
        stamp = f"2027-07-{1 + seconds // 86400:02d}T{seconds % 86400 // 3600:02d}:" + (
            f"{seconds % 3600 // 60:02d}:{seconds % 60:02d}Z"
        )
        value = _between(rng, 1, 4000)
        lines.append(
            f"{stamp} {_pick(rng, _LOG_LEVELS):<5} service={service} "
            f"status={_pick(rng, _STATUSES)} {field_name}={value}"
        )
    return {params["file"]: ("\n".join(lines) + "\n").encode()}


def _logs_statement(params: Params) -> str:
    low, high = params["status"]
    return (
        f"`{params['file']}` is a service log, one event per line:\n\n"
        f"    TIMESTAMP LEVEL service=NAME status=CODE {params['field']}=N\n\n"
        f"Lines that start with `{params['comment']}` are rotation markers, not events. "
        "Service names are exact: `auth` and `auth-api` are different services.\n\n"
        f"Add up `{params['field']}` over the events whose level is `{params['level']}`, "
        f"whose service is exactly `{params['service']}`, and whose status is between "
        f"{low} and {high} inclusive. What is the total?"
    )


# --- signed inventory ----------------------------------------------------------------------

# (opening file, movements file, key column, stock column, quantity column, note column)
_INVENTORY_LAYOUTS = (
    ("start.csv", "moves.csv", "item", "count", "delta", "memo"),
    ("balances.csv", "changes.csv", "part", "on_hand", "change", "flag"),
    ("stock_open.csv", "stock_moves.csv", "code", "units", "amount", "remark"),
)
_CANCEL_MARKERS = ("CANCELLED", "REVERSED", "VOID")
_INVENTORY_ASKS = {
    "sum_negative": "the sum of the final balances that are negative (a negative number)",
    "count_negative": "the number of items whose final balance is negative",
    "min_balance": "the smallest final balance",
    "sum_positive": "the sum of the final balances that are positive",
}


def solve_inventory(params: Params, files: Files) -> int:
    key, stock_col, qty_col, note_col = params["columns"]
    opening, movements = params["files"]
    stock = {
        row[key]: int(row[stock_col])
        for row in csv.DictReader(io.StringIO(files[opening].decode()))
    }
    for row in csv.DictReader(io.StringIO(files[movements].decode())):
        if row[note_col].strip() == params["cancel"]:
            continue
        stock[row[key]] = stock.get(row[key], 0) + int(row[qty_col])
    values = list(stock.values())
    ask = params["ask"]
    if ask == "sum_negative":
        return sum(v for v in values if v < 0)
    if ask == "count_negative":
        return sum(1 for v in values if v < 0)
    if ask == "min_balance":
        return min(values)
    return sum(v for v in values if v > 0)


def _inventory_params(rng: random.Random) -> Params:
    opening, movements, *columns = _pick(rng, _INVENTORY_LAYOUTS)
    return {
        "files": [opening, movements],
        "columns": columns,
        "cancel": _pick(rng, _CANCEL_MARKERS),
        "ask": _pick(rng, tuple(_INVENTORY_ASKS)),
    }


def _inventory_files(rng: random.Random, params: Params) -> dict[str, bytes]:
    key, stock_col, qty_col, note_col = params["columns"]
    opening_name, movements_name = params["files"]
    prefix = _pick(rng, ("P-", "ITM", "PT"))
    items = [f"{prefix}{n:04d}" for n in rng.sample(range(1, 10000), _between(rng, 12, 30))]
    opening = io.StringIO()
    writer = csv.writer(opening, lineterminator="\n")
    writer.writerow([key, stock_col])
    for item in items:
        writer.writerow([item, _between(rng, 0, 40)])
    moves = io.StringIO()
    writer = csv.writer(moves, lineterminator="\n")
    writer.writerow([key, qty_col, note_col])
    notes = ("", "", "", "restock", "audit", "return", *_CANCEL_MARKERS)
    for _ in range(_between(rng, 60, 180)):
        quantity = _between(rng, 1, 35) * _pick(rng, (1, -1, -1))
        writer.writerow([_pick(rng, items), f"{quantity:+d}", _pick(rng, notes)])
    return {
        opening_name: opening.getvalue().encode(),
        movements_name: moves.getvalue().encode(),
    }


def _inventory_statement(params: Params) -> str:
    key, stock_col, qty_col, note_col = params["columns"]
    opening, movements = params["files"]
    return (
        f"`{opening}` gives each item's opening stock (`{key},{stock_col}`). `{movements}` lists "
        f"stock movements in order (`{key},{qty_col},{note_col}`): the quantity carries its sign "
        f"(`+12` adds, `-7` removes). A movement whose {note_col} is exactly `{params['cancel']}` "
        "was cancelled and must be ignored; every other note is informational. An item that "
        "appears only in the movements starts at 0.\n\n"
        f"Apply the movements to the opening stock. What is {_INVENTORY_ASKS[params['ask']]}?"
    )


# --- weighted checksums --------------------------------------------------------------------

_CHECKSUM_FILES = ("lines.txt", "notes.txt", "entries.txt")
_MODULI = (998244353, 1000003, 999983, 65521, 2147483647)
_WORDS = [
    "alder",
    "basalt",
    "comet",
    "dune",
    "flint",
    "garnet",
    "heron",
    "ibis",
    "jasper",
    "kestrel",
    "lichen",
    "marsh",
    "nimbus",
    "opal",
    "pumice",
    "raven",
    "spruce",
    "thistle",
    "vale",
    "wren",
    "yucca",
    "acorn",
    "bramble",
    "crane",
]


def solve_checksum(params: Params, files: Files) -> int:
    lines = files[params["file"]].decode().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    start = int(params["start"])
    total = sum((start + i) * sum(line.encode()) for i, line in enumerate(lines))
    return total % int(params["modulus"])


def _checksum_params(rng: random.Random) -> Params:
    return {
        "file": _pick(rng, _CHECKSUM_FILES),
        "start": _pick(rng, (0, 1, 2)),
        "modulus": _pick(rng, _MODULI),
    }


def _checksum_files(rng: random.Random, params: Params) -> dict[str, bytes]:
    lines = [
        " ".join(_pick(rng, _WORDS) for _ in range(_between(rng, 1, 9)))
        for _ in range(_between(rng, 80, 300))
    ]
    return {params["file"]: ("\n".join(lines) + "\n").encode()}


def _checksum_statement(params: Params) -> str:
    return (
        f"`{params['file']}` holds text lines. Number the lines from {params['start']}. A line's "
        "value is the sum of the byte values of its characters (ASCII, without the newline). "
        "The checksum is the sum over all lines of (line number x line value), taken modulo "
        f"{params['modulus']}.\n\nWhat is the checksum of `{params['file']}`?"
    )


# --- file-shard aggregation ----------------------------------------------------------------

# (shard name pattern, key field, amount field, flag field, the flag value that counts)
_SHARD_LAYOUTS = (
    ("part-{}.jsonl", "account", "amount", "status", "done"),
    ("chunk-{}.jsonl", "host", "bytes_sent", "ok", True),
    ("slice_{}.jsonl", "team", "minutes", "state", "closed"),
)
_SHARD_ASKS = {
    "max_total": "the largest per-{key} total",
    "min_total": "the smallest per-{key} total",
    "top3_sum": "the sum of the three largest per-{key} totals",
    "count_keys": "the number of distinct {key} values with a counted record",
}


def solve_shards(params: Params, files: Files) -> int:
    totals: dict[str, int] = {}
    for name in params["shards"]:
        for line in files[name].decode().splitlines():
            if line.strip():
                record = json.loads(line)
                if record[params["flag"]] == params["counts"]:
                    key = record[params["key"]]
                    totals[key] = totals.get(key, 0) + int(record[params["amount"]])
    values = sorted(totals.values())
    ask = params["ask"]
    if ask == "max_total":
        return values[-1]
    if ask == "min_total":
        return values[0]
    if ask == "top3_sum":
        return sum(values[-3:])
    return len(values)


def _shards_params(rng: random.Random) -> Params:
    pattern, key, amount, flag, counts = _pick(rng, _SHARD_LAYOUTS)
    count = _between(rng, 2, 6)
    return {
        "shards": [pattern.format(i) for i in range(count)],
        "key": key,
        "amount": amount,
        "flag": flag,
        "counts": counts,
        "ask": _pick(rng, tuple(_SHARD_ASKS)),
    }


def _shards_files(rng: random.Random, params: Params) -> dict[str, bytes]:
    counted = params["counts"]
    other = (False,) if counted is True else ("failed", "pending", "open")
    keys = [
        f"{params['key']}-{chr(97 + i)}{n}" for i, n in enumerate(rng.sample(range(10, 99), 12))
    ]
    files = {}
    for name in params["shards"]:
        rows = []
        for _ in range(_between(rng, 15, 60)):
            record = {
                params["key"]: _pick(rng, keys),
                params["amount"]: _between(rng, 1, 5000),
                params["flag"]: counted if rng.random() < 0.7 else _pick(rng, other),
            }
            rows.append(json.dumps(record))
        files[name] = ("\n".join(rows) + "\n").encode()
    return files


def _shards_statement(params: Params) -> str:
    shards = params["shards"]
    counted = json.dumps(params["counts"])
    ask = _SHARD_ASKS[params["ask"]].format(key=params["key"])
    return (
        f"The records of one log are split over {len(shards)} shards, `{shards[0]}` to "
        f"`{shards[-1]}`, one JSON object per line with the fields `{params['key']}`, "
        f"`{params['amount']}` and `{params['flag']}`. Only records with "
        f'`"{params["flag"]}": {counted}` count.\n\n'
        f"Total the counted `{params['amount']}` per {params['key']} over all the shards. "
        f"What is {ask}?"
    )


# --- the families --------------------------------------------------------------------------


@dataclass(frozen=True)
class ShellFamily:
    name: str
    draw_params: Callable[[random.Random], Params]
    draw_files: Callable[[random.Random, Params], dict[str, bytes]]
    statement: Callable[[Params], str]
    solve: Callable[[Params, Files], int]
    excluded: tuple[Params, ...] = field(default=())  # questions no split may draw
    # A trusted program body per language (atoll.pi_train.shell.references): the preflight
    # runs each through the episode's tools and reward before a run may spend anything, and
    # refuses a run in a language a family has none for.
    solutions: Mapping[str, str] = field(default_factory=dict, kw_only=True)

    def solution(self, language: str, params: Params) -> str:
        """The reference program for the question `params` in `language` (KeyError: none)."""
        return shell_references.with_params(language, params, self.solutions[language])

    def instance(self, split: Split, index: int) -> ShellInstance:
        """Instance `index` (>= 0) of `split`: the same for the same arguments."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"an instance index is a whole number >= 0, not {index!r}")
        excluded = {params_key(self.name, p) for p in self.excluded}
        rng = _rng(self.name, split, index, "question")
        while True:
            params = self.draw_params(rng)
            key = params_key(self.name, params)
            if key not in excluded and question_split(self.name, params) == split:
                break
        data = _rng(self.name, split, index, "files")
        while True:
            files = self.draw_files(data, params)
            answer = self.solve(params, files)
            if answer != 0 and answer not in SUITE_ANSWERS:
                break
        return ShellInstance(self.name, split, index, params, files, self.statement(params), answer)


# The frozen transfer suite's four questions, in these families' terms. The generators
# never draw them (`excluded`), and a test checks that each family's solver reproduces
# the suite's answer from the suite's own files with them.
SUITE_POINTS: dict[str, Params] = {
    "filtered-logs": {
        "file": "service.log",
        "level": "ERROR",
        "service": "billing",
        "status": [500, 599],
        "field": "latency_ms",
        "comment": "#",
    },
    "signed-inventory": {
        "files": ["opening.csv", "movements.csv"],
        "columns": ["sku", "stock", "quantity", "note"],
        "cancel": "VOID",
        "ask": "sum_negative",
    },
    "weighted-checksum": {"file": "records.txt", "start": 1, "modulus": 1_000_000_007},
    "shard-totals": {
        "shards": [f"shard-{i}.jsonl" for i in range(4)],
        "key": "user",
        "amount": "bytes",
        "flag": "ok",
        "counts": True,
        "ask": "max_total",
    },
}
# The suite's answers (its reference values, pinned by its digest; a test recomputes them
# from the installed suite): an instance with one of these answers is redrawn.
SUITE_ANSWERS: frozenset[int] = frozenset({33539, -2492, 721068659, 1036783})

FAMILIES: dict[str, ShellFamily] = {
    "filtered-logs": ShellFamily(
        "filtered-logs",
        _logs_params,
        _logs_files,
        _logs_statement,
        solve_logs,
        (SUITE_POINTS["filtered-logs"],),
        solutions=shell_references.FILTERED_LOGS,
    ),
    "signed-inventory": ShellFamily(
        "signed-inventory",
        _inventory_params,
        _inventory_files,
        _inventory_statement,
        solve_inventory,
        (SUITE_POINTS["signed-inventory"],),
        solutions=shell_references.SIGNED_INVENTORY,
    ),
    "weighted-checksum": ShellFamily(
        "weighted-checksum",
        _checksum_params,
        _checksum_files,
        _checksum_statement,
        solve_checksum,
        (SUITE_POINTS["weighted-checksum"],),
        solutions=shell_references.WEIGHTED_CHECKSUM,
    ),
    "shard-totals": ShellFamily(
        "shard-totals",
        _shards_params,
        _shards_files,
        _shards_statement,
        solve_shards,
        (SUITE_POINTS["shard-totals"],),
        solutions=shell_references.SHARD_TOTALS,
    ),
}
