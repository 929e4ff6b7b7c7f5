"""How a job's agents find Reef: the environment variables and the default address.

The stack sets these variables for a job, agents and `atoll doctor` read
them, and an agent's config falls back on the default address; they are
named here once so that every side agrees. A variable set to blanks counts
as unset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: Reef's base URL; a stack job plugin sets it, and a Reef it names is used as it is.
URL_ENV = "REEF_URL"
#: The bearer token Reef accepts; never written to disk.
TOKEN_ENV = "REEF_TOKEN"
#: Reef's run directory, whose runtime files name the Ray cluster its trainer joined.
RUN_DIR_ENV = "REEF_RUN_DIR"
#: A Reef source checkout (its `recipes/` cookbook), which a training stack needs.
HOME_ENV = "REEF_HOME"

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8900
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"


def named_url(environ: Mapping[str, str] | None = None) -> str | None:
    """The URL `REEF_URL` names, without a trailing slash; None when unset or blank."""
    value = _named(URL_ENV, environ)
    return value.rstrip("/") if value else None


def named_token(environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer token `REEF_TOKEN` holds; None when unset or blank."""
    return _named(TOKEN_ENV, environ)


def url(environ: Mapping[str, str] | None = None) -> str:
    """The Reef to talk to: the one `REEF_URL` names, else the default address."""
    return named_url(environ) or DEFAULT_URL


def _named(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name, "").strip()
    return value or None
