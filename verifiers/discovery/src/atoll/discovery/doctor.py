"""What `atoll doctor` says about numpy for the python3 the discovery tasks' candidates run with.

Under `atoll-local` a trial uses the host's system directories, so the
candidate's `python3` (the first on /usr/local/bin:/usr/bin:/bin, as the
verifier's sandbox looks it up) must import numpy; the tasks' Docker image
installs Debian's `python3-numpy` itself.
"""

from __future__ import annotations

import shutil
import subprocess

from atoll.core.doctor import Finding

CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"  # the grader's, where the candidate's python3 is
FIX = "`apt-get install -y python3-numpy` (atoll-local trials use the host's python3)"


def check_numpy() -> Finding:
    python = shutil.which("python3", path=CHILD_PATH)
    if python is None:
        return Finding("python3-numpy", False, f"no python3 on {CHILD_PATH}", FIX)
    try:
        done = subprocess.run(
            [python, "-I", "-c", "import numpy; print(numpy.__version__)"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Finding("python3-numpy", False, f"{python} does not run: {exc}", FIX)
    if done.returncode != 0:
        return Finding("python3-numpy", False, f"{python} cannot import numpy", FIX)
    return Finding("python3-numpy", True, f"numpy {done.stdout.strip()} for {python}", "")
