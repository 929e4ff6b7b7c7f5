"""Feasibility of a beacon plan, from the public statement alone.

A plan is feasible when it is an object with a list `beacons` of distinct [row, column]
integer pairs, each on an open cell inside the grid, whose costs add up to at most the
budget. An empty list is feasible (it lights nothing and scores 0).
"""


def is_feasible(instance, output):
    if not isinstance(output, dict):
        return False
    beacons = output.get("beacons")
    if not isinstance(beacons, list):
        return False
    rows = instance["rows"]
    height = len(rows)
    width = len(rows[0]) if rows else 0
    used = set()
    total = 0
    for pair in beacons:
        if not isinstance(pair, list) or len(pair) != 2:
            return False
        if any(isinstance(v, bool) or not isinstance(v, int) for v in pair):
            return False
        row, column = pair
        if row < 0 or row >= height or column < 0 or column >= width:
            return False
        if rows[row][column] != ".":
            return False
        if (row, column) in used:
            return False
        used.add((row, column))
        total += instance["cost"][row][column]
    return total <= instance["budget"]
