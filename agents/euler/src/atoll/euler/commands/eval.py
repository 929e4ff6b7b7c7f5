"""`atoll euler eval`: problems x languages x approaches x samples as Pi rollouts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from atoll.core.durable import atomic_write_json, canonical_json
from atoll.euler import writer
from atoll.euler.commands.common import (
    API_KEY_ENV,
    APPROACHES,
    BASE_URL,
    IMAGE,
    LANGUAGES,
    MAX_TURNS,
    MODEL,
    RAY,
    REVISION,
    SYSTEM_PROMPT,
    THINKING,
    TIMEOUT,
    WORKERS,
    RunOptions,
    approach_list,
    console,
    fail,
    language_list,
    open_store,
    preflight,
    say,
)

if TYPE_CHECKING:  # imported when a command runs, to keep `atoll --help` quick
    from atoll.euler.evaluate import Runner
    from atoll.euler.store import Store

EVAL_FILE = "eval.json"


def eval_command(
    store: Path = typer.Option(..., "--store", help="The store made by `atoll euler import`."),
    problems: str = typer.Option(..., "--problems", help="A range or list: 1-10, 3, 1,4,7-9."),
    languages: str = LANGUAGES,
    approaches: str = APPROACHES,
    samples: int = typer.Option(
        1, "--samples", min=1, help="Attempts per problem x language x approach."
    ),
    base_url: str = BASE_URL,
    model: str = MODEL,
    api_key_env: str = API_KEY_ENV,
    workers: int = WORKERS,
    out: Path = typer.Option(
        ..., "--out", help="Run directory: rows.jsonl, summary.md, plots, rollouts/."
    ),
    model_revision: str | None = REVISION,
    thinking: str | None = THINKING,
    system_prompt: Path | None = SYSTEM_PROMPT,
    max_turns: int = MAX_TURNS,
    timeout: float = TIMEOUT,
    image: str | None = IMAGE,
    ray: str | None = RAY,
) -> None:
    """Fan out problems x languages x approaches x samples as Pi rollouts; rows and a summary in OUT.

    Rerunning the same command resumes: attempts with a scored row are not run
    again, and attempts that hit infrastructure errors are retried.
    """
    from atoll.euler.evaluate import Runner, StoreSource, parse_problems

    try:
        numbers = parse_problems(problems)
    except ValueError as exc:
        raise fail(str(exc)) from None
    langs, apps = language_list(languages), approach_list(approaches)
    opened = open_store(store)
    _refuse_unavailable(opened, numbers)
    settings = RunOptions(
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        workers=workers,
        model_revision=model_revision,
        thinking=thinking,
        system_prompt=system_prompt,
        max_turns=max_turns,
        timeout=timeout,
        image=image,
        ray=ray,
    ).settings()
    identity = {
        "kind": "atoll-euler-eval",
        "store_digest": opened.digest,
        "problems": numbers,
        "languages": list(langs),
        "approaches": list(apps),
        "samples": samples,
        "model_signature": settings.signature,
        "settings": settings.pi.identity(),
    }
    run_id = "eval-" + hashlib.sha256(canonical_json(identity)).hexdigest()[:12]
    runner = Runner(StoreSource(opened), settings, say=say)
    preflight(runner, langs)
    try:
        with writer.hold(out, "atoll euler eval"):
            _claim_run_dir(out, identity, run_id)
            data = _run_attempts(runner, out, run_id, numbers, langs, apps, samples, workers)
            used_image = runner.image_info or {}
            notes = [
                f"Store {opened.digest[:16]}; problems {problems}; languages {', '.join(langs)}; "
                f"approaches {', '.join(apps)}; {samples} samples each. Rollout image "
                f"{used_image.get('image_id')} ({used_image.get('runtimes')}). Model signature "
                f"{settings.signature[:16]} ({json.dumps(settings.signature_parts, sort_keys=True)})."
            ]
            _report(data, out, model, notes)
    except writer.RunDirInUse as exc:
        raise fail(str(exc)) from None


def _refuse_unavailable(opened: Store, numbers: list[int]) -> None:
    """Stop before any write when the store lacks a chosen problem (at most five named)."""
    unavailable = [why for n in numbers if (why := opened.missing(n)) is not None]
    if unavailable:
        raise fail(
            "; ".join(unavailable[:5])
            + ("; ..." if len(unavailable) > 5 else "")
            + ": leave these out of --problems"
        )


def _run_attempts(
    runner: Runner,
    out: Path,
    run_id: str,
    numbers: list[int],
    langs: tuple[str, ...],
    apps: tuple[str, ...],
    samples: int,
    workers: int,
) -> list[dict[str, Any]]:
    """Run every attempt not yet scored; this run's latest row of each attempt."""
    from atoll.euler import rows
    from atoll.euler.curriculum import Attempt
    from atoll.euler.evaluate import Interrupted, run_to_end

    attempts = [
        Attempt("eval", n, lang, app, k)
        for n in numbers
        for lang in langs
        for app in apps
        for k in range(samples)
    ]
    pace = f"{workers} at a time" if runner.settings.ray is None else "on the Ray cluster"
    say(
        f"{len(attempts)} attempts ({len(numbers)} problems x {len(langs)} languages x {len(apps)} approaches x {samples} samples), {pace}"
    )
    rows_path = out / rows.ROWS_FILE
    try:
        run_to_end(runner.run(attempts, out, rows_path, run_id))
    except Interrupted:
        raise fail(
            "interrupted: the rows written so far are kept; rerun the same command to resume",
            130,
        ) from None
    return [r for r in rows.latest_per_attempt(rows.read(rows_path)) if r.get("run_id") == run_id]


def _report(data: list[dict[str, Any]], out: Path, model: str, notes: list[str]) -> None:
    """Write and print the summary; exit 1 when some attempts ended in infrastructure errors."""
    from atoll.euler import report

    text = report.write(data, out, title=f"Pi on Project Euler: {model}", notes=notes)
    console.print(text, markup=False)
    errors = sum(1 for r in data if r.get("status") != "scored")
    if errors:
        raise fail(
            f"{errors} attempts ended in infrastructure errors (not scored); rerun to retry them",
            1,
        )


def _claim_run_dir(out: Path, identity: dict[str, Any], run_id: str) -> None:
    path = out / EVAL_FILE
    if path.exists():
        try:
            existing = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise fail(f"{path} cannot be read: {exc}") from None
        if existing.get("run_id") != run_id:
            changed = [k for k in identity if existing.get("identity", {}).get(k) != identity[k]]
            raise fail(
                f"{out} holds an evaluation with other settings ({', '.join(changed)}); use a new --out"
            )
        say(f"resuming the evaluation in {out}")
        return
    if not writer.is_empty(out):
        raise fail(f"{out} is not empty and holds no evaluation; use a new --out")
    atomic_write_json(path, {"run_id": run_id, "identity": identity}, make_parents=True)
