"""Baseline plan for the beacon courtyard: cheapest open cells first, in reading order, while
the budget lasts. Simple on purpose: the reference is measured against it.
"""

import json
import sys


def main():
    task = json.load(sys.stdin)
    rows, cost, left = task["rows"], task["cost"], task["budget"]
    cells = [
        (cost[r][c], r, c)
        for r, row in enumerate(rows)
        for c, cell in enumerate(row)
        if cell == "."
    ]
    beacons = []
    for price, r, c in sorted(cells):
        if price > left:
            break
        beacons.append([r, c])
        left -= price
    print(json.dumps({"beacons": beacons}))


main()
