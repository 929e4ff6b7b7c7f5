"""Evaluating one side of a promotion: serve it, then run atoll-euler's evaluations with real Pi.

Split from atoll.pi_train.promotion.promote: how a side (the baseline or the candidate)
is served with `atoll tinker serve` and evaluated by `atoll euler transfer run`
and `atoll euler eval` as subprocesses, each resuming by itself, apart from
the inputs checked before (atoll.pi_train.promotion.plan) and the decision
made after (atoll.pi_train.promotion.promote). Its names stay importable from
atoll.pi_train.promotion.promote.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from atoll.pi_train.promotion.plan import (
    MANIFEST,
    Plan,
    PromoteError,
    Request,
    _expected_euler_rows,
    serving_state,
)
from atoll.pi_train.serving import serve

KEY_VARIABLE = "ATOLL_PROMOTE_KEY"  # the served endpoint's bearer token, in memory only


def _atoll() -> list[str]:
    beside = Path(sys.executable).parent / "atoll"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("atoll")
    if found is None:
        raise PromoteError("the `atoll` command is not on PATH", code=1)
    return [found]


def _step(argv: list[str], log: Path, key: str) -> None:
    """One `atoll euler ...` command, its output in `log`; a failure is the promotion's error."""
    env = {**os.environ, KEY_VARIABLE: key}
    with log.open("ab") as sink:
        done = subprocess.Popen(
            [*_atoll(), *argv], env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink
        )
        try:
            done.wait()
        finally:
            if done.poll() is None:  # interrupted: let it stop its rollouts and containers
                done.terminate()
                try:
                    done.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    done.kill()
                    done.wait()
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-8:])
        raise PromoteError(
            f"`atoll {' '.join(argv[:3])}` failed (exit {done.returncode}); see {log}:\n{tail}",
            code=2 if done.returncode == 2 else 1,
        )


def _transfer_done(directory: Path) -> bool:
    try:
        return bool(json.loads((directory / MANIFEST).read_text())["status"] == "completed")
    except (OSError, ValueError, KeyError):
        return False


def _euler_rows(directory: Path) -> list[dict[str, Any]]:
    from atoll.euler import rows

    try:
        run_id = json.loads((directory / "eval.json").read_text("utf-8"))["run_id"]
    except (OSError, ValueError, KeyError):
        return []
    try:
        found = rows.read(directory / rows.ROWS_FILE)
    except rows.RowsError:
        return []
    return [
        r
        for r in rows.latest_per_attempt(found)
        if r.get("run_id") == run_id and r.get("status") == "scored"
    ]


def _evaluate_side(
    made: Plan, side: str, checkpoint: str | None, request: Request, say: Callable[[str], None]
) -> None:
    from atoll.pi_train.local.server import free_port

    evaluation, tinker_url = request.evaluation, request.tinker_url
    side_dir = made.directory / side
    transfer_dir, euler_dir = side_dir / "transfer", side_dir / "euler"
    transfer_left = not _transfer_done(transfer_dir)
    euler_left = len(_euler_rows(euler_dir)) < _expected_euler_rows(evaluation)
    if not (transfer_left or euler_left):
        say(f"{side}: evaluated already")
        return
    side_dir.mkdir(parents=True, exist_ok=True)
    spec = serve.ServeSpec(
        base_model=made.base_model,
        renderer=made.renderer,
        tinker_url=tinker_url,
        port=free_port(),
        model_path=checkpoint,
        max_tokens=evaluation.max_tokens,
        state_path=serving_state(made.run_dir, checkpoint, tinker_url),
    )
    key = secrets.token_hex(16)
    common = [
        "--base-url", spec.base_url, "--model", spec.name, "--api-key-env", KEY_VARIABLE,
        "--languages", evaluation.languages, "--max-turns", str(evaluation.max_turns),
        "--timeout", str(evaluation.timeout), "--workers", str(request.workers),
    ]  # fmt: skip
    if evaluation.system_prompt is not None:
        common += ["--system-prompt", evaluation.system_prompt]
    if checkpoint is not None:
        common += ["--model-revision", checkpoint]
    say(f"{side}: serving {checkpoint or made.base_model}")
    try:
        with serve.serving(spec, side_dir / "serve.log", say, caller_key=key):
            if transfer_left:
                # No --accept: atoll-euler's acceptance decides on pooled attempts; this
                # promotion's rule, fixed above before any rollout, decides per task.
                say(f"{side}: the frozen transfer evaluation")
                _step(
                    ["euler", "transfer", "run", "--out", str(transfer_dir), *common,
                     "--samples", str(evaluation.transfer_samples)],
                    side_dir / "transfer.log",
                    key,
                )  # fmt: skip
            if euler_left:
                say(f"{side}: the Euler evaluation")
                _step(
                    ["euler", "eval", "--store", evaluation.store, "--problems",
                     evaluation.problems, "--out", str(euler_dir), *common,
                     "--samples", str(evaluation.samples)],
                    side_dir / "euler.log",
                    key,
                )  # fmt: skip
    except serve.ServeError as exc:
        raise PromoteError(f"{side}: {exc}", code=1) from None
