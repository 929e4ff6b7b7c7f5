"""What `atoll doctor` says about the managed Tinker environment and the local server."""

from __future__ import annotations

from atoll.core.doctor import Finding
from atoll.pi_train import env


def check_tinker_env() -> Finding:
    present = env.installed()
    if present is None:
        return Finding(
            "tinker-env",
            False,
            f"not installed in {env.env_dir()}",
            "`atoll tinker install` (`atoll tinker local up` and `atoll pi train` also do on first use)",
        )
    return Finding("tinker-env", True, f"Python {env.PYTHON_VERSION} at {present.root}", "")
