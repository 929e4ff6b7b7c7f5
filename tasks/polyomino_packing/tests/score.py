"""Score /workspace/solution.cpp with the FrontierCS judge and write the reward.

The reward is the judge's score (100 x the mean ratio over the 70 cases).
Only the standard library is used, because the task image has python3 and
nothing else. An unreachable or failing judge is an infrastructure failure:
the script exits non-zero and writes no reward file, so Harbor records an
error instead of a score. A missing or empty solution is the agent's failure
and scores 0.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

PROBLEM_ID = "0"
LANGUAGE = "cpp"
SOLUTION = Path(os.environ.get("POLYOMINO_SOLUTION", "/workspace/solution.cpp"))
VERIFIER_DIR = Path(os.environ.get("POLYOMINO_VERIFIER_DIR", "/logs/verifier"))
DEADLINE_SECONDS = float(os.environ.get("FRONTIERCS_JUDGE_DEADLINE", "3000"))
REQUEST_TIMEOUT = 60.0
POLL_SECONDS = 0.5
BUSY_WAIT_SECONDS = 5.0


class JudgeUnavailable(Exception):
    """The judge could not be reached or did not answer as its protocol says."""


class JudgeBusy(JudgeUnavailable):
    """The judge's queue is full (HTTP 503); it may accept the submission later."""


def main() -> int:
    base_url = os.environ.get("FRONTIERCS_JUDGE_URL", "").strip().rstrip("/")
    if not base_url:
        return _infrastructure("FRONTIERCS_JUDGE_URL is not set; point it at the judge")
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
        answer = judge(base_url, code)
    except JudgeUnavailable as exc:
        return _infrastructure(f"judge at {base_url}: {exc}")
    details: dict[str, Any] = {
        "judge_url": base_url,
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
        return _infrastructure(f"judge at {base_url} answered without a score: {answer!r:.300}")
    details["status"] = "done"
    details["message"] = str(answer.get("result", ""))
    return _write_result(details, score=score, raw_score=raw_score)


def judge(base_url: str, code: str) -> dict[str, Any]:
    """Submit `code`, then poll its result until it is final."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    payload = {"pid": PROBLEM_ID, "lang": LANGUAGE, "code": code}
    while True:  # a busy judge answers 503: wait for a queue slot
        try:
            submitted = _request(f"{base_url}/submit", payload)
            break
        except JudgeBusy:
            if time.monotonic() > deadline:
                raise JudgeUnavailable(f"queue still full after {DEADLINE_SECONDS:g} s") from None
            time.sleep(BUSY_WAIT_SECONDS)
    sid = submitted.get("sid")
    if sid is None:
        raise JudgeUnavailable(f"POST /submit answered without a sid: {submitted!r:.300}")
    while True:
        answer = _request(f"{base_url}/result/{sid}")
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


def _request(url: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    data = None if payload is None else json.dumps(payload).encode("utf-8")
    request = urllib.request.Request(
        url,
        data=data,
        method="GET" if data is None else "POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", "replace")
        if exc.code == 503:
            raise JudgeBusy(f"503 from {url}: {detail}") from None
        raise JudgeUnavailable(f"{exc.code} from {url}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise JudgeUnavailable(f"cannot reach {url}: {reason}") from None
    try:
        decoded = json.loads(body)
    except ValueError:
        raise JudgeUnavailable(f"{url} answered with something that is not JSON") from None
    if not isinstance(decoded, dict):
        raise JudgeUnavailable(f"{url} answered {decoded!r:.300}")
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
