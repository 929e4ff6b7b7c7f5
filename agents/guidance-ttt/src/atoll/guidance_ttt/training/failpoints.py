"""Named crash points of the training barrier, for crash-consistency tests.

A run must resume correctly whatever instant it is killed at, and the
instants that matter most for training are between two durable writes, where
a kill by chance almost never lands. A test names one of them in
`ATOLL_GUIDANCE_TTT_FAILPOINT` as `<point>:<step>`; when the run reaches it
the process kills itself with SIGKILL, exactly as a crash would stop it.
Unset (always, outside tests), a failpoint is one environment lookup. The
Tinker policy server reads the same variable for its own points
(`policy-after-optim-step`, `policy-after-save`).
"""

from __future__ import annotations

import os
import signal

VARIABLE = "ATOLL_GUIDANCE_TTT_FAILPOINT"
# After the step's checkpoint row is durable, before the archive is committed.
AFTER_CHECKPOINT_ROW = "barrier-after-checkpoint-row"


def reached(point: str, step: int) -> None:
    """SIGKILL this process if the test named this point and step."""
    if os.environ.get(VARIABLE) == f"{point}:{step}":
        os.kill(os.getpid(), signal.SIGKILL)
