"""`atoll euler import`: a Project Euler zip (or the built-in sample) into a store."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from atoll.euler.commands.common import console, fail


def import_command(
    zip_path: Path | None = typer.Argument(None, metavar="ZIP", help="A local Project Euler zip."),
    store: Path = typer.Option(
        ..., "--store", help="Directory of the store to write (replaced whole)."
    ),
    sample: bool = typer.Option(
        False, "--sample", help="Import the built-in sample (problems 1-10) instead of a zip."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was found as JSON."),
) -> None:
    """Read a Project Euler zip (or the built-in sample) into a store; answers go to its private part.

    Nothing is extracted: members are read from the zip into memory. Layouts
    are detected (one HTML file per problem or a CSV of statements; answers as
    `N. answer` lines or a CSV); bad zips get one line and nothing is written.
    """
    from atoll.euler import importer
    from atoll.euler import store as stores

    if sample == (zip_path is not None):
        raise fail("name a ZIP or pass --sample (one of the two)")
    try:
        if sample:
            from atoll.euler.sample import SampleError, catalog

            try:
                found = catalog()
            except SampleError as exc:
                raise fail(str(exc)) from None
        else:
            assert zip_path is not None
            found = importer.read_zip(zip_path)
        index = stores.write(found, store)
    except importer.ImportError_ as exc:
        raise fail(str(exc)) from None
    except stores.StoreError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write the store {store}: {exc.strerror or exc}") from None
    summary = index["summary"]
    if as_json:
        console.print_json(
            json.dumps(
                {
                    "store": str(store),
                    "digest": index["digest"],
                    "source": index["source"],
                    **summary,
                }
            )
        )
        return
    layout = index["source"].get("layout") or {}
    console.print(
        f"store {store} (digest {index['digest'][:16]}), from {index['source'].get('name')}"
    )
    for kind in ("statements", "answers"):
        for line in layout.get(kind) or []:
            console.print(f"  {kind}: {line}")
    console.print(
        f"problems: {summary['problems']}  answers: {summary['answers']}  resources: {summary['resources']}"
    )
    unavailable = summary["unavailable"]
    console.print(
        f"unavailable: {len(unavailable)}"
        + (
            ""
            if not unavailable
            else " ("
            + "; ".join(f"{n}: {why}" for n, why in list(unavailable.items())[:20])
            + (" ..." if len(unavailable) > 20 else "")
            + ")"
        )
    )
    missing = summary["missing_resources"]
    console.print(
        f"references to missing resources: {sum(len(v) for v in missing.values())}"
        + (
            ""
            if not missing
            else " ("
            + "; ".join(f"{n}: {', '.join(v)}" for n, v in list(missing.items())[:20])
            + ")"
        )
    )
    if summary["answers_without_statement"]:
        console.print(
            f"answers without a statement (ignored): {len(summary['answers_without_statement'])}"
        )
    console.print(f"answers are in {store / stores.PRIVATE / stores.ANSWERS} (mode 0600)")
