"""Whether a host or URL names this machine's loopback, without asking a resolver.

Untrusted code must never be sent off the machine: the sandbox service binds
loopback only, and its callers refuse any other address. A host name other
than `localhost` is refused rather than resolved, since what a name resolves
to can change between the check and the connection.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


class NotLoopbackError(ValueError):
    """An address that is not this machine's loopback, where only loopback is allowed."""


def is_loopback_host(host: str) -> bool:
    """True for `localhost`, 127.0.0.0/8 and ::1 (with or without brackets)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def require_loopback_url(url: str) -> str:
    """`url` unchanged if it is an http(s) URL on loopback, else NotLoopbackError naming the fix."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        host = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise NotLoopbackError(f"not an http URL: {url!r}; give one like http://127.0.0.1:8080")
    if not is_loopback_host(host):
        raise NotLoopbackError(
            f"the sandbox URL {url!r} is not on loopback: untrusted code is only sent to a "
            "sandbox on this machine (127.0.0.1, ::1 or localhost)"
        )
    return url
