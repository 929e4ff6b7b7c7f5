"""The score is the number the program printed, if it is one in [0, 1]."""

import math


def score(instance, output):
    if not isinstance(output, dict) or set(output) != {"x"}:
        return 0.0
    x = output["x"]
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return 0.0
    return float(x) if 0 <= x <= 1 else 0.0
