"""Feasible: an object {"x": v} with v a number in [0, 1]."""

import math


def is_feasible(instance, output):
    if not isinstance(output, dict) or set(output) != {"x"}:
        return False
    x = output["x"]
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    return math.isfinite(x) and 0 <= x <= 1
