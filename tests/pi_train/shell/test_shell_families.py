"""The shell task families: deterministic, right, train and eval disjoint, and apart from the transfer suite.

An instance's answer is what its family's solver computes, so a solver is
checked against answers it did not compute: worked by hand on small
workspaces written here, and computed again, from the statement's wording,
by a second implementation below that shares no code with the families.

The transfer suite is atoll-euler's installed, digest-verified
`atoll-transfer-v1`: its four tasks are one of each family, so these tests
prove that no training or held-out instance is one of them, shares a file,
a line of data or an answer with them, and that the families' own solvers
do describe the suite's tasks (so "not the suite's question" means something).
"""

from __future__ import annotations

import heapq
import json
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from atoll.euler.transfer import suite
from atoll.pi_train.shell.families import (
    FAMILIES,
    SPLITS,
    SUITE_ANSWERS,
    SUITE_POINTS,
    params_key,
    question_split,
)
from atoll.pi_train.shell.train import eval_tasks, schedule, train_tasks

WALK = 30  # instances per family and split


@pytest.fixture(scope="module")
def instances() -> dict[str, dict[str, list]]:
    return {
        name: {split: [family.instance(split, i) for i in range(WALK)] for split in SPLITS}
        for name, family in FAMILIES.items()
    }


@pytest.fixture(scope="module")
def transfer() -> dict[str, suite.TransferTask]:
    return suite.verified()  # refuses a suite that does not reproduce its pinned digest


def test_instances_are_deterministic(instances: dict) -> None:
    for name, family in FAMILIES.items():
        for split in SPLITS:
            for index in (0, 7, WALK - 1):
                again = family.instance(split, index)
                assert again == instances[name][split][index]
                assert again.digest() == instances[name][split][index].digest()


# --- a second implementation of each family, from its statement alone ----------------------


def _logs(params: dict[str, Any], files: Mapping[str, bytes]) -> int:
    event = re.compile(r"(\S+) +(\S+) +service=(\S+) +status=(\d+) +(\w+)=(\d+)")
    low, high = params["status"]
    total = 0
    for line in files[params["file"]].decode().split("\n"):
        if line == "" or line.startswith(params["comment"]):
            continue
        found = event.fullmatch(line)
        assert found is not None, line  # every other line is an event
        _, level, service, status, name, value = found.groups()
        assert name == params["field"]
        if (level, service) == (params["level"], params["service"]) and low <= int(status) <= high:
            total += int(value)
    return total


def _inventory(params: dict[str, Any], files: Mapping[str, bytes]) -> int:
    key, stock, quantity, note = params["columns"]
    opening, movements = (files[name].decode().splitlines() for name in params["files"])
    assert opening[0] == f"{key},{stock}" and movements[0] == f"{key},{quantity},{note}"
    balance: dict[str, int] = defaultdict(int)
    for row in opening[1:]:
        item, count = row.split(",")
        balance[item] = int(count)
    for row in movements[1:]:
        item, signed, remark = row.split(",")
        if remark != params["cancel"]:
            balance[item] += int(signed)  # "+12" and "-7" alike
    final = list(balance.values())
    asks: dict[str, Callable[[], int]] = {
        "sum_negative": lambda: sum(min(v, 0) for v in final),
        "count_negative": lambda: len([v for v in final if v < 0]),
        "min_balance": lambda: sorted(final)[0],
        "sum_positive": lambda: sum(max(v, 0) for v in final),
    }
    return asks[params["ask"]]()


def _checksum(params: dict[str, Any], files: Mapping[str, bytes]) -> int:
    checksum = 0
    for number, line in enumerate(files[params["file"]].decode().splitlines(), params["start"]):
        checksum = (checksum + number * sum(ord(c) for c in line)) % params["modulus"]
    return checksum


def _shards(params: dict[str, Any], files: Mapping[str, bytes]) -> int:
    counted = params["counts"]
    totals: dict[str, int] = defaultdict(int)
    for name in params["shards"]:
        for line in files[name].decode().splitlines():
            if line.strip():
                record = json.loads(line)
                flag = record[params["flag"]]
                # The statement's `"ok": true` is JSON's true, never a 1.
                if type(flag) is type(counted) and flag == counted:
                    totals[record[params["key"]]] += record[params["amount"]]
    asks: dict[str, Callable[[], int]] = {
        "max_total": lambda: max(totals.values()),
        "min_total": lambda: min(totals.values()),
        "top3_sum": lambda: sum(heapq.nlargest(3, totals.values())),
        "count_keys": lambda: len(totals),
    }
    return asks[params["ask"]]()


AGAIN: dict[str, Callable[[dict[str, Any], Mapping[str, bytes]], int]] = {
    "filtered-logs": _logs,
    "signed-inventory": _inventory,
    "weighted-checksum": _checksum,
    "shard-totals": _shards,
}


def test_each_answer_is_computed_again_apart_from_its_solver(instances: dict) -> None:
    assert set(AGAIN) == set(FAMILIES)
    for name in FAMILIES:
        for split in SPLITS:
            for instance in instances[name][split][:10]:
                assert AGAIN[name](instance.params, instance.files) == instance.answer != 0
                assert set(instance.files) and all(instance.files.values())


def test_the_second_implementation_gives_the_suite_s_own_answers(transfer: dict) -> None:
    """It is checked on answers neither implementation computed: the suite's pinned ones."""
    for task_id, task in transfer.items():
        assert str(AGAIN[task_id](SUITE_POINTS[task_id], task.files)) == task.expected()


# --- small workspaces worked by hand ------------------------------------------------------

_APP_LOG = b"""# rotated segment 0
2027-07-01T00:00:05Z ERROR service=auth status=500 latency_ms=120
2027-07-01T00:00:09Z ERROR service=auth-api status=503 latency_ms=7000
2027-07-01T00:00:12Z WARN  service=auth status=502 latency_ms=40
2027-07-01T00:00:20Z ERROR service=auth status=599 latency_ms=33
2027-07-01T00:00:31Z ERROR service=auth status=404 latency_ms=900
2027-07-01T00:00:47Z ERROR service=authz status=500 latency_ms=55
# rotated segment 1
2027-07-01T00:01:02Z ERROR service=auth status=504 latency_ms=1000
"""
_EVENTS_LOG = b"""2027-07-01T00:00:03Z INFO  service=search status=200 bytes=10
; 2027-07-01T00:00:04Z INFO  service=search status=200 bytes=999
2027-07-01T00:00:08Z INFO  service=search status=299 bytes=5
2027-07-01T00:00:09Z INFO  service=search status=300 bytes=70
2027-07-01T00:00:11Z INFO  service=search-worker status=201 bytes=80
2027-07-01T00:00:15Z DEBUG service=search status=204 bytes=3
2027-07-01T00:00:20Z INFO  service=search status=204 bytes=2000
"""
_INVENTORY = {
    "start.csv": b"item,count\nA1,5\nB2,0\nC3,10\n",
    # A1: 5 - 7 + 1 = -1; B2: 0 + 3 = 3; C3: 10 (the VOID -4 ignored) - 12 (CANCELLED is
    # only a note when the marker is VOID) = -2; D4: only in the movements, 0 - 2 = -2.
    "moves.csv": (
        b"item,delta,memo\nA1,-7,\nB2,+3,restock\nC3,-4,VOID\nD4,-2,audit\n"
        b"C3,-12,CANCELLED\nA1,+1,return\n"
    ),
}
_INVENTORY_QUESTION = {
    "files": ["start.csv", "moves.csv"],
    "columns": ["item", "count", "delta", "memo"],
    "cancel": "VOID",
}
# "a b" is 97 + 32 + 98 = 227 and "zz" 122 + 122 = 244.
_NOTES = {"notes.txt": b"a b\nzz\n"}
# Counted: a 5 + 6 = 11, b 2 (its 7 failed), c 4 + 1 = 5; d's only record is pending.
_PARTS = {
    "part-0.jsonl": b'{"account": "a", "amount": 5, "status": "done"}\n'
    b'{"account": "b", "amount": 7, "status": "failed"}\n'
    b'{"account": "c", "amount": 4, "status": "done"}\n',
    "part-1.jsonl": b'{"account": "a", "amount": 6, "status": "done"}\n'
    b'{"account": "b", "amount": 2, "status": "done"}\n'
    b'{"account": "d", "amount": 100, "status": "pending"}\n\n'
    b'{"account": "c", "amount": 1, "status": "done"}\n',
}
_PARTS_QUESTION = {
    "shards": ["part-0.jsonl", "part-1.jsonl"],
    "key": "account",
    "amount": "amount",
    "flag": "status",
    "counts": "done",
}
# Counted (ok: true): x 10 + 15 = 25, y 20 (its 50 was not ok).
_CHUNK = {
    "chunk-0.jsonl": b'{"host": "x", "bytes_sent": 10, "ok": true}\n'
    b'{"host": "y", "bytes_sent": 50, "ok": false}\n'
    b'{"host": "x", "bytes_sent": 15, "ok": true}\n'
    b'{"host": "y", "bytes_sent": 20, "ok": true}\n'
}
_CHUNK_QUESTION = {
    "shards": ["chunk-0.jsonl"],
    "key": "host",
    "amount": "bytes_sent",
    "flag": "ok",
    "counts": True,
}

WORKED: list[tuple[str, dict[str, Any], dict[str, bytes], int]] = [
    # ERROR, exactly `auth`, status 500-599: 120 + 33 + 1000 (not auth-api, WARN, 404, authz).
    (
        "filtered-logs",
        {
            "file": "app.log",
            "level": "ERROR",
            "service": "auth",
            "status": [500, 599],
            "field": "latency_ms",
            "comment": "#",
        },
        {"app.log": _APP_LOG},
        1153,
    ),
    # INFO, exactly `search`, status 200-299: 10 + 5 + 2000 (not the `;` line, 300, the
    # worker, DEBUG).
    (
        "filtered-logs",
        {
            "file": "events.log",
            "level": "INFO",
            "service": "search",
            "status": [200, 299],
            "field": "bytes",
            "comment": ";",
        },
        {"events.log": _EVENTS_LOG},
        2015,
    ),
    # Final balances A1 -1, B2 3, C3 -2, D4 -2.
    ("signed-inventory", {**_INVENTORY_QUESTION, "ask": "sum_negative"}, _INVENTORY, -5),
    ("signed-inventory", {**_INVENTORY_QUESTION, "ask": "count_negative"}, _INVENTORY, 3),
    ("signed-inventory", {**_INVENTORY_QUESTION, "ask": "min_balance"}, _INVENTORY, -2),
    ("signed-inventory", {**_INVENTORY_QUESTION, "ask": "sum_positive"}, _INVENTORY, 3),
    # 1 x 227 + 2 x 244 = 715.
    ("weighted-checksum", {"file": "notes.txt", "start": 1, "modulus": 999983}, _NOTES, 715),
    # 0 x 227 + 1 x 244 = 244.
    ("weighted-checksum", {"file": "notes.txt", "start": 0, "modulus": 65521}, _NOTES, 244),
    # 2 x 227 + 3 x 244 = 1186, modulo 1000.
    ("weighted-checksum", {"file": "notes.txt", "start": 2, "modulus": 1000}, _NOTES, 186),
    # Without the last newline the lines are the same.
    (
        "weighted-checksum",
        {"file": "n.txt", "start": 1, "modulus": 999983},
        {"n.txt": b"a b\nzz"},
        715,
    ),
    # Totals a 11, b 2, c 5.
    ("shard-totals", {**_PARTS_QUESTION, "ask": "max_total"}, _PARTS, 11),
    ("shard-totals", {**_PARTS_QUESTION, "ask": "min_total"}, _PARTS, 2),
    ("shard-totals", {**_PARTS_QUESTION, "ask": "top3_sum"}, _PARTS, 18),
    ("shard-totals", {**_PARTS_QUESTION, "ask": "count_keys"}, _PARTS, 3),
    # Totals x 25, y 20.
    ("shard-totals", {**_CHUNK_QUESTION, "ask": "max_total"}, _CHUNK, 25),
    ("shard-totals", {**_CHUNK_QUESTION, "ask": "top3_sum"}, _CHUNK, 45),
    ("shard-totals", {**_CHUNK_QUESTION, "ask": "min_total"}, _CHUNK, 20),
]


@pytest.mark.parametrize(
    ("name", "params", "files", "answer"),
    WORKED,
    ids=[f"{name}-{i}" for i, (name, *_) in enumerate(WORKED)],
)
def test_each_family_solves_small_workspaces_worked_by_hand(
    name: str, params: dict[str, Any], files: dict[str, bytes], answer: int
) -> None:
    assert FAMILIES[name].solve(params, files) == answer
    assert AGAIN[name](params, files) == answer


def test_the_worked_workspaces_cover_every_family_and_every_ask() -> None:
    asked = {(name, params.get("ask")) for name, params, _, _ in WORKED}
    assert {name for name, _ in asked} == set(FAMILIES)
    for name, family in FAMILIES.items():
        drawn = {family.instance("train", i).params.get("ask") for i in range(WALK)}
        assert drawn <= {ask for n, ask in asked if n == name}, name


def test_train_and_eval_share_no_question_and_no_instance(instances: dict) -> None:
    for name in FAMILIES:
        questions = {
            split: {params_key(name, i.params) for i in instances[name][split]} for split in SPLITS
        }
        assert questions["train"] and questions["eval"]
        assert not questions["train"] & questions["eval"], name
        for split in SPLITS:
            assert all(question_split(name, i.params) == split for i in instances[name][split])
        digests = {split: {i.digest() for i in instances[name][split]} for split in SPLITS}
        assert not digests["train"] & digests["eval"]
        # Within a split, instances differ too (the data is seeded by the index).
        assert len(digests["train"]) == WALK


def test_bad_splits_and_indices_are_refused() -> None:
    family = FAMILIES["filtered-logs"]
    for split, index in (("test", 0), ("train", -1), ("train", True), ("eval", 1.5)):
        with pytest.raises(ValueError):
            family.instance(split, index)  # type: ignore[arg-type]


def test_the_suite_points_describe_the_installed_suite(transfer: dict) -> None:
    """Each family's solver, at the suite's question, computes the suite's own answer."""
    assert set(transfer) == set(FAMILIES) == set(SUITE_POINTS)
    for task_id, task in transfer.items():
        assert str(FAMILIES[task_id].solve(SUITE_POINTS[task_id], task.files)) == task.expected()
    assert {int(t.expected()) for t in transfer.values()} == SUITE_ANSWERS


def test_no_instance_is_or_resembles_a_transfer_task(instances: dict, transfer: dict) -> None:
    suite_names = {name for task in transfer.values() for name in task.files}
    suite_lines = {
        line.strip()
        for task in transfer.values()
        for data in task.files.values()
        for line in data.decode().splitlines()
        if line.strip()
    }
    suite_statements = {task.statement for task in transfer.values()}
    for name in FAMILIES:
        suite_question = params_key(name, SUITE_POINTS[name])
        for split in SPLITS:
            for instance in instances[name][split]:
                assert params_key(name, instance.params) != suite_question
                assert not set(instance.files) & suite_names, (name, split, instance.index)
                lines = {
                    line.strip()
                    for data in instance.files.values()
                    for line in data.decode().splitlines()
                }
                assert not lines & suite_lines, (name, split, instance.index)
                assert instance.statement not in suite_statements
                assert instance.answer not in SUITE_ANSWERS


def test_a_generator_never_draws_an_excluded_question() -> None:
    """The exclusion is enforced, not lucky: exclude the questions a walk drew, and walk again."""
    family = FAMILIES["weighted-checksum"]
    drawn = [family.instance("train", i).params for i in range(20)]
    narrowed = type(family)(
        family.name,
        family.draw_params,
        family.draw_files,
        family.statement,
        family.solve,
        tuple(drawn[:3]),
    )
    banned = {params_key(family.name, p) for p in drawn[:3]}
    for index in range(20):
        assert params_key(family.name, narrowed.instance("train", index).params) not in banned


def test_the_language_schedule_weights_julia_three_times() -> None:
    assert schedule(("julia", "python", "javascript")) == [
        "julia",
        "julia",
        "julia",
        "python",
        "javascript",
    ]
    tasks = train_tasks(("julia", "python", "javascript"), 40)
    by_language = {lang: sum(t.language == lang for t in tasks) for lang in ("julia", "python")}
    assert by_language == {"julia": 24, "python": 8}
    for family in FAMILIES:  # every family meets every language
        assert {t.language for t in tasks if t.instance.family == family} == {
            "julia",
            "python",
            "javascript",
        }
    # Without Julia: Python and JavaScript alike, and a longer run starts with a shorter's groups.
    two = train_tasks(("python", "javascript"), 16)
    assert sum(t.language == "python" for t in two) == 8
    assert [t.id for t in train_tasks(("python", "javascript"), 5)] == [t.id for t in two[:5]]
    assert all(t.instance.split == "train" for t in two)


def test_evaluation_is_balanced_and_held_out() -> None:
    tasks = eval_tasks(("julia", "python", "javascript"), 2)
    assert len(tasks) == 2 * len(FAMILIES) * 3
    cells = {(t.instance.family, t.language) for t in tasks}
    assert len(cells) == len(FAMILIES) * 3
    assert all(sum((t.instance.family, t.language) == c for t in tasks) == 2 for c in cells)
    assert all(t.instance.split == "eval" for t in tasks)
    assert eval_tasks(("python",), 0) == []


def test_the_prompt_states_the_contract() -> None:
    task = train_tasks(("javascript",), 1)[0]
    prompt = task.prompt()
    assert task.instance.statement in prompt
    assert "`solution.js`" in prompt and "`node solution.js`" in prompt
    for name, data in task.instance.files.items():
        assert f"`{name}` ({len(data)} bytes)" in prompt
    assert str(task.instance.answer) not in prompt.replace(task.instance.statement, "")
