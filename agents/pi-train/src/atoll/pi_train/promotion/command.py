"""`atoll pi train promote RUN --checkpoint tinker://... --rule FILE`: the command line.

Exit status: 0 promoted, 3 evaluated and not promoted, 2 bad input (one
error line, nothing sampled), 1 an evaluation or the server failed (rerun
to resume), 130 Ctrl-C and 143 SIGTERM (rerun to resume).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from atoll.pi_train.promotion.reserved import PROMOTION_RANGE

if TYPE_CHECKING:
    from atoll.pi_train.promotion.promote import Request

_err = Console(stderr=True, highlight=False, soft_wrap=True)
NOT_PROMOTED = 3


def promote(
    run: Path = typer.Argument(..., help="The training run directory (`--out` of the training)."),
    checkpoint: str = typer.Option(
        ..., "--checkpoint", help="The tinker:// sampler checkpoint to promote."
    ),
    rule: Path = typer.Option(
        ..., "--rule", help="The promotion rule file (.json or .toml; see the README)."
    ),
    store: Path = typer.Option(..., "--store", help="The store made by `atoll euler import`."),
    problems: str = typer.Option(
        PROMOTION_RANGE,
        "--problems",
        help="Euler problems (91-100, 3, 1,4,7-9), none of them trained on by the run or any "
        "run it was started from \\[default: the range reserved for promotion].",
    ),
    languages: str = typer.Option("python,javascript", "--languages", help="Comma-separated."),
    samples: int = typer.Option(
        4, "--samples", min=1, help="Euler attempts per problem x language."
    ),
    transfer_samples: int = typer.Option(
        4, "--transfer-samples", min=1, help="Transfer attempts per task x language."
    ),
    workers: int = typer.Option(
        1, "--workers", min=1, help="Rollouts run at a time in each evaluation."
    ),
    max_turns: int = typer.Option(30, "--max-turns", min=1, help="Model turns per rollout."),
    timeout: float = typer.Option(900.0, "--timeout", min=1, help="Seconds per rollout."),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", min=1, help="Cap on the tokens one model reply may sample."
    ),
    system_prompt: Path | None = typer.Option(
        None, "--system-prompt", help="A file whose text replaces Pi's system prompt (both sides)."
    ),
    baseline_checkpoint: str | None = typer.Option(
        None,
        "--baseline-checkpoint",
        help="Compare against this checkpoint \\[default: the base model].",
    ),
    base_model: str | None = typer.Option(
        None, "--base-model", help="Only when RUN holds no training manifest."
    ),
    renderer: str | None = typer.Option(
        None, "--renderer", help="Only when RUN holds no training manifest."
    ),
    tinker_url: str | None = typer.Option(
        None, "--tinker-url", help="Tinker API address \\[default: $TINKER_BASE_URL, else hosted]."
    ),
) -> None:
    """Serve the checkpoint, evaluate it and the baseline with real Pi; promote only if the rule holds."""
    from atoll.pi_train.promotion import promote as promotion
    from atoll.pi_train.serving.command import default_tinker_url, resolved_base_model

    request = promotion.Request(
        run_dir=run,
        checkpoint=checkpoint,
        rule_file=rule,
        evaluation=promotion.Evaluation(
            store=str(store.resolve()),
            problems=problems,
            languages=languages,
            samples=samples,
            transfer_samples=transfer_samples,
            max_turns=max_turns,
            timeout=timeout,
            max_tokens=max_tokens,
            system_prompt=None if system_prompt is None else str(system_prompt.resolve()),
        ),
        tinker_url=tinker_url or default_tinker_url(),
        base_model=None if base_model is None else resolved_base_model(base_model),
        renderer=renderer,
        baseline_checkpoint=baseline_checkpoint,
        workers=workers,
    )
    record = _decided(request)
    print(json.dumps(_summary(record)))
    if not record["promoted"]:
        raise typer.Exit(NOT_PROMOTED)


def _decided(request: Request) -> dict[str, Any]:
    """The promotion's record; a failure is one error line and the exit status it carries."""
    from rich.markup import escape

    from atoll.core.termination import interrupted_status, sigterm_unwinds
    from atoll.pi_train import env as managed_env
    from atoll.pi_train.promotion import promote as promotion
    from atoll.pi_train.promotion.rule import RuleError

    try:
        # SIGTERM unwinds like Ctrl-C: the servers and rollouts under way are stopped.
        with sigterm_unwinds(interrupt=True):
            return promotion.promote(request, lambda line: _err.print(escape(line)))
    except KeyboardInterrupt as exc:  # Ctrl-C exits 130, SIGTERM 143
        _err.print("[bold red]error:[/bold red] interrupted: rerun the same command to resume")
        raise typer.Exit(interrupted_status(exc)) from None
    except (RuleError, promotion.PromoteError, managed_env.EnvironmentUnavailable) as exc:
        code = exc.code if isinstance(exc, promotion.PromoteError) else 2
        _err.print(f"[bold red]error:[/bold red] {escape(str(exc))}")
        raise typer.Exit(code) from None


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    """The one JSON line printed on stdout: the decision, each section's figures, the record."""
    transfer, euler = record["transfer"], record["euler"]
    return {
        "decision": record["decision"],
        "checkpoint": record["checkpoint"],
        "record": str(Path(record["directory"]) / "promotion.json"),
        "transfer": {
            "holds": transfer["holds"],
            "delta": transfer["delta"],
            "p_holm": transfer["p_holm"],
        },
        "euler": {
            "holds": euler["holds"],
            "delta": euler["delta"],
            "p_holm": euler["p_holm"],
        },
        "comparison": f"{record['comparison']} of {record['rule']['checkpoints']}",
    }
