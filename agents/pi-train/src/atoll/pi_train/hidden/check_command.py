"""`atoll pi train check`: score one file on one instance, printing exactly what the reward sees.

The one JSON line on standard output is the harness's whole answer
(`{"passed", "total", "failure"}`); nothing of the program's own output, and
no hidden value, is ever printed. Without `--sandbox-url` (or
SANDBOX_FUSION_ENDPOINT) an in-process sandbox service is started on
loopback for the one check. An infrastructure failure still prints its line,
then an error line on stderr, and exits 1: it is not a score.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> None:
    _err.print(f"[bold red]error:[/bold red] {escape(message)}")
    raise typer.Exit(code)


def check(
    file: Path = typer.Argument(..., help="The submission: a file defining solve(...)."),
    family: str = typer.Option(..., "--family", "-f", help="Task family: multiples, recurrence."),
    language: str = typer.Option(..., "--language", "-l", help="python or javascript."),
    split: str = typer.Option(..., "--split", "-s", help="train or eval."),
    index: int = typer.Option(..., "--index", "-i", min=0, help="Instance index (>= 0)."),
    sandbox_url: str | None = typer.Option(
        None,
        "--sandbox-url",
        envvar="SANDBOX_FUSION_ENDPOINT",
        help="A SandboxFusion-compatible sandbox on loopback (default: one started for this check).",
    ),
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        min=0.1,
        max=300,
        help="Seconds for all the hidden calls together (default: the checker's, 6 s).",
    ),
) -> None:
    """Score FILE on one hidden-variant instance; print {passed, total, failure} as one JSON line."""
    from atoll.core.sandbox import SandboxError
    from atoll.core.sandbox.fusion import EmbeddedFusionServer, NotLoopbackError
    from atoll.pi_train.hidden.families import FAMILIES, LANGUAGES, SPLITS
    from atoll.pi_train.hidden.harness import check_submission

    if family not in FAMILIES:
        _fail(f"unknown family {family!r}; choose one of: {', '.join(sorted(FAMILIES))}")
    if language not in LANGUAGES:
        _fail(f"unknown language {language!r}; choose one of: {', '.join(LANGUAGES)}")
    if split not in SPLITS:
        _fail(f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}")
    try:
        code = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot read {file}: {getattr(exc, 'strerror', None) or exc}")
    instance = FAMILIES[family].instance(split, index)  # type: ignore[arg-type]
    limits = {} if timeout is None else {"run_timeout_s": timeout}
    try:
        if sandbox_url is not None:
            result = check_submission(code, language, instance, sandbox_url, **limits)
        else:
            with EmbeddedFusionServer() as server:
                result = check_submission(code, language, instance, server.url, **limits)
    except NotLoopbackError as exc:
        _fail(str(exc))
    except SandboxError as exc:
        _fail(f"no sandbox to run the check in: {exc}")
    print(json.dumps(result.to_json()), flush=True)
    if result.failure == "infrastructure":
        where = sandbox_url or "the in-process sandbox"
        _fail(f"the sandbox ({where}) failed; this is not a score", 1)
