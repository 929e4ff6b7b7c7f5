"""`atoll tinker tiny-model`: a tiny random Qwen3-architecture model and tokenizer, built offline.

The building runs in the managed environment (transformers, tokenizers,
torch), through `managed/tiny_model.py`; this module only launches it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from atoll.pi_train import env as managed_env


def build(out: Path, seed: int, say: Callable[[str], None]) -> dict[str, Any]:
    """Write the model and tokenizer into `out`; the same seed gives the same files."""
    env = managed_env.ensure(say)
    argv = [str(env.python), str(managed_env.managed_script("tiny_model")), str(out), str(seed)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-10:])
        raise managed_env.EnvironmentUnavailable(f"building the tiny model failed:\n{tail}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
