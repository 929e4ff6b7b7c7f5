"""Keeping credentials out of what a run shows: the trial's trajectory and the run explorer.

A run's state directory holds no credential by design (keys are read from
the environment and never written), but what the models said is shown
whole, and a model can repeat anything its endpoint or a user put in front
of it. So whatever is rendered for people to read is passed through
`redact` first: the values of the environment's credential variables (API
keys, tokens, secrets, passwords) and the user part of URLs are replaced by
a marker wherever they occur.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MARKER = "[redacted]"
# Environment variables whose names say they hold a credential (OPENAI_API_KEY, REEF_TOKEN,
# TINKER_API_KEY, HF_TOKEN, ...), matched on whole name parts.
_CREDENTIAL_NAME = re.compile(
    r"(^|_)(KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)(_|$)", re.IGNORECASE
)
# Shorter values are too common to be told from ordinary text (and too weak to be keys).
MIN_SECRET_LENGTH = 8
# `scheme://user:password@host`: the user part of a URL.
_URL_USER = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s]+@", re.IGNORECASE)


def secret_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values of `environ`'s credential variables, longest first (so none hides another)."""
    found = {
        value
        for name, value in environ.items()
        if _CREDENTIAL_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
    }
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


def redact_text(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, MARKER)
    return _URL_USER.sub(lambda m: f"{m.group('scheme')}{MARKER}@", text)


def redact(value: Any, secrets: tuple[str, ...]) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string redacted."""
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, Mapping):
        return {key: redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item, secrets) for item in value]
    return value
