"""Score of a beacon plan: the share of open cells it lights (0 for anything infeasible).

Recomputed from the instance alone; never runs the submission.
"""


def _cells(instance, output):
    """The beacon cells of a feasible plan, or None."""
    if not isinstance(output, dict) or "beacons" not in output:
        return None
    beacons = output["beacons"]
    rows = instance["rows"]
    cost = instance["cost"]
    if not isinstance(beacons, list) or len(beacons) > len(rows) * len(rows[0]):
        return None
    seen = set()
    spent = 0
    for item in beacons:
        if not isinstance(item, list) or len(item) != 2:
            return None
        r, c = item
        if type(r) is not int or type(c) is not int:
            return None
        if not (0 <= r < len(rows) and 0 <= c < len(rows[0])) or rows[r][c] != ".":
            return None
        if (r, c) in seen:
            return None
        seen.add((r, c))
        spent += cost[r][c]
    if spent > instance["budget"]:
        return None
    return seen


def score(instance, output):
    cells = _cells(instance, output)
    if cells is None:
        return 0.0
    rows = instance["rows"]
    radius = instance["radius"]
    height, width = len(rows), len(rows[0])
    lit = set()
    for r, c in cells:
        lit.add((r, c))
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            for step in range(1, radius + 1):
                rr, cc = r + dr * step, c + dc * step
                if not (0 <= rr < height and 0 <= cc < width) or rows[rr][cc] != ".":
                    break
                lit.add((rr, cc))
    open_cells = sum(row.count(".") for row in rows)
    return len(lit) / open_cells if open_cells else 0.0
