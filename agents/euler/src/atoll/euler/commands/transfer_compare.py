"""`atoll euler transfer compare`: refuse mismatched manifests, then counts and Fisher tests."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from atoll.euler.commands.common import console, fail


def transfer_compare_command(
    a: Path = typer.Argument(..., help="Baseline transfer run (directory or manifest.json)."),
    b: Path = typer.Argument(..., help="Candidate transfer run."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Refuse mismatched manifests, then print counts and exact Fisher tests per task and overall."""
    from atoll.euler.transfer import compare
    from atoll.euler.transfer.manifest import ManifestError

    try:
        result = compare.compare(a, b)
    except ManifestError as exc:
        raise fail(str(exc)) from None
    if as_json:
        console.print_json(json.dumps(result))
    else:
        console.print(compare.markdown(result), markup=False)
