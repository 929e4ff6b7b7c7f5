"""Waiting for a service's health endpoint, with a deadline and one progress line.

A stack that is still loading a model and a stack whose process died look the
same from `/healthz` alone, so the wait also watches the processes it started
and stops early, with the log's last lines, when one of them exits.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
from rich.console import Console

from atoll.stack.errors import StackError


def healthy(url: str, path: str = "/healthz", timeout: float = 2.0) -> bool:
    """Whether `url` answers `path` with 200 right now."""
    try:
        response = httpx.get(url.rstrip("/") + path, timeout=timeout)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def is_reef(url: str, timeout: float = 2.0) -> bool:
    """Whether a Reef server answers at `url` (its `/healthz` says `{"ok": true}`)."""
    try:
        response = httpx.get(url.rstrip("/") + "/healthz", timeout=timeout)
        return response.status_code == 200 and response.json().get("ok") is True
    except (httpx.HTTPError, ValueError, AttributeError):
        return False


def wait_healthy(
    name: str,
    url: str,
    deadline_s: float,
    still_running: Callable[[], bool],
    last_lines: Callable[[], str],
    console: Console,
    path: str = "/healthz",
) -> float:
    """Poll until healthy; raise `StackError` on exit or deadline. Returns the seconds waited."""
    started = time.monotonic()
    with console.status(f"waiting for {name} at {url}") as status:
        while True:
            waited = time.monotonic() - started
            if healthy(url, path):
                return waited
            if not still_running():
                raise StackError(
                    f"{name} exited before it became healthy; last log lines: {_one_line(last_lines())}"
                )
            if waited > deadline_s:
                raise StackError(
                    f"{name} did not become healthy at {url}{path} within {deadline_s:g} s; "
                    f"last log lines: {_one_line(last_lines())}"
                )
            status.update(f"waiting for {name} at {url} ({waited:.0f} s of {deadline_s:.0f} s)")
            time.sleep(0.25)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-8:]) or "(log is empty)"
