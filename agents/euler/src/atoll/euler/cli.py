"""`atoll euler`: import problems, evaluate Pi on them, score, progress, report, transfer.

Each command is its own module under `atoll.euler.commands`; this module only
assembles them. Every command prints one `error:` line (exit 2) for input it
cannot use; infrastructure failures during a run are recorded as error rows
and make the command exit 1, never turn into scores.
"""

from __future__ import annotations

import typer

from atoll.euler.commands import (
    curriculum,
    eval,
    import_store,
    report,
    score,
    transfer_compare,
    transfer_run,
)

app = typer.Typer(
    name="euler",
    help="Pi on Project Euler: import, eval, score, curriculum, report, frozen transfer evaluation.",
    no_args_is_help=True,
    add_completion=False,
)
transfer_app = typer.Typer(
    name="transfer",
    help="The frozen transfer evaluation: four non-Euler file tasks under a manifest.",
    no_args_is_help=True,
    add_completion=False,
)
app.command("import")(import_store.import_command)
app.command("eval")(eval.eval_command)
app.command("score")(score.score_command)
app.command("curriculum")(curriculum.curriculum_command)
app.command("report")(report.report_command)
transfer_app.command("run")(transfer_run.transfer_run_command)
transfer_app.command("compare")(transfer_compare.transfer_compare_command)
app.add_typer(transfer_app)
