"""A scripted model for FrontierSmith runs: a tiny knapsack task, written stage by stage.

Small on purpose: 8 instances of 6 items, so that every Harbor trial of a
test finishes in a fraction of a second, while the samples' per-case scores
still differ (greedy by value, greedy by ratio, exact search).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from support.openai_server import Reply, StageScript

GENERATOR = """import random


def generate(seed):
    rng = random.Random(seed)
    instances = []
    for _ in range(8):
        items = [{"w": rng.randint(1, 9), "v": rng.randint(1, 9)} for _ in range(6)]
        instances.append({"items": items, "capacity": rng.randint(8, 15)})
    return instances


def examples():
    instance = {"items": [{"w": 5, "v": 3}, {"w": 4, "v": 2}], "capacity": 5}
    return [
        {"name": "nothing taken", "instance": instance, "output": {"take": []}, "feasible": True, "score": 0.0},
        {"name": "over capacity", "instance": instance, "output": {"take": [0, 1]}, "feasible": False, "score": 0.0},
        {"name": "first item", "instance": instance, "output": {"take": [0]}, "feasible": True, "score": 0.6},
    ]
"""

FEASIBILITY = """def is_feasible(instance, output):
    if not isinstance(output, dict) or set(output) != {"take"}:
        return False
    take = output["take"]
    if not isinstance(take, list) or len(set(map(repr, take))) != len(take):
        return False
    items = instance["items"]
    for k in take:
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(items):
            return False
    return sum(items[k]["w"] for k in take) <= instance["capacity"]
"""

SCORER = """def _feasible(instance, output):
    if not isinstance(output, dict) or set(output) != {"take"}:
        return False
    take = output["take"]
    if not isinstance(take, list) or len(set(map(repr, take))) != len(take):
        return False
    items = instance["items"]
    for k in take:
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(items):
            return False
    return sum(items[k]["w"] for k in take) <= instance["capacity"]


def score(instance, output):
    if not _feasible(instance, output):
        return 0.0
    total = sum(item["v"] for item in instance["items"])
    return sum(instance["items"][k]["v"] for k in output["take"]) / total if total else 0.0
"""

# Scores nothing but a malformed output well: the grader's self-check refuses it.
BAD_SCORER = SCORER.replace(
    "    if not _feasible(instance, output):\n        return 0.0\n", "    return 1.0\n"
)


BASELINE = (
    "import json, sys\n\ninstance = json.load(sys.stdin)\nitems = instance['items']\n"
    "take, used = [], 0\nfor k, item in enumerate(items):\n"
    "    if k % 2 == 0 and used + item['w'] <= instance['capacity']:\n"
    "        take.append(k)\n        used += item['w']\n"
    "print(json.dumps({'take': take}))\n"
)

GREEDY_VALUE = (
    "import json, sys\n\ninstance = json.load(sys.stdin)\nitems = instance['items']\n"
    "take, used = [], 0\nfor k in sorted(range(len(items)), key=lambda k: -items[k]['v']):\n"
    "    if used + items[k]['w'] <= instance['capacity']:\n"
    "        take.append(k)\n        used += items[k]['w']\n"
    "print(json.dumps({'take': sorted(take)}))\n"
)

GREEDY_RATIO = GREEDY_VALUE.replace("-items[k]['v']", "-items[k]['v'] / items[k]['w']")

EXACT = (
    "import itertools, json, sys\n\ninstance = json.load(sys.stdin)\nitems = instance['items']\n"
    "best, best_value = [], -1\n"
    "for r in range(len(items) + 1):\n"
    "    for combo in itertools.combinations(range(len(items)), r):\n"
    "        if sum(items[k]['w'] for k in combo) <= instance['capacity']:\n"
    "            value = sum(items[k]['v'] for k in combo)\n"
    "            if value > best_value:\n"
    "                best, best_value = list(combo), value\n"
    "print(json.dumps({'take': best}))\n"
)

SAMPLES = (GREEDY_VALUE, GREEDY_RATIO, EXACT)


# --- the scripted model: answers by STAGE, per seed, with scripted behaviours ---------------

# What a seed's candidate does wrong, on purpose:
FILTER_REJECTS = "filter_rejects"  # every formulation is rejected -> formulation_rejected
LOW_DIVERGENCE = "low_divergence"  # no sample pair is distinct -> low_semantic_divergence
SAME_SAMPLES = "same_samples"  # every sample is the same program -> low execution diversity
BAD_SCORER_ONCE = "bad_scorer_once"  # the first scorer fails the self-check, the repair is right
INVALID_BASELINE_ONCE = "invalid_baseline_once"  # the first baseline answer is not JSON

_SEED = re.compile(r"\[seed (?P<id>[a-z0-9._-]+)\]")
_FIRST_SEED = re.compile(r"Seed problem (?P<id>[a-z0-9._-]+) ")
_SAMPLE = re.compile(r"independent solution (?P<i>\d+) of (?P<n>\d+)")


def _text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.get("messages", []))


def seed_of(request: dict[str, Any]) -> str:
    text = _text(request)
    match = _SEED.search(text) or _FIRST_SEED.search(text)
    return match.group("id") if match else ""


def is_repair(request: dict[str, Any]) -> bool:
    return any(m.get("role") == "assistant" for m in request.get("messages", []))


def formulation(seed_id: str) -> dict[str, str]:
    return {
        "title": f"Valuable picks under a weight cap [seed {seed_id}]",
        "mutation": "objective",
        "instruction": (
            'Input: {"items": [{"w": int, "v": int}, ...], "capacity": int}. '
            'Output: {"take": [indices]} of distinct items whose weights sum to at most '
            "capacity. Score: the value taken divided by the value of all items. "
            'Example: items [{"w":5,"v":3},{"w":4,"v":2}], capacity 5: '
            '{"take": [0]} is feasible and scores 0.6.'
        ),
        "objective": "Maximize the share of the total value that fits under the cap.",
        "feasibility": "Distinct valid indices whose weights sum to at most the capacity.",
        "score_formula": "sum of taken values / sum of all values, in [0, 1]",
        "baseline_strategy": "Take every other item while it fits.",
        "why_open_ended": "The best share depends on the instance; no fixed rule reaches it.",
    }


class KnapsackModel:
    """A StageScript for the knapsack candidate, with per-seed behaviours and per-stage hooks.

    `hold` may name (stage, seed id): that answer waits until `release` is
    set (or its delay passes), so a test can act while a request is in flight.
    """

    def __init__(self, behaviours: dict[str, str] | None = None, *, latency_s: float = 0.0) -> None:
        self.behaviours = dict(behaviours or {})
        self.latency_s = latency_s
        self.hold: tuple[str, str] | None = None
        self.held = threading.Event()
        self.release = threading.Event()
        self.script = StageScript(
            {
                "mutate": self._answer(self.mutate),
                "filter": self._answer(self.filter),
                "baseline": self._answer(self.baseline),
                "solve": self._answer(self.solve),
                "divergence": self._answer(self.divergence),
                "generator": self._answer(lambda r: {"code": GENERATOR}),
                "scorer": self._answer(self.scorer),
                "feasibility": self._answer(lambda r: {"code": FEASIBILITY}),
                "review": self._answer(self.review),
            }
        )

    def _answer(self, make: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Reply]:
        def answer(request: dict[str, Any]) -> Reply:
            stage = request["response_format"]["json_schema"]["name"]
            if self.hold == (stage, seed_of(request)):
                self.held.set()
                self.release.wait(timeout=120)
            value = make(request)
            content = value if isinstance(value, str) else json.dumps(value)
            return Reply(
                content=content, delay_s=self.latency_s, completion_tokens=400, prompt_tokens=900
            )

        return answer

    def _does(self, request: dict[str, Any], behaviour: str) -> bool:
        return self.behaviours.get(seed_of(request)) == behaviour

    def mutate(self, request: dict[str, Any]) -> dict[str, str]:
        answer = formulation(seed_of(request))
        attempt = re.search(r"Attempt (\d+)\.", _text(request))
        if attempt:  # a reworked formulation reads differently
            answer["title"] += f" (attempt {attempt.group(1)})"
        return answer

    def filter(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._does(request, FILTER_REJECTS):
            return {
                "approved": False,
                "issues": ["the score formula rewards taking nothing on empty instances"],
                "rationale": "ambiguous",
            }
        return {"approved": True, "issues": [], "rationale": "clear, feasible, open-ended"}

    def baseline(self, request: dict[str, Any]) -> Any:
        if self._does(request, INVALID_BASELINE_ONCE) and not is_repair(request):
            return "here is my program: print(1)"
        return {"strategy": "every other item while it fits", "code": BASELINE}

    def solve(self, request: dict[str, Any]) -> dict[str, str]:
        match = _SAMPLE.search(_text(request))
        index = int(match.group("i")) - 1 if match else 0
        if self._does(request, SAME_SAMPLES):
            return {"strategy": "greedy by value", "code": GREEDY_VALUE}
        return {
            "strategy": ("greedy by value", "greedy by ratio", "exhaustive")[index % 3],
            "code": SAMPLES[index % 3],
        }

    def divergence(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._does(request, LOW_DIVERGENCE):
            return {"distinct_pairs": [], "rationale": "all greedy"}
        count = len(re.findall(r"### program \d+", _text(request)))
        pairs = [[i, j] for i in range(count) for j in range(i + 1, count)]
        return {"distinct_pairs": pairs, "rationale": "different algorithms"}

    def scorer(self, request: dict[str, Any]) -> dict[str, str]:
        if self._does(request, BAD_SCORER_ONCE) and not is_repair(request):
            return {"code": BAD_SCORER}
        return {"code": SCORER}

    def review(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"approved": True, "issues": [], "rationale": "consistent"}


def seed_lines(ids: list[str]) -> str:
    """A user's seed file (JSONL) with these ids."""
    return "".join(
        json.dumps(
            {
                "id": seed_id,
                "title": f"Loading a cart ({seed_id})",
                "problem": "A cart carries at most W kilograms; parcels have weights and values. "
                "Report the largest total value of parcels that fit.",
                "source": "atoll test",
                "license": "MIT",
                "family": "packing",
            }
        )
        + "\n"
        for seed_id in ids
    )
