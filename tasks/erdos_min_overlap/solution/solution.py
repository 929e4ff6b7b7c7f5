"""Seed: the constant step function h = 1/2 on 200 equal steps of [0, 2].

Its integral is already 1, so the verifier does not rescale it, and its overlap
with 1 - h is largest at shift 0, where it is 1/2 * 1/2 * 2 = 1/2.
"""

import json

import numpy as np

STEPS = 200

h = np.full(STEPS, 0.5)
print(json.dumps({"h": h.tolist()}))
