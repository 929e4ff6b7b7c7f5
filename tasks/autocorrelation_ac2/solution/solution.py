"""Seed: 100 equal heights, the constant step function.

Its autoconvolution is a triangle, whose squared L2 norm is a third of its
height squared times its base, its L1 norm half its height times its base and
its maximum its height: the ratio is (1/3) / (1/2) = 2/3.
"""

import json

import numpy as np

STEPS = 100

heights = np.ones(STEPS)
print(json.dumps({"heights": heights.tolist()}))
