"""`atoll euler transfer run`: sample the frozen suite under a manifest."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer

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
    preflight,
    say,
)


def run_options(flags: dict[str, Any]) -> RunOptions:
    """The model and run flags of `transfer run` (its parameters by name), from which the
    settings of every rollout and the manifest's `limits` are built."""
    return RunOptions(**{field.name: flags[field.name] for field in dataclasses.fields(RunOptions)})


def transfer_run_command(
    out: Path = typer.Option(
        ..., "--out", help="Run directory: manifest.json, rows.jsonl, summary.md."
    ),
    base_url: str = BASE_URL,
    model: str = MODEL,
    api_key_env: str = API_KEY_ENV,
    languages: str = LANGUAGES,
    approaches: str = APPROACHES,
    samples: int = typer.Option(
        4, "--samples", min=1, help="Attempts per task x language x approach."
    ),
    accept: str | None = typer.Option(
        None,
        "--accept",
        help="Acceptance rule fixed before sampling, e.g. min_delta=0.1,alpha=0.05 (B is this run).",
    ),
    workers: int = WORKERS,
    model_revision: str | None = REVISION,
    thinking: str | None = THINKING,
    system_prompt: Path | None = SYSTEM_PROMPT,
    max_turns: int = MAX_TURNS,
    timeout: float = TIMEOUT,
    image: str | None = IMAGE,
    ray: str | None = RAY,
) -> None:
    """Sample the frozen suite; the manifest is written before the first rollout and completed after."""
    from atoll.euler.evaluate import Interrupted, Runner
    from atoll.euler.transfer import run as transfer_run
    from atoll.euler.transfer import suite
    from atoll.euler.transfer.manifest import AcceptanceRule, ManifestError

    try:
        rule = AcceptanceRule.parse(accept) if accept else None
        tasks = suite.verified()
    except (ManifestError, suite.SuiteError) as exc:
        raise fail(str(exc)) from None
    langs, apps = language_list(languages), approach_list(approaches)
    settings = run_options(locals()).settings()
    runner = Runner(transfer_run.TransferSource(tasks), settings, say=say)
    preflight(runner, langs)
    try:
        with writer.hold(out, "atoll euler transfer run"):
            done = transfer_run.run(
                out,
                runner,
                languages=langs,
                approaches=apps,
                samples=samples,
                acceptance=rule,
                say=say,
            )
    except writer.RunDirInUse as exc:
        raise fail(str(exc)) from None
    except ManifestError as exc:
        raise fail(str(exc), 1) from None
    except Interrupted:
        raise fail("interrupted: rerun the same command to resume", 130) from None
    console.print((out / "summary.md").read_text("utf-8"), markup=False)
    console.print(
        f"manifest completed: {out / 'manifest.json'} (result {done['result_sha256'][:16]}, summary {done['summary_sha256'][:16]})",
        markup=False,
    )
