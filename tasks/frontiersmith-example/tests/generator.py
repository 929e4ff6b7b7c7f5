"""Courtyards to light: walled grids with a beacon cost per open cell, a beam radius and a budget.

Standard library only; every random choice comes from one local random.Random(seed).
"""

import random


def _courtyard(rng, index):
    height = rng.randint(12, 36)
    width = rng.randint(12, 36)
    density = rng.uniform(0.12, 0.28)
    radius = rng.randint(2, 6)
    rows = [["#" if rng.random() < density else "." for _ in range(width)] for _ in range(height)]
    # A few long walls with gaps make beams stop early and reward careful placement.
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.5:
            r = rng.randrange(height)
            for c in range(width):
                rows[r][c] = "#" if rng.random() > 0.15 else "."
        else:
            c = rng.randrange(width)
            for r in range(height):
                rows[r][c] = "#" if rng.random() > 0.15 else "."
    # Costs rise towards one side of the courtyard (stony ground costs more to dig in).
    slope_r, slope_c = rng.uniform(-0.15, 0.15), rng.uniform(-0.15, 0.15)
    cost = []
    open_cells = 0
    total_cost = 0
    for r in range(height):
        line = []
        for c in range(width):
            if rows[r][c] == "#":
                line.append(0)
                continue
            base = 5 + slope_r * (r - height / 2) + slope_c * (c - width / 2)
            value = max(1, min(9, round(base + rng.uniform(-3, 3))))
            line.append(value)
            open_cells += 1
            total_cost += value
        cost.append(line)
    # About enough money to light a third to two thirds of the yard with perfect beams.
    reach = 4 * radius + 1
    mean_cost = total_cost / max(1, open_cells)
    budget = max(1, round(open_cells / reach * mean_cost * rng.uniform(0.35, 0.7)))
    return {
        "name": f"courtyard-{index}",
        "rows": ["".join(row) for row in rows],
        "cost": cost,
        "radius": radius,
        "budget": budget,
    }


def generate(seed):
    rng = random.Random(seed)
    count = rng.randint(10, 14)
    return [_courtyard(rng, index) for index in range(count)]
