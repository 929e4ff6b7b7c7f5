"""What `atoll doctor` says about training=tinker: the trainer's environment, the key, the service.

A missing piece is not a failure of the machine (training=tinker is one of
three modes), so each gap is a warning that names the fix; the key itself is
never shown, only whether it is set.
"""

from __future__ import annotations

import importlib.util
import os

from atoll.core.doctor import Finding

NAME = "tinker-training"


def check_tinker_training() -> Finding:
    if importlib.util.find_spec("atoll.pi_train") is None:
        return Finding(
            NAME,
            False,
            "atoll-pi-train (the managed Tinker environment) is not installed",
            "`pip install 'atoll-guidance-ttt[tinker]'`",
            warning=True,
        )
    from atoll.pi_train import default_tinker_url, installed_managed_env, managed_env_dir

    if installed_managed_env() is None:
        return Finding(
            NAME,
            False,
            f"the managed Tinker environment is not built ({managed_env_dir()})",
            "`atoll tinker install` (a training=tinker run also builds it on first use)",
            warning=True,
        )
    if not os.environ.get("TINKER_API_KEY"):
        return Finding(
            NAME,
            False,
            "TINKER_API_KEY is not set",
            'export your Tinker key, or `eval "$(atoll tinker local up --print-env)"` for the '
            "local server",
            warning=True,
        )
    return Finding(NAME, True, f"key set; Tinker service {default_tinker_url()}", "")
