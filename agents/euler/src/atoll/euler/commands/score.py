"""`atoll euler score`: functional gate v2 and the path audit over one rollout."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from atoll.euler.commands.common import console, fail, open_store


def score_command(
    rollout_dir: Path = typer.Argument(..., help="A rollout directory (holding record.json)."),
    store: Path | None = typer.Option(
        None, "--store", help="Store to read the expected answer from."
    ),
    problem: int | None = typer.Option(
        None, "--problem", help="Problem number (default: the rollout's)."
    ),
    language: str | None = typer.Option(
        None, "--language", help="Assigned language (default: the rollout's)."
    ),
    expected: str | None = typer.Option(
        None, "--expected", help="The expected value, instead of a store."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the whole gate result as JSON."),
) -> None:
    """Apply functional gate v2 to one rollout: PASS or FAIL with each failed condition by name.

    The gate reads the bridge's record of what the container ran and printed.
    Exit status: 0 pass, 1 fail (or disqualified by the path audit), 2 error.
    """
    from atoll.euler import gate, record_input
    from atoll.euler.runtimes import RUNTIMES
    from atoll.euler.store import StoreError

    try:
        record = record_input.load(rollout_dir)
    except record_input.RecordError as exc:
        raise fail(str(exc)) from None
    meta = (record.get("metadata") or {}).get("euler") or {}
    language = language or meta.get("language") or record.get("language")
    if language not in RUNTIMES:
        raise fail(
            f"the assigned language is unknown ({language!r}); pass --language python|javascript|julia"
        )
    if expected is None:
        if store is None:
            raise fail("pass --store DIR (with the rollout's problem) or --expected VALUE")
        number = problem or meta.get("problem")
        if not isinstance(number, int):
            raise fail("the rollout does not say its problem; pass --problem N")
        try:
            expected = open_store(store).expected(number)
        except StoreError as exc:
            raise fail(str(exc)) from None
    if not record.get("scorable", False):
        raise fail(
            f"the rollout ended in an infrastructure error ({record.get('error')}): it has no score",
            1,
        )
    result = gate.score(record_input.gate_input(record), expected, language)
    audit = record.get("audit") or {}
    disqualified = bool(audit.get("disqualified"))
    if as_json:
        payload = {
            **result.to_json(),
            "disqualified": disqualified,
            "attempted_paths": [h.get("text") for h in audit.get("hits") or []],
            "pre_audit_score": int(result.passed),
            "score": int(result.passed and not disqualified),
        }
        console.print_json(json.dumps(payload))
    else:
        console.print("PASS" if result.passed else "FAIL", markup=False)
        for name in gate.CONDITIONS:
            mark = "ok  " if result.conditions[name] else "FAIL"
            detail = result.details.get(name, "")
            console.print(f"  {mark} {name}" + (f": {detail}" if detail else ""), markup=False)
        for item in result.rejected_executions:
            console.print(
                f"  rejected run #{item['seq']} ({item['reason']}): {item['command'][:100]}",
                markup=False,
            )
        shown = result.presentation
        console.print(
            f"  presentation (diagnostic only): boxed {shown['boxed']}, FINAL_ANSWER lines {shown['final_answer_lines']}",
            markup=False,
        )
        if disqualified:
            paths = ", ".join(str(h.get("text")) for h in audit.get("hits") or [])
            console.print(
                f"DISQUALIFIED by the path audit (attempted: {paths}); pre-audit score {int(result.passed)}",
                markup=False,
            )
    if not result.passed or disqualified:
        raise typer.Exit(1)
