"""Helpers shared by the polyomino task tests."""

from __future__ import annotations

import os


def run_env(**extra: str) -> dict[str, str]:
    """This process's environment for a child `atoll run`, without look-ups it cannot make."""
    env = dict(os.environ)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no model price list from the internet
    env["TERM"] = "dumb"
    env.update(extra)
    return env
