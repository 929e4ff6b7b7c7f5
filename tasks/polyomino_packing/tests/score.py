"""Score /workspace/solution.cpp with the FrontierCS judge and write the reward.

The reward is the judge's score (100 x the mean ratio over the problem's
cases); the problem is FRONTIERCS_PROBLEM_ID (default 0, this task's; tasks
written by `atoll task frontiercs` set it in their test.sh).
The verifier has no network: it reaches the judge through the unix socket the
host mounts at /run/frontiercs-judge/judge.sock (FRONTIERCS_JUDGE_SOCKET
overrides the path), speaking the judge's HTTP protocol over it. Only the
standard library is used, because the task image has python3 and nothing
else. An unreachable or failing judge is an infrastructure failure: the
script exits non-zero and writes no reward file, so Harbor records an error
instead of a score. A missing or empty solution is the agent's failure and
scores 0.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROBLEM_ID = os.environ.get("FRONTIERCS_PROBLEM_ID", "0")
LANGUAGE = "cpp"
SOLUTION = Path(os.environ.get("POLYOMINO_SOLUTION", "/workspace/solution.cpp"))
VERIFIER_DIR = Path(os.environ.get("POLYOMINO_VERIFIER_DIR", "/logs/verifier"))
JUDGE_SOCKET = Path(os.environ.get("FRONTIERCS_JUDGE_SOCKET", "/run/frontiercs-judge/judge.sock"))
DEADLINE_SECONDS = float(os.environ.get("FRONTIERCS_JUDGE_DEADLINE", "3000"))
REQUEST_TIMEOUT = 60.0
POLL_SECONDS = 0.5
BUSY_WAIT_SECONDS = 5.0


class JudgeUnavailable(Exception):
    """The judge could not be reached or did not answer as its protocol says."""


class JudgeBusy(JudgeUnavailable):
    """The judge's queue is full (HTTP 503); it may accept the submission later."""


def main() -> int:
    if not JUDGE_SOCKET.is_socket():
        return _infrastructure(
            f"no judge socket at {JUDGE_SOCKET}: the host must mount the directory named by "
            "FRONTIERCS_JUDGE_SOCKET_DIR there (atoll run does; so does `atoll judge serve`, "
            "which prints it)"
        )
    try:
        code = SOLUTION.read_text(encoding="utf-8")
    except FileNotFoundError:
        code = ""
    except (OSError, UnicodeDecodeError) as exc:
        print(f"cannot read {SOLUTION}: {exc}; scoring it 0", file=sys.stderr)
        code = ""
    if not code.strip():
        return _write_result(
            {"status": "missing", "message": f"{SOLUTION} is missing or empty"},
            score=0.0,
            raw_score=0.0,
        )
    try:
        answer = judge(code)
    except JudgeUnavailable as exc:
        return _infrastructure(f"judge at {JUDGE_SOCKET}: {exc}")
    details: dict[str, Any] = {
        "judge_socket": str(JUDGE_SOCKET),
        "problem_id": PROBLEM_ID,
        "solution_sha256": hashlib.sha256(code.encode("utf-8")).hexdigest(),
        "judge": answer,
    }
    if answer["status"] in ("error", "invalid"):  # e.g. it did not compile: every case fails
        details["status"] = "invalid"
        details["message"] = str(answer.get("error") or answer.get("result") or "")
        return _write_result(details, score=0.0, raw_score=0.0)
    try:
        score = float(answer["score"])
        raw_score = float(answer.get("scoreUnbounded", score))
    except (KeyError, TypeError, ValueError):
        return _infrastructure(f"judge at {JUDGE_SOCKET} answered without a score: {answer!r:.300}")
    details["status"] = "done"
    details["message"] = str(answer.get("result", ""))
    return _write_result(details, score=score, raw_score=raw_score)


def judge(code: str) -> dict[str, Any]:
    """Submit `code`, then poll its result until it is final."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    payload = {"pid": PROBLEM_ID, "lang": LANGUAGE, "code": code}
    while True:  # a busy judge answers 503: wait for a queue slot
        try:
            submitted = _request("/submit", payload)
            break
        except JudgeBusy:
            if time.monotonic() > deadline:
                raise JudgeUnavailable(f"queue still full after {DEADLINE_SECONDS:g} s") from None
            time.sleep(BUSY_WAIT_SECONDS)
    sid = submitted.get("sid")
    if sid is None:
        raise JudgeUnavailable(f"POST /submit answered without a sid: {submitted!r:.300}")
    while True:
        answer = _request(f"/result/{sid}")
        status = answer.get("status")
        if status in ("done", "error"):
            return answer
        if status not in ("queued", "running", "pending", "judging"):
            raise JudgeUnavailable(f"GET /result/{sid} answered {answer!r:.300}")
        if time.monotonic() > deadline:
            raise JudgeUnavailable(
                f"no final result for submission {sid} in {DEADLINE_SECONDS:g} s"
            )
        time.sleep(POLL_SECONDS)


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 over the judge's unix socket."""

    def __init__(self, path: Path) -> None:
        super().__init__("frontiercs-judge", timeout=REQUEST_TIMEOUT)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self._path))
        except OSError:
            sock.close()
            raise
        self.sock = sock


def _request(route: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    data = None if payload is None else json.dumps(payload).encode("utf-8")
    connection = _UnixConnection(JUDGE_SOCKET)
    try:
        connection.request(
            "GET" if data is None else "POST",
            route,
            body=data,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        response = connection.getresponse()
        status, body = response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        raise JudgeUnavailable(f"cannot reach the judge for {route}: {exc}") from None
    finally:
        connection.close()
    if status == 503:
        raise JudgeBusy(f"503 from {route}: {body[:300].decode('utf-8', 'replace')}")
    if status != 200:
        raise JudgeUnavailable(f"{status} from {route}: {body[:300].decode('utf-8', 'replace')}")
    try:
        decoded = json.loads(body)
    except ValueError:
        raise JudgeUnavailable(f"{route} answered with something that is not JSON") from None
    if not isinstance(decoded, dict):
        raise JudgeUnavailable(f"{route} answered {decoded!r:.300}")
    return decoded


def _write_result(details: dict[str, Any], *, score: float, raw_score: float) -> int:
    VERIFIER_DIR.mkdir(parents=True, exist_ok=True)
    _write_atomic(VERIFIER_DIR / "judge-result.json", details)
    _write_atomic(VERIFIER_DIR / "reward.json", {"reward": score, "raw_score": raw_score})
    print(f"{details.get('status')}: score {score!r} (raw {raw_score!r})")
    return 0


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _infrastructure(message: str) -> int:
    print(f"error: {message}; no reward written", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
