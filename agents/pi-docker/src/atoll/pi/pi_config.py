"""Pi's private configuration directory for one run: the model as a custom provider.

Pi reads `models.json` and `settings.json` from `PI_CODING_AGENT_DIR`. The
provider entry's `apiKey` is the *name* of the environment variable holding
the key (Pi resolves it from its own environment at request time), so the key
is never written here. Settings turn off everything that would reach the
network besides the model (version checks, install telemetry) and Pi's
agent-level retry, which would re-run a failed turn: a provider error ends the
run as an infrastructure error instead. The hash of both files and of Pi's
argument list is the run's config hash.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.pi.settings import PiSettings

PROVIDER = "atoll"


@dataclass(frozen=True)
class PiConfig:
    directory: Path
    models: dict[str, Any]
    settings: dict[str, Any]

    def sha256(self, argv: list[str]) -> str:
        """One hash over models.json, settings.json and Pi's arguments (no paths, no prompt)."""
        payload = {"models": self.models, "settings": self.settings, "argv": argv}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def models_json(settings: PiSettings) -> dict[str, Any]:
    reasoning = settings.thinking not in (None, "off")
    model: dict[str, Any] = {
        "id": settings.model,
        "name": settings.model,
        "reasoning": reasoning,
        "input": ["text"],
        "contextWindow": settings.context_window,
        "maxTokens": settings.max_tokens,
        "cost": {
            "input": settings.input_cost_per_mtok,
            "output": settings.output_cost_per_mtok,
            "cacheRead": 0,
            "cacheWrite": 0,
        },
    }
    return {
        "providers": {
            PROVIDER: {
                "baseUrl": settings.base_url,
                "api": "openai-completions",
                "apiKey": settings.api_key_env,  # a variable's name: Pi reads its value
                "models": [model],
            }
        }
    }


def settings_json(settings: PiSettings) -> dict[str, Any]:
    return {
        "defaultProvider": PROVIDER,
        "defaultModel": settings.model,
        "quietStartup": True,
        "enableInstallTelemetry": False,
        "retry": {
            "enabled": False,
            "provider": {
                "maxRetries": settings.provider_retries,
                "timeoutMs": int(settings.timeout_s * 1000),
            },
        },
    }


def write(directory: Path, settings: PiSettings) -> PiConfig:
    """Fill `directory` (created private) with the run's models.json and settings.json."""
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    config = PiConfig(directory, models_json(settings), settings_json(settings))
    (directory / "models.json").write_text(json.dumps(config.models, indent=2) + "\n")
    (directory / "settings.json").write_text(json.dumps(config.settings, indent=2) + "\n")
    return config
