"""Debian's Chromium, headless, driven over the DevTools protocol on a pipe.

`--remote-debugging-pipe` makes Chromium read protocol commands from file
descriptor 3 and write answers and events to descriptor 4, each message a
JSON text ended by a NUL byte, so a test can open a page, click it as a
person would (mouse events at an element's place on screen), read the DOM,
collect every console message and network request, and take a screenshot,
with the standard library alone and no port opened.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Flags that keep a headless Chromium to itself: no sandbox (the tests run as root), no GPU,
# nothing fetched in the background, a fresh profile.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


def executable() -> str | None:
    """Debian's `chromium`, if installed."""
    return shutil.which("chromium")


class BrowserError(RuntimeError):
    """Chromium answered a command with an error, went away, or did not answer in time."""


class Page:
    """One tab, attached through a flat session."""

    def __init__(self, browser: Chromium, session: str) -> None:
        self.browser = browser
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, session=self.session)

    def navigate(self, url: str, timeout_s: float = 30.0) -> None:
        """Load `url` and wait for its load event."""
        self.browser.events.clear()
        self.call("Page.navigate", {"url": url})
        self.browser.wait_for("Page.loadEventFired", timeout_s, session=self.session)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception is a BrowserError)."""
        answer = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression!r} threw: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def click(self, selector: str) -> None:
        """A left click at the middle of the first element `selector` finds, as a mouse makes it."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
        )
        if box is None:
            raise BrowserError(f"nothing on the page matches {selector!r}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            event = {"type": kind, "x": box["x"], "y": box["y"], "button": "left"}
            if kind != "mouseMoved":
                event["clickCount"] = 1
            self.call("Input.dispatchMouseEvent", event)

    def screenshot(self, path: Path) -> Path:
        shot = self.call("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def console_errors(self) -> list[str]:
        """Every error the page reported: console errors, uncaught exceptions, log errors (a
        refused Content-Security-Policy or a failed load among them)."""
        found = []
        for event in self.browser.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a)) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                found.append(str(params.get("exceptionDetails")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(str(params["entry"].get("text")))
        return found

    def requests(self) -> list[str]:
        """The URL of every request the page made since it was loaded."""
        return [
            e["params"]["request"]["url"]
            for e in self.browser.events
            if e.get("method") == "Network.requestWillBeSent"
        ]


class Chromium:
    """A running headless Chromium; use `launch` to start one for a block."""

    def __init__(self, process: subprocess.Popen[bytes], commands: int, answers: int) -> None:
        self.process = process
        self._commands = commands
        self._answers = answers
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout_s: float = 30.0,
    ) -> dict[str, Any]:
        self._next_id += 1
        number = self._next_id
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self._receive(deadline, method)
            if answer.get("id") == number:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return dict(answer.get("result", {}))
            self.events.append(answer)

    def wait_for(self, event: str, timeout_s: float, *, session: str | None = None) -> None:
        deadline = time.monotonic() + timeout_s
        seen = lambda e: e.get("method") == event and e.get("sessionId") == session  # noqa: E731
        if any(seen(e) for e in self.events):
            return
        while True:
            message = self._receive(deadline, event)
            self.events.append(message)
            if seen(message):
                return

    def open_page(self) -> Page:
        """A new blank tab with console, log, page and network events on."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        page = Page(self, session["sessionId"])
        for domain in ("Runtime", "Log", "Page", "Network"):
            page.call(f"{domain}.enable")
        page.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
        )
        return page

    def _receive(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no answer to {waiting_for} in time")
            ready, _, _ = select.select([self._answers], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                raise BrowserError(f"Chromium went away while waiting for {waiting_for}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(message))


@contextlib.contextmanager
def launch(profile: Path) -> Iterator[Chromium]:
    """A headless Chromium with a fresh profile in `profile`, closed (or killed) at the end;
    its output goes to `<profile>.log`."""
    binary = executable()
    if binary is None:
        raise BrowserError("Debian's chromium is not installed")
    profile.mkdir(parents=True, exist_ok=True)
    log = open(profile.with_name(profile.name + ".log"), "wb")  # noqa: SIM115 (closed below)
    to_browser, commands = os.pipe()
    answers, from_browser = os.pipe()

    # A small Python puts our pipes on Chromium's descriptors 3 (commands) and 4 (answers).
    wiring = (
        "import os, sys\n"
        f"r, w = os.dup({to_browser}), os.dup({from_browser})\n"
        "os.dup2(r, 3)\nos.dup2(w, 4)\n"
        "os.set_inheritable(3, True)\nos.set_inheritable(4, True)\n"
        "os.execv(sys.argv[1], sys.argv[1:])\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", wiring, binary, *FLAGS, f"--user-data-dir={profile}"],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        pass_fds=(to_browser, from_browser),
        start_new_session=True,
    )
    os.close(to_browser)
    os.close(from_browser)
    browser = Chromium(process, commands, answers)
    try:
        yield browser
    finally:
        with contextlib.suppress(BrowserError, OSError):
            browser.call("Browser.close", timeout_s=10)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=15)
        os.close(commands)
        os.close(answers)
        log.close()
