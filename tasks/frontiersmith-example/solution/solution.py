"""Reference plan for the beacon courtyard: lazy greedy on lit-cells-per-cost, then
deterministic drop-and-refill rounds. The best sampled feasible solution, not an optimum.
"""

import heapq
import json
import random
import sys


def coverage(rows, radius):
    height, width = len(rows), len(rows[0])
    index = {}
    for r in range(height):
        for c in range(width):
            if rows[r][c] == ".":
                index[(r, c)] = len(index)
    covers = {}
    for (r, c), own in index.items():
        cells = [own]
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            for step in range(1, radius + 1):
                rr, cc = r + dr * step, c + dc * step
                if (rr, cc) not in index:
                    break
                cells.append(index[(rr, cc)])
        covers[(r, c)] = cells
    return index, covers


def greedy(candidates, covers, cost, budget, chosen, lit):
    """Add beacons by newly lit cells per unit cost until nothing affordable helps."""
    spent = sum(cost[r][c] for r, c in chosen)
    heap = []
    for cell in candidates:
        if cell in chosen:
            continue
        gain = sum(1 for x in covers[cell] if not lit[x])
        if gain:
            heap.append((-gain / cost[cell[0]][cell[1]], cell))
    heapq.heapify(heap)
    while heap:
        ratio, cell = heapq.heappop(heap)
        price = cost[cell[0]][cell[1]]
        if spent + price > budget:
            continue
        gain = sum(1 for x in covers[cell] if not lit[x])
        if gain == 0:
            continue
        fresh = -gain / price
        if heap and fresh > heap[0][0]:
            heapq.heappush(heap, (fresh, cell))
            continue
        chosen.add(cell)
        spent += price
        for x in covers[cell]:
            lit[x] += 1
    return chosen


def count_lit(lit):
    return sum(1 for x in lit if x)


def solve(instance):
    rows, cost, radius, budget = (
        instance["rows"],
        instance["cost"],
        instance["radius"],
        instance["budget"],
    )
    index, covers = coverage(rows, radius)
    candidates = sorted(covers)
    lit = [0] * len(index)
    chosen = greedy(candidates, covers, cost, budget, set(), lit)
    best, best_lit = set(chosen), count_lit(lit)
    rng = random.Random(len(index) * 7919 + budget)
    for _ in range(300):
        trial = set(best)
        trial_lit = [0] * len(index)
        for cell in trial:
            for x in covers[cell]:
                trial_lit[x] += 1
        drop = rng.sample(sorted(trial), min(len(trial), rng.randint(1, 3))) if trial else []
        for cell in drop:
            trial.discard(cell)
            for x in covers[cell]:
                trial_lit[x] -= 1
        greedy(candidates, covers, cost, budget, trial, trial_lit)
        value = count_lit(trial_lit)
        if value > best_lit:
            best, best_lit = trial, value
    return {"beacons": [list(cell) for cell in sorted(best)]}


if __name__ == "__main__":
    print(json.dumps(solve(json.load(sys.stdin))))
