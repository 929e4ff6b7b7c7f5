"""The `atoll` command of the tests' environment and the variable the Euler tests pass a key in.

Test modules import these from here, not from a conftest: which `conftest`
module Python finds depends on which test folders a run collects.
"""

from __future__ import annotations

import sys
from pathlib import Path

ATOLL = str(Path(sys.executable).parent / "atoll")
KEY_ENV = "ATOLL_EULER_TEST_KEY"

#: What each node of the tests' Ray cluster holds in its own environment (the driver never
#: does): the model's key under KEY_ENV, a value the tests grep Ray's logs for.
RAY_NODE_KEY = "sk-euler-ray-node-7c1f0a93e5"
RAY_NODE_ENV = {KEY_ENV: RAY_NODE_KEY}
