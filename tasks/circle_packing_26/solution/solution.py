"""Seed: equal circles on a square grid, one per cell, row by row.

The smallest square grid with a cell for every circle has k = ceil(sqrt(n))
cells a side; each circle gets radius 1/(2k) at its cell's centre, touching
its neighbours and the sides. The cells left over stay empty.
"""

import json
import math

import numpy as np

CIRCLES = 26

side = math.isqrt(CIRCLES - 1) + 1  # ceil(sqrt(CIRCLES))
radius = 1.0 / (2 * side)
centres = (2 * np.arange(side) + 1) * radius
circles = [
    [float(centres[index % side]), float(centres[index // side]), radius]
    for index in range(CIRCLES)
]
print(json.dumps({"circles": circles}))
