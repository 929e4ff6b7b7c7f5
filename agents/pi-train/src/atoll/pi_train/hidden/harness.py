"""Score a submitted `solve` on an instance's hidden cases, revealing only how many passed.

The harness appends one call per hidden case after the submitted function
and sends the whole program to a SandboxFusion-compatible sandbox on
loopback (SandboxFusion's own client, `run_code`). Each call prints its
result after a marker drawn fresh for that call from a secure random source,
so output the submission prints itself cannot pass for a result: a marker it
forges (it may read its own source) either duplicates the real one, which
rejects the whole submission, or stands alone with a value it had to compute
anyway. A call whose marker never appears (a crash, a time-out) has failed.

Expected values never enter the sandbox: the program holds only arguments and
markers, and the comparison happens here. What comes back to the caller is
`passed`, `total` and whose failure it was; the submission's output, its
error text and the transport's details are dropped, so the score is all a
policy can learn from a check.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Literal

from sandbox_fusion import RunCodeRequest, run_code  # type: ignore[import-untyped]

from atoll.core.sandbox.fusion import require_loopback_url
from atoll.pi_train.hidden.families import LANGUAGES, Case, Instance

log = logging.getLogger(__name__)

# sandbox-fusion's client logs each retry and its give-up with the sandbox's reply in
# the message; those details must not reach a policy's log or a reward's caller.
logging.getLogger("sandbox_fusion").addHandler(logging.NullHandler())
logging.getLogger("sandbox_fusion").propagate = False

DEFAULT_RUN_TIMEOUT_S = 6.0
_SANDBOX_LANGUAGE = {"python": "python", "javascript": "nodejs"}
_ATTEMPTS = 3  # transport retries on loopback; a run is deterministic, so a repeat is harmless
MAX_CODE_BYTES = 1 << 20  # far above any solve(); a sandbox refuses much larger requests
_MAX_DIGITS = 400  # longer "numbers" are not results of these families
_DECIMAL = re.compile(rf"-?[0-9]{{1,{_MAX_DIGITS}}}")

Failure = Literal["submission", "infrastructure"]


@dataclass(frozen=True)
class CheckResult:
    """All a reward sees of a check: counts, and whose failure a shortfall was."""

    passed: int
    total: int
    failure: Failure | None  # None: every case passed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def check_submission(
    code: str,
    language: str,
    instance: Instance,
    sandbox_url: str,
    *,
    run_timeout_s: float = DEFAULT_RUN_TIMEOUT_S,
) -> CheckResult:
    """Run `code` (defining `solve`) on `instance`'s hidden cases in the sandbox at `sandbox_url`.

    Raises NotLoopbackError (a ValueError) for a sandbox URL off this machine and
    ValueError for a language without a driver; neither is a score.
    """
    require_loopback_url(sandbox_url)
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; choose one of: {', '.join(LANGUAGES)}")
    cases = instance.cases
    if not _sendable(code):  # the sandbox would refuse it: the submission's failure, not its
        return CheckResult(0, len(cases), "submission")
    markers = new_markers(len(cases))
    program = build_program(code, language, [c.args for c in cases], markers)
    request = RunCodeRequest(
        code=program,
        language=_SANDBOX_LANGUAGE[language],
        run_timeout=run_timeout_s,
        stdin="",
    )
    try:
        response = run_code(
            request,
            endpoint=sandbox_url,
            max_attempts=_ATTEMPTS,
            # Room to wait for a free worker behind a trainer's other checks, not only to run.
            client_timeout=run_timeout_s * 10 + 30,
        )
        stdout = response.run_result.stdout if response.run_result is not None else None
    except Exception as exc:  # the client raises bare Exception for every transport failure
        log.debug("sandbox request failed: %s", type(exc).__name__)
        return CheckResult(0, len(cases), "infrastructure")
    if stdout is None:  # a response without a run: not something a program can cause
        return CheckResult(0, len(cases), "infrastructure")
    passed = score_output(stdout, markers, cases)
    return CheckResult(passed, len(cases), None if passed == len(cases) else "submission")


def _sendable(code: str) -> bool:
    """Whether `code` is text a sandbox accepts: valid UTF-8, within the size bound."""
    try:
        return len(code.encode("utf-8")) <= MAX_CODE_BYTES
    except UnicodeEncodeError:  # a lone surrogate
        return False


def new_markers(count: int) -> list[str]:
    """One unguessable, distinct marker per call (128 bits each)."""
    markers: list[str] = []
    while len(markers) < count:
        marker = f"@{secrets.token_hex(16)}"
        if marker not in markers:
            markers.append(marker)
    return markers


def score_output(stdout: str, markers: list[str], cases: tuple[Case, ...]) -> int:
    """How many cases the output proves passed; 0 when any marker appears more than once."""
    wanted = set(markers)
    seen: Counter[str] = Counter()
    values: dict[str, str] = {}
    for line in stdout.splitlines():
        marker, _, text = line.strip().partition(" ")
        if marker in wanted:
            seen[marker] += 1
            values[marker] = text.strip()
    if any(count > 1 for count in seen.values()):
        return 0
    passed = 0
    for marker, case in zip(markers, cases, strict=True):
        value = values.get(marker)
        if value is not None and _DECIMAL.fullmatch(value) and int(value) == case.expected:
            passed += 1
    return passed


def build_program(
    code: str, language: str, calls: list[tuple[Any, ...]], markers: list[str]
) -> str:
    """The submission, then a driver that calls `solve` once per argument tuple.

    Each call's own output is silenced; its result is written straight to
    standard output after a blank line (so that a half line the submission
    left cannot swallow it) as `<marker> <decimal>`, or `<marker> !error`
    / `<marker> !type` when it raised or returned something else.
    """
    if language == "python":
        return (
            code
            + _PYTHON_DRIVER
            + "".join(
                f"_atoll_report({m!r}, lambda: solve({_py_args(a)}))\n"
                for m, a in zip(markers, calls, strict=True)
            )
        )
    if language == "javascript":
        body = "".join(
            f"  report({_js_string(m)}, () => solve({_js_args(a)}));\n"
            for m, a in zip(markers, calls, strict=True)
        )
        return code + _JS_DRIVER_HEAD + body + "})();\n"
    raise ValueError(f"unknown language {language!r}; choose one of: {', '.join(LANGUAGES)}")


def _py_args(args: tuple[Any, ...]) -> str:
    return ", ".join(repr(a) for a in args)


def _js_args(args: tuple[Any, ...]) -> str:
    return ", ".join(_js_value(a) for a in args)


def _js_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_js_value(v) for v in value) + "]"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= 2**53 - 1:
        return str(value)
    raise ValueError(f"no exact JavaScript Number for argument {value!r}")


def _js_string(text: str) -> str:
    return '"' + text + '"'  # markers are "@" and hex digits


_PYTHON_DRIVER = """

# --- hidden calls, appended by the checker ---
import os as _atoll_os
import sys as _atoll_sys


def _atoll_report(marker, call):
    saved = _atoll_sys.stdout, _atoll_sys.stderr
    try:
        with open(_atoll_os.devnull, "w") as sink:
            _atoll_sys.stdout = _atoll_sys.stderr = sink
            try:
                value = call()
            finally:
                _atoll_sys.stdout, _atoll_sys.stderr = saved
        if isinstance(value, int) and not isinstance(value, bool):
            text = int.__repr__(value)
        else:
            text = "!type"
    except BaseException:
        text = "!error"
    _atoll_os.write(1, ("\\n" + marker + " " + text + "\\n").encode())


"""

_JS_DRIVER_HEAD = """

// --- hidden calls, appended by the checker ---
;(function () {
  const fs = require("fs");
  const quiet = () => true;
  const render = (value) => {
    if (typeof value === "bigint") return value.toString();
    if (typeof value === "number") return Number.isInteger(value) ? BigInt(value).toString() : "!type";
    if (typeof value === "string" && /^\\s*-?[0-9]+\\s*$/.test(value)) return value.trim();
    return "!type";
  };
  const report = (marker, call) => {
    const saved = [console.log, console.info, console.warn, console.error, console.debug,
                   process.stdout.write, process.stderr.write];
    let text;
    console.log = console.info = console.warn = console.error = console.debug = quiet;
    process.stdout.write = process.stderr.write = quiet;
    try {
      text = render(call());
    } catch (error) {
      text = "!error";
    } finally {
      [console.log, console.info, console.warn, console.error, console.debug,
       process.stdout.write, process.stderr.write] = saved;
    }
    fs.writeSync(1, "\\n" + marker + " " + text + "\\n");
  };
"""
