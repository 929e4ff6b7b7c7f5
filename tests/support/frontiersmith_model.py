"""A scripted model for FrontierSmith runs: a tiny knapsack task, written stage by stage.

Small on purpose: 8 instances of 6 items, so that every Harbor trial of a
test finishes in a fraction of a second, while the samples' per-case scores
still differ (greedy by value, greedy by ratio, exact search).
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
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

# Gives an empty answer half the score, plainly: the self-check's malformed-output pass finds it.
SCORER_REWARDS_EMPTY = SCORER.replace(
    "def score(instance, output):\n",
    "def score(instance, output):\n    if output == {}:\n        return 0.5\n",
)
# Scores every feasible output 1.5 (outside [0, 1]) but gives an empty answer 0: a broken scorer
# that is no no-op reward.
SCORER_OUT_OF_RANGE = SCORER.replace(
    '    return sum(instance["items"][k]["v"] for k in output["take"]) / total if total else 0.0\n',
    "    return 1.5\n",
)
# Passes every check before grading but raises on a feasible output of four items or more, which
# only the samples print (the self-check's outputs and the examples take at most two).
SCORER_RAISES_ON_FOUR = SCORER.replace(
    '    total = sum(item["v"] for item in instance["items"])\n',
    '    if len(output["take"]) >= 4:\n'
    '        raise ValueError("cannot score a selection of 4 or more items")\n'
    '    total = sum(item["v"] for item in instance["items"])\n',
)

# Skips the type check of the indices: right on every output the self-check's own pass and the
# examples hold up, it raises on a mistyped index, which construction's fuzz tries.
SCORER_TRUSTS_INDICES = SCORER.replace(
    "        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(items):\n",
    "        if not 0 <= k < len(items):\n",
)

# Stores each instance's optimum (by exhaustive search) as `best_value`, which the scorer below
# divides by: a precomputed reference answer that construction must refuse.
GENERATOR_WITH_OPTIMUM = "import itertools\n" + GENERATOR.replace(
    '        instances.append({"items": items, "capacity": rng.randint(8, 15)})\n',
    "        capacity = rng.randint(8, 15)\n"
    "        best = max(\n"
    '            sum(items[k]["v"] for k in combo)\n'
    "            for r in range(7)\n"
    "            for combo in itertools.combinations(range(6), r)\n"
    '            if sum(items[k]["w"] for k in combo) <= capacity\n'
    "        )\n"
    '        instances.append({"items": items, "capacity": capacity, "best_value": best})\n',
)
SCORER_READS_OPTIMUM = SCORER.replace(
    '    total = sum(item["v"] for item in instance["items"])\n',
    '    total = instance.get("best_value") or sum(item["v"] for item in instance["items"])\n',
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


@dataclass(frozen=True)
class TaskKit:
    """What the scripted model answers for one kind of task: the public text and the code."""

    title: str
    instruction: str
    objective: str
    feasibility_text: str
    score_formula: str
    example: tuple[str, str, float]  # the worked example: instance, output (JSON text), score
    baseline_strategy: str
    generator: str
    scorer: str
    feasibility: str
    baseline: str
    samples: tuple[str, str, str]
    strategies: tuple[str, str, str]


KNAPSACK = TaskKit(
    title="Valuable picks under a weight cap",
    instruction=(
        'Input: {"items": [{"w": int, "v": int}, ...], "capacity": int}. '
        'Output: {"take": [indices]} of distinct items whose weights sum to at most '
        "capacity. Score: the value taken divided by the value of all items. "
        'Example: items [{"w":5,"v":3},{"w":4,"v":2}], capacity 5: '
        '{"take": [0]} is feasible and scores 0.6.'
    ),
    objective="Maximize the share of the total value that fits under the cap.",
    feasibility_text="Distinct valid indices whose weights sum to at most the capacity.",
    score_formula="sum of taken values / sum of all values, in [0, 1]",
    example=(
        '{"capacity": 5, "items": [{"v": 3, "w": 5}, {"v": 2, "w": 4}]}',
        '{"take": [0]}',
        0.6,
    ),
    baseline_strategy="Take every other item while it fits.",
    generator=GENERATOR,
    scorer=SCORER,
    feasibility=FEASIBILITY,
    baseline=BASELINE,
    samples=SAMPLES,
    strategies=("greedy by value", "greedy by ratio", "exhaustive"),
)

# The knapsack hardened (a later round's task, `--rounds`): a larger instance family, nine items
# and a larger cap. Its checker and programs are the knapsack's: they read any number of items.
HARD_GENERATOR = GENERATOR.replace("for _ in range(6)]", "for _ in range(9)]").replace(
    "rng.randint(8, 15)", "rng.randint(10, 24)"
)
# Packs the items in index order while they fit: far from the others on nine items, so that the
# hardened task's samples are more diverse in execution than the knapsack's.
GREEDY_INDEX = GREEDY_VALUE.replace("-items[k]['v']", "k")
HARD_KNAPSACK = dataclasses.replace(
    KNAPSACK,
    title="Valuable picks under a weight cap, nine parcels at a time",
    instruction=KNAPSACK.instruction.replace("Input:", "Input (9 items, capacity 10 to 24):"),
    generator=HARD_GENERATOR,
    samples=(GREEDY_INDEX, GREEDY_RATIO, EXACT),
    strategies=("greedy in index order", "greedy by ratio", "exhaustive"),
)


# --- the same knapsack with C++ programs (`--language cpp`): the task's own files stay Python ---

# Reads the instance (canonical JSON: keys sorted, so each item is {"v":..,"w":..}) by key, packs
# the items in ORDER while they fit (KEEP says which it may take), prints the taken indices.
_CPP_KNAPSACK = r"""#include <algorithm>
#include <iostream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

static std::vector<long long> after(const std::string& text, const std::string& key) {
    std::vector<long long> found;
    const std::string quoted = "\"" + key + "\"";
    for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at)) {
        at += quoted.size();
        while (at < text.size() && (text[at] == ':' || text[at] == ' ')) ++at;
        found.push_back(std::stoll(text.substr(at)));
    }
    return found;
}

int main() {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    const long long cap = after(text, "capacity").at(0);
    const std::vector<long long> w = after(text, "w"), v = after(text, "v");
    const int n = static_cast<int>(w.size());
    std::vector<int> take;
    BODY
    std::sort(take.begin(), take.end());
    std::cout << "{\"take\": [";
    for (size_t i = 0; i < take.size(); ++i) std::cout << (i ? ", " : "") << take[i];
    std::cout << "]}" << std::endl;
    return 0;
}
"""
_CPP_GREEDY = """std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return KEY; });
    long long used = 0;
    for (int k : order)
        if (KEEP && used + w[k] <= cap) { take.push_back(k); used += w[k]; }"""
CPP_BASELINE = _CPP_KNAPSACK.replace(
    "BODY", _CPP_GREEDY.replace("KEY", "a < b").replace("KEEP", "k % 2 == 0")
)
CPP_GREEDY_VALUE = _CPP_KNAPSACK.replace(
    "BODY", _CPP_GREEDY.replace("KEY", "v[a] > v[b]").replace("KEEP", "true")
)
CPP_GREEDY_RATIO = _CPP_KNAPSACK.replace(
    "BODY", _CPP_GREEDY.replace("KEY", "v[a] * w[b] > v[b] * w[a]").replace("KEEP", "true")
)
CPP_EXACT = _CPP_KNAPSACK.replace(
    "BODY",
    """long long best = -1;
    for (int mask = 0; mask < (1 << n); ++mask) {
        long long weight = 0, value = 0;
        for (int k = 0; k < n; ++k)
            if (mask >> k & 1) { weight += w[k]; value += v[k]; }
        if (weight <= cap && value > best) {
            best = value;
            take.clear();
            for (int k = 0; k < n; ++k)
                if (mask >> k & 1) take.push_back(k);
        }
    }""",
)
# A sample that does not compile: the grader's crash on every case, never an error.
CPP_DOES_NOT_COMPILE = "int main() { return undeclared_total; }\n"

CPP_KNAPSACK = dataclasses.replace(
    KNAPSACK,
    baseline=CPP_BASELINE,
    samples=(CPP_GREEDY_VALUE, CPP_GREEDY_RATIO, CPP_EXACT),
)


# --- bin packing scored as a ratio to a lower bound: no feasible packing scores 0 -----------

BIN_GENERATOR = """import random


def generate(seed):
    rng = random.Random(seed)
    instances = []
    for _ in range(8):
        capacity = rng.randint(10, 20)
        sizes = [rng.randint(2, capacity - 1) for _ in range(rng.randint(8, 14))]
        instances.append({"capacity": capacity, "sizes": sizes})
    return instances


def examples():
    instance = {"capacity": 10, "sizes": [6, 5, 4]}
    return [
        {"name": "one item per bin", "instance": instance, "output": {"bins": [[0], [1], [2]]}, "feasible": True, "score": 2 / 3},
        {"name": "pairs that fit", "instance": instance, "output": {"bins": [[0, 2], [1]]}, "feasible": True, "score": 1.0},
        {"name": "overfull bin", "instance": instance, "output": {"bins": [[0, 1], [2]]}, "feasible": False, "score": 0.0},
    ]
"""

BIN_FEASIBLE = """def _feasible(instance, output):
    if not isinstance(output, dict) or set(output) != {"bins"}:
        return False
    bins, sizes = output["bins"], instance["sizes"]
    if not isinstance(bins, list) or not bins:
        return False
    seen = []
    for packed in bins:
        if not isinstance(packed, list) or not packed:
            return False
        for k in packed:
            if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(sizes):
                return False
        if sum(sizes[k] for k in packed) > instance["capacity"]:
            return False
        seen.extend(packed)
    return sorted(seen) == list(range(len(sizes)))
"""

BIN_FEASIBILITY = (
    BIN_FEASIBLE
    + """

def is_feasible(instance, output):
    return _feasible(instance, output)
"""
)

BIN_SCORER = (
    "import math\n\n"
    + BIN_FEASIBLE
    + """

def score(instance, output):
    if not _feasible(instance, output):
        return 0.0
    bound = math.ceil(sum(instance["sizes"]) / instance["capacity"])
    return bound / len(output["bins"])
"""
)

# Treats an empty answer as worth half, except while the grader's malformed-output check is
# looking: the self-check passes, and only grading an empty answer can tell.
_UNWATCHED = """import sys


def _unwatched():
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_check_malformed":
            return False
        frame = frame.f_back
    return True
"""
BIN_SCORER_REWARDS_EMPTY = _UNWATCHED + BIN_SCORER.replace(
    "def score(instance, output):\n",
    "def score(instance, output):\n    if output == {} and _unwatched():\n        return 0.5\n",
)
BIN_FEASIBILITY_ACCEPTS_EMPTY = _UNWATCHED + BIN_FEASIBILITY.replace(
    "def is_feasible(instance, output):\n",
    "def is_feasible(instance, output):\n    if output == {} and _unwatched():\n        return True\n",
)

_PACK = (
    "import json, sys\n\ninstance = json.load(sys.stdin)\nsizes, cap = instance['sizes'], "
    "instance['capacity']\nbins, loads = [], []\n"
)
NEXT_FIT = _PACK + (
    "for k, size in enumerate(sizes):\n"
    "    if not bins or loads[-1] + size > cap:\n        bins.append([]); loads.append(0)\n"
    "    bins[-1].append(k); loads[-1] += size\n"
    "print(json.dumps({'bins': bins}))\n"
)
FIRST_FIT = _PACK + (
    "for k in ORDER:\n"
    "    for b in range(len(bins)):\n"
    "        if loads[b] + sizes[k] <= cap:\n            bins[b].append(k); loads[b] += sizes[k]; break\n"
    "    else:\n        bins.append([k]); loads.append(sizes[k])\n"
    "print(json.dumps({'bins': bins}))\n"
)
BEST_FIT_DECREASING = _PACK + (
    "for k in sorted(range(len(sizes)), key=lambda k: -sizes[k]):\n"
    "    fits = [b for b in range(len(bins)) if loads[b] + sizes[k] <= cap]\n"
    "    if fits:\n"
    "        b = max(fits, key=lambda b: loads[b]); bins[b].append(k); loads[b] += sizes[k]\n"
    "    else:\n        bins.append([k]); loads.append(sizes[k])\n"
    "print(json.dumps({'bins': bins}))\n"
)

BIN_PACKING = TaskKit(
    title="Few bins for many parcels",
    instruction=(
        'Input: {"capacity": int, "sizes": [int, ...]}. Output: {"bins": [[indices], ...]}: '
        "every parcel index exactly once, each bin's sizes summing to at most capacity. "
        "Score: ceil(sum(sizes) / capacity) / len(bins), a ratio to a lower bound in (0, 1]. "
        'Example: capacity 10, sizes [6, 5, 4]: {"bins": [[0, 2], [1]]} scores 1.0.'
    ),
    objective="Pack every parcel into as few bins as possible.",
    feasibility_text="Every index once; no bin over capacity.",
    score_formula="ceil(sum(sizes) / capacity) / len(bins)",
    example=('{"capacity": 10, "sizes": [6, 5, 4]}', '{"bins": [[0, 2], [1]]}', 1.0),
    baseline_strategy="Next fit: open a new bin whenever the parcel does not fit the last one.",
    generator=BIN_GENERATOR,
    scorer=BIN_SCORER,
    feasibility=BIN_FEASIBILITY,
    baseline=NEXT_FIT,
    samples=(
        FIRST_FIT.replace("ORDER", "range(len(sizes))"),
        FIRST_FIT.replace("ORDER", "sorted(range(len(sizes)), key=lambda k: -sizes[k])"),
        BEST_FIT_DECREASING,
    ),
    strategies=("first fit", "first fit decreasing", "best fit decreasing"),
)


# --- the scripted model: answers by STAGE, per seed, with scripted behaviours ---------------

# What a seed's candidate does wrong, on purpose:
FILTER_REJECTS = "filter_rejects"  # every formulation is rejected -> formulation_rejected
LOW_DIVERGENCE = "low_divergence"  # no sample pair is distinct -> low_semantic_divergence
SAME_SAMPLES = "same_samples"  # every sample is the same program -> low execution diversity
BAD_SCORER_ONCE = "bad_scorer_once"  # the first scorer fails the self-check, the repair is right
INVALID_BASELINE_ONCE = "invalid_baseline_once"  # the first baseline answer is not JSON
REWARDS_EMPTY = "rewards_empty"  # bin packing whose scorer gives an empty answer 0.5
PLAINLY_REWARDS_EMPTY = "plainly_rewards_empty"  # knapsack scorer giving `{}` 0.5 every time
SCORER_OUT_OF_RANGE_ALWAYS = "scorer_out_of_range"  # a scorer above 1 every time, `{}` at 0
CPP_BASELINE_DOES_NOT_COMPILE = "cpp_baseline_does_not_compile"  # a C++ baseline g++ refuses
SCORER_RAISES_ONCE = "scorer_raises_once"  # the first scorer raises on a sample's output in a trial
SCORER_RAISES_ALWAYS = "scorer_raises_always"  # so does every repair of it
SCORER_FRAGILE_ONCE = "scorer_fragile_once"  # the first scorer raises on a fuzzed output
EXAMPLE_SCORE_WRONG = "example_score_wrong"  # the published example's score is not the formula's
OPTIMUM_ONCE = "optimum_once"  # the first generator stores each optimum, the first scorer reads it
HARDENS_A_CLOSED_PROBLEM = "hardens_a_closed_problem"  # the first mutate of a seed says "harden"

_SEED = re.compile(r"\[seed (?P<id>[a-z0-9._-]+)\]")
_FIRST_SEED = re.compile(r"Seed problem (?P<id>[a-z0-9._-]+) ")
_DERIVED = re.compile(r"-r\d+$")  # a later round's seed (`--rounds`): PARENT-rN
_SAMPLE = re.compile(r"independent solution (?P<i>\d+) of (?P<n>\d+)")


def _text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.get("messages", []))


def seed_of(request: dict[str, Any]) -> str:
    text = _text(request)
    # a mutate request names its seed first; a later round's quotes its parent task's title
    match = _FIRST_SEED.search(text) or _SEED.search(text)
    return match.group("id") if match else ""


def is_repair(request: dict[str, Any]) -> bool:
    return any(m.get("role") == "assistant" for m in request.get("messages", []))


def formulation(seed_id: str, kit: TaskKit = KNAPSACK) -> dict[str, Any]:
    return {
        "title": f"{kit.title} [seed {seed_id}]",
        "mutation": "objective",
        "instruction": kit.instruction,
        "objective": kit.objective,
        "feasibility": kit.feasibility_text,
        "score_formula": kit.score_formula,
        "example_instance": kit.example[0],
        "example_output": kit.example[1],
        "example_score": kit.example[2],
        "baseline_strategy": kit.baseline_strategy,
        "why_open_ended": "The best share depends on the instance; no fixed rule reaches it.",
    }


class KnapsackModel:
    """A StageScript for the knapsack candidate, with per-seed behaviours and per-stage hooks.

    `hold` may name (stage, seed id): that answer waits until `release` is
    set (or its delay passes), so a test can act while a request is in flight.
    """

    def __init__(
        self,
        behaviours: dict[str, str] | None = None,
        *,
        latency_s: float = 0.0,
        kit: TaskKit = KNAPSACK,
        derived_kit: TaskKit | None = None,
    ) -> None:
        self.kit = kit
        self.derived_kit = derived_kit  # what a later round's seeds get (default: `kit`)
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
                "generator": self._answer(self.generator),
                "scorer": self._answer(self.scorer),
                "feasibility": self._answer(self.feasibility),
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

    def _kit(self, request: dict[str, Any]) -> TaskKit:
        if self.derived_kit is not None and _DERIVED.search(seed_of(request)):
            return self.derived_kit
        return self.kit

    def _does(self, request: dict[str, Any], behaviour: str) -> bool:
        return self.behaviours.get(seed_of(request)) == behaviour

    def mutate(self, request: dict[str, Any]) -> dict[str, Any]:
        answer = formulation(seed_of(request), self._kit(request))
        if "Harden it:" in _text(request):  # a later round's seed, asked to harden its task
            answer["mutation"] = "harden"
        if self._does(request, HARDENS_A_CLOSED_PROBLEM) and not re.search(
            r"Attempt \d+\.", _text(request)
        ):
            answer["mutation"] = "harden"
        if self._does(request, EXAMPLE_SCORE_WRONG):
            answer["example_score"] = 0.7  # the formula gives 0.6
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
        if self._does(request, CPP_BASELINE_DOES_NOT_COMPILE):
            return {"strategy": self.kit.baseline_strategy, "code": CPP_DOES_NOT_COMPILE}
        kit = self._kit(request)
        return {"strategy": kit.baseline_strategy, "code": kit.baseline}

    def solve(self, request: dict[str, Any]) -> dict[str, str]:
        match = _SAMPLE.search(_text(request))
        index = int(match.group("i")) - 1 if match else 0
        kit = self._kit(request)
        if self._does(request, SAME_SAMPLES):
            return {"strategy": kit.strategies[0], "code": kit.samples[0]}
        return {"strategy": kit.strategies[index % 3], "code": kit.samples[index % 3]}

    def divergence(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._does(request, LOW_DIVERGENCE):
            return {"distinct_pairs": [], "rationale": "all greedy"}
        count = len(re.findall(r"### program \d+", _text(request)))
        pairs = [[i, j] for i in range(count) for j in range(i + 1, count)]
        return {"distinct_pairs": pairs, "rationale": "different algorithms"}

    def generator(self, request: dict[str, Any]) -> dict[str, str]:
        if self._does(request, OPTIMUM_ONCE) and not is_repair(request):
            return {"code": GENERATOR_WITH_OPTIMUM}
        return {"code": self._kit(request).generator}

    def scorer(self, request: dict[str, Any]) -> dict[str, str]:
        if self._does(request, OPTIMUM_ONCE) and not is_repair(request):
            return {"code": SCORER_READS_OPTIMUM}
        if self._does(request, BAD_SCORER_ONCE) and not is_repair(request):
            return {"code": BAD_SCORER}
        if self._does(request, REWARDS_EMPTY):
            return {"code": BIN_SCORER_REWARDS_EMPTY}
        if self._does(request, PLAINLY_REWARDS_EMPTY):
            return {"code": SCORER_REWARDS_EMPTY}
        if self._does(request, SCORER_OUT_OF_RANGE_ALWAYS):
            return {"code": SCORER_OUT_OF_RANGE}
        if self._does(request, SCORER_FRAGILE_ONCE) and not is_repair(request):
            return {"code": SCORER_TRUSTS_INDICES}
        if self._does(request, SCORER_RAISES_ALWAYS) or (
            self._does(request, SCORER_RAISES_ONCE) and not is_repair(request)
        ):
            return {"code": SCORER_RAISES_ON_FOUR}
        return {"code": self._kit(request).scorer}

    def feasibility(self, request: dict[str, Any]) -> dict[str, str]:
        if self._does(request, REWARDS_EMPTY):
            return {"code": BIN_FEASIBILITY_ACCEPTS_EMPTY}
        return {"code": self._kit(request).feasibility}

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


def cart_bundle_spec(contract: Any, seed_id: str, **extra: Any) -> Any:
    """The cart task as a `BundleSpec` solved exactly, its contract given the generator's examples.

    For tests that write a bundle with the real bundle writer without running a campaign.
    """
    from atoll.checker import Contract
    from atoll.frontiersmith.bundle import BundleSpec

    namespace: dict[str, Any] = {}
    exec(GENERATOR, namespace)
    return BundleSpec(
        name="cart",
        title="Valuable picks under a weight cap",
        summary="Maximize the share of value under the cap.",
        statement="Take items under the cap.",
        solution=EXACT,
        generator=GENERATOR,
        scorer=SCORER,
        feasibility=FEASIBILITY,
        contract=Contract.from_json(contract.to_json() | {"examples": namespace["examples"]()}),
        mutation="objective",
        seed_lineage={"seed_id": seed_id},
        **extra,
    )
