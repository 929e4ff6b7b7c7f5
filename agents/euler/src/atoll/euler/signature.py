"""The model signature: what makes two runs the same system under test.

Pi is the system under test, so the signature covers the model (its name and
the revision the user declares, e.g. an adapter checkpoint the endpoint
serves under an unchanged name), the thinking level, the system prompt, the
tools and the exact Pi and extension. It leaves out the endpoint's address
and the run's limits, which change between machines without changing the
system. The curriculum resets consecutive passes when it changes.
"""

from __future__ import annotations

import hashlib
from typing import Any

from atoll.core.durable import canonical_json


def components(settings: Any, model_revision: str | None) -> dict[str, Any]:
    from atoll.pi.rollout import PI_VERSION, TOOLS, extension_sha256, lock_sha256

    text = settings.system_prompt_text()
    return {
        "model": settings.model,
        "model_revision": model_revision,
        "thinking": settings.thinking,
        "system_prompt_sha256": None if text is None else hashlib.sha256(text.encode()).hexdigest(),
        "tools": list(TOOLS),
        "pi_version": PI_VERSION,
        "pi_lock_sha256": lock_sha256(),
        "extension_sha256": extension_sha256(),
    }


def of(settings: Any, model_revision: str | None) -> tuple[str, dict[str, Any]]:
    parts = components(settings, model_revision)
    return hashlib.sha256(canonical_json(parts)).hexdigest(), parts
