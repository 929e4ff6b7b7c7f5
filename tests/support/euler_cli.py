"""The `atoll` command of the tests' environment and the variable the Euler tests pass a key in.

Test modules import these from here, not from a conftest: which `conftest`
module Python finds depends on which test folders a run collects.
"""

from __future__ import annotations

import sys
from pathlib import Path

ATOLL = str(Path(sys.executable).parent / "atoll")
KEY_ENV = "ATOLL_EULER_TEST_KEY"
