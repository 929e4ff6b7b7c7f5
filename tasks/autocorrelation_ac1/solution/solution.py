"""Seed: 100 equal heights, the constant step function on [-1/4, 1/4].

Its autoconvolution is a triangle whose peak, 100, is reached in the middle,
and the sum of the heights is 100, so the bound is 2 * 100 * 100 / 100^2 = 2.
"""

import json

import numpy as np

STEPS = 100

heights = np.ones(STEPS)
print(json.dumps({"heights": heights.tolist()}))
