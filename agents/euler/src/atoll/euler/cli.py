"""`atoll euler`: import problems, evaluate Pi on them, score, progress, report, transfer.

Every command prints one `error:` line (exit 2) for input it cannot use;
infrastructure failures during a run are recorded as error rows and make the
command exit 1, never turn into scores.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from atoll.core.durable import atomic_write_json, canonical_json

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
app.add_typer(transfer_app)

_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)
EVAL_FILE = "eval.json"


def _fail(message: str, code: int = 2) -> typer.Exit:
    _err.print(f"[bold red]error:[/bold red] {message}", markup=True)
    return typer.Exit(code)


def _say(line: str) -> None:
    _err.print(line, markup=False)


# -- shared model options ---------------------------------------------------------

BASE_URL = typer.Option(..., "--base-url", help="OpenAI-compatible endpoint of the model (…/v1).")
MODEL = typer.Option(..., "--model", help="The model's name at the endpoint.")
API_KEY_ENV = typer.Option(
    "OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the endpoint's key."
)
WORKERS = typer.Option(1, "--workers", min=1, help="Rollouts run at a time.")
REVISION = typer.Option(
    None,
    "--model-revision",
    help="Checkpoint or adapter the endpoint serves under the model's name; part of the model signature.",
)
THINKING = typer.Option(
    None, "--thinking", help="Pi's thinking level (off, minimal, low, medium, high, xhigh)."
)
SYSTEM_PROMPT = typer.Option(
    None, "--system-prompt", help="A file whose text replaces Pi's system prompt."
)
MAX_TURNS = typer.Option(
    30, "--max-turns", min=1, help="Model turns per rollout before Pi is aborted."
)
TIMEOUT = typer.Option(900.0, "--timeout", min=1, help="Wall clock of one rollout, in seconds.")
IMAGE = typer.Option(
    None, "--image", help="Rollout image (tag or ID); default: atoll's, built on first use."
)
LANGUAGES = typer.Option(
    "python,javascript",
    "--languages",
    help="Comma-separated: python, javascript (julia is refused: the image lacks it).",
)
APPROACHES = typer.Option(
    "direct",
    "--approaches",
    help="Comma-separated prompt variants: direct, brute-force-then-optimize, math-first.",
)


_FLAGS = {
    "base_url": "--base-url",
    "model": "--model",
    "api_key_env": "--api-key-env",
    "thinking": "--thinking",
    "system_prompt": "--system-prompt",
    "max_turns": "--max-turns",
    "timeout_s": "--timeout",
}


def _runner_settings(
    base_url: str,
    model: str,
    api_key_env: str,
    thinking: str | None,
    system_prompt: Path | None,
    max_turns: int,
    timeout: float,
    revision: str | None,
    workers: int,
    image: str | None,
) -> Any:
    from atoll.euler import signature
    from atoll.euler.evaluate import Settings
    from atoll.pi.rollout import SettingsError
    from atoll.pi.rollout import build_settings as build

    values: dict[str, Any] = {
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
        "max_turns": max_turns,
        "timeout_s": timeout,
    }
    if thinking:
        values["thinking"] = thinking
    if system_prompt is not None:
        values["system_prompt"] = system_prompt
    try:
        pi = build(values)
    except SettingsError as exc:
        message = str(exc)
        for field, flag in _FLAGS.items():
            message = message.replace(f"--ak {field}:", f"{flag}:")
        raise _fail(message) from None
    digest, parts = signature.of(pi, revision)
    return Settings(
        pi=pi,
        model_revision=revision,
        workers=workers,
        image=image,
        signature=digest,
        signature_parts=parts,
    )


def _languages(text: str) -> tuple[str, ...]:
    from atoll.euler.runtimes import LanguageError, parse_languages

    try:
        return parse_languages(text)
    except LanguageError as exc:
        raise _fail(str(exc)) from None


def _approaches(text: str) -> tuple[str, ...]:
    from atoll.euler.prompts import ApproachError, parse_approaches

    try:
        return parse_approaches(text)
    except ApproachError as exc:
        raise _fail(str(exc)) from None


def _open_store(path: Path) -> Any:
    from atoll.euler.store import Store, StoreError

    try:
        return Store(path)
    except StoreError as exc:
        raise _fail(str(exc)) from None


def _preflight(runner: Any, languages: tuple[str, ...]) -> None:
    """Check the key, engine, image and Pi; refuse languages the image lacks, before any write."""
    from atoll.euler.runtimes import LanguageError, parse_languages
    from atoll.pi.rollout import ContainerError, PiUnavailable, SettingsError

    try:
        info = runner.preflight()
    except (SettingsError, ContainerError, PiUnavailable) as exc:
        raise _fail(str(exc)) from None
    lacks = ", ".join(info.get("lacks") or []) or "nothing"
    _say(
        f"rollout image {info['image_id'][:19]} ({info['tag']}): {info['runtimes']}; lacks {lacks}"
    )
    available = frozenset(info.get("runtimes") or {}) - frozenset(info.get("lacks") or [])
    try:
        parse_languages(",".join(languages), available=available)
    except LanguageError as exc:
        raise _fail(str(exc)) from None


# -- import ------------------------------------------------------------------------


@app.command("import")
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
        raise _fail("name a ZIP or pass --sample (one of the two)")
    try:
        if sample:
            from atoll.euler.sample import SampleError, catalog

            try:
                found = catalog()
            except SampleError as exc:
                raise _fail(str(exc)) from None
        else:
            assert zip_path is not None
            found = importer.read_zip(zip_path)
        index = stores.write(found, store)
    except importer.ImportError_ as exc:
        raise _fail(str(exc)) from None
    except stores.StoreError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"cannot write the store {store}: {exc.strerror or exc}") from None
    summary = index["summary"]
    if as_json:
        _out.print_json(
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
    _out.print(f"store {store} (digest {index['digest'][:16]}), from {index['source'].get('name')}")
    for kind in ("statements", "answers"):
        for line in layout.get(kind) or []:
            _out.print(f"  {kind}: {line}")
    _out.print(
        f"problems: {summary['problems']}  answers: {summary['answers']}  resources: {summary['resources']}"
    )
    unavailable = summary["unavailable"]
    _out.print(
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
    _out.print(
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
        _out.print(
            f"answers without a statement (ignored): {len(summary['answers_without_statement'])}"
        )
    _out.print(f"answers are in {store / stores.PRIVATE / stores.ANSWERS} (mode 0600)")


# -- eval --------------------------------------------------------------------------


@app.command("eval")
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
) -> None:
    """Fan out problems x languages x approaches x samples as Pi rollouts; rows and a summary in OUT.

    Rerunning the same command resumes: attempts with a scored row are not run
    again, and attempts that hit infrastructure errors are retried.
    """
    from atoll.euler import report, rows
    from atoll.euler.curriculum import Attempt
    from atoll.euler.evaluate import (
        Interrupted,
        Runner,
        StoreSource,
        parse_problems,
        run_to_end,
    )

    try:
        numbers = parse_problems(problems)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    langs, apps = _languages(languages), _approaches(approaches)
    opened = _open_store(store)
    unavailable = [why for n in numbers if (why := opened.missing(n)) is not None]
    if unavailable:
        raise _fail(
            "; ".join(unavailable[:5])
            + ("; ..." if len(unavailable) > 5 else "")
            + ": leave these out of --problems"
        )
    settings = _runner_settings(
        base_url,
        model,
        api_key_env,
        thinking,
        system_prompt,
        max_turns,
        timeout,
        model_revision,
        workers,
        image,
    )
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
    runner = Runner(StoreSource(opened), settings, say=_say)
    _preflight(runner, langs)
    _claim_run_dir(out, identity, run_id)
    attempts = [
        Attempt("eval", n, lang, app, k)
        for n in numbers
        for lang in langs
        for app in apps
        for k in range(samples)
    ]
    _say(
        f"{len(attempts)} attempts ({len(numbers)} problems x {len(langs)} languages x {len(apps)} approaches x {samples} samples), {workers} at a time"
    )
    rows_path = out / rows.ROWS_FILE
    try:
        run_to_end(runner.run(attempts, out, rows_path, run_id))
    except Interrupted:
        raise _fail(
            "interrupted: the rows written so far are kept; rerun the same command to resume", 130
        ) from None
    data = [r for r in rows.latest_per_attempt(rows.read(rows_path)) if r.get("run_id") == run_id]
    image = runner.image_info or {}
    notes = [
        f"Store {opened.digest[:16]}; problems {problems}; languages {', '.join(langs)}; "
        f"approaches {', '.join(apps)}; {samples} samples each. Rollout image "
        f"{image.get('image_id')} ({image.get('runtimes')}). Model signature "
        f"{settings.signature[:16]} ({json.dumps(settings.signature_parts, sort_keys=True)})."
    ]
    text = report.write(data, out, title=f"Pi on Project Euler: {model}", notes=notes)
    _out.print(text, markup=False)
    errors = sum(1 for r in data if r.get("status") != "scored")
    if errors:
        raise _fail(
            f"{errors} attempts ended in infrastructure errors (not scored); rerun to retry them", 1
        )


def _claim_run_dir(out: Path, identity: dict[str, Any], run_id: str) -> None:
    path = out / EVAL_FILE
    if path.exists():
        try:
            existing = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise _fail(f"{path} cannot be read: {exc}") from None
        if existing.get("run_id") != run_id:
            changed = [k for k in identity if existing.get("identity", {}).get(k) != identity[k]]
            raise _fail(
                f"{out} holds an evaluation with other settings ({', '.join(changed)}); use a new --out"
            )
        _say(f"resuming the evaluation in {out}")
        return
    if out.exists() and any(out.iterdir()):
        raise _fail(f"{out} is not empty and holds no evaluation; use a new --out")
    atomic_write_json(path, {"run_id": run_id, "identity": identity}, make_parents=True)


# -- score -------------------------------------------------------------------------


@app.command("score")
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
        raise _fail(str(exc)) from None
    meta = (record.get("metadata") or {}).get("euler") or {}
    language = language or meta.get("language") or record.get("language")
    if language not in RUNTIMES:
        raise _fail(
            f"the assigned language is unknown ({language!r}); pass --language python|javascript|julia"
        )
    if expected is None:
        if store is None:
            raise _fail("pass --store DIR (with the rollout's problem) or --expected VALUE")
        number = problem or meta.get("problem")
        if not isinstance(number, int):
            raise _fail("the rollout does not say its problem; pass --problem N")
        try:
            expected = _open_store(store).expected(number)
        except StoreError as exc:
            raise _fail(str(exc)) from None
    if not record.get("scorable", False):
        raise _fail(
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
        _out.print_json(json.dumps(payload))
    else:
        _out.print("PASS" if result.passed else "FAIL", markup=False)
        for name in gate.CONDITIONS:
            mark = "ok  " if result.conditions[name] else "FAIL"
            detail = result.details.get(name, "")
            _out.print(f"  {mark} {name}" + (f": {detail}" if detail else ""), markup=False)
        for item in result.rejected_executions:
            _out.print(
                f"  rejected run #{item['seq']} ({item['reason']}): {item['command'][:100]}",
                markup=False,
            )
        shown = result.presentation
        _out.print(
            f"  presentation (diagnostic only): boxed {shown['boxed']}, FINAL_ANSWER lines {shown['final_answer_lines']}",
            markup=False,
        )
        if disqualified:
            paths = ", ".join(str(h.get("text")) for h in audit.get("hits") or [])
            _out.print(
                f"DISQUALIFIED by the path audit (attempted: {paths}); pre-audit score {int(result.passed)}",
                markup=False,
            )
    if not result.passed or disqualified:
        raise typer.Exit(1)


# -- curriculum ----------------------------------------------------------------------


@app.command("curriculum")
def curriculum_command(
    model: str = MODEL,
    rounds: int = typer.Option(
        ..., "--rounds", min=1, help="Rounds to run now (a resumed round counts)."
    ),
    store: Path = typer.Option(..., "--store", help="The store made by `atoll euler import`."),
    state: Path = typer.Option(
        Path("euler-curriculum"), "--state", help="State directory (resumed if it exists)."
    ),
    base_url: str = BASE_URL,
    api_key_env: str = API_KEY_ENV,
    languages: str = typer.Option(
        "python", "--languages", help="Comma-separated: python, javascript."
    ),
    approaches: str = APPROACHES,
    samples: int = typer.Option(
        4, "--samples", min=1, help="Frontier attempts per language x approach in a round."
    ),
    threshold: float = typer.Option(
        0.5, "--threshold", help="Frontier pass fraction a round needs to pass."
    ),
    consecutive: int = typer.Option(
        2, "--consecutive", min=1, help="Consecutive passing rounds that master a problem."
    ),
    replay: str = typer.Option(
        "0.7,0.2,0.1",
        "--replay",
        help="Mix of current, recently mastered and older mastered attempts.",
    ),
    no_replay: bool = typer.Option(
        False, "--no-replay", help="Frontier attempts only (mix 1,0,0)."
    ),
    recent: int = typer.Option(
        3, "--recent", min=1, help="How many of the last mastered problems count as recent."
    ),
    start: int = typer.Option(1, "--start", min=1, help="First problem of a new curriculum."),
    workers: int = WORKERS,
    model_revision: str | None = REVISION,
    thinking: str | None = THINKING,
    system_prompt: Path | None = SYSTEM_PROMPT,
    max_turns: int = MAX_TURNS,
    timeout: float = TIMEOUT,
    image: str | None = IMAGE,
) -> None:
    """Advance through problems in strict numerical order; resumable, with a replay mix.

    Exit status: 0 when the rounds ran, 3 when progression stopped at a
    problem with a missing statement, answer or resource, 1 when a round was
    left open by infrastructure errors.
    """
    from atoll.euler import curriculum, curriculum_run
    from atoll.euler.evaluate import Interrupted, Runner, StoreSource

    try:
        mix = (1.0, 0.0, 0.0) if no_replay else tuple(float(p) for p in replay.split(","))
    except ValueError:
        raise _fail(f"--replay {replay!r}: three fractions like 0.7,0.2,0.1") from None
    opened = _open_store(store)
    try:
        config = curriculum.Config(
            store_digest=opened.digest,
            languages=_languages(languages),
            approaches=_approaches(approaches),
            samples=samples,
            threshold=threshold,
            consecutive=consecutive,
            replay=mix,  # type: ignore[arg-type]
            recent=recent,
            start=start,
        )
    except curriculum.CurriculumError as exc:
        raise _fail(str(exc)) from None
    settings = _runner_settings(
        base_url,
        model,
        api_key_env,
        thinking,
        system_prompt,
        max_turns,
        timeout,
        model_revision,
        workers,
        image,
    )
    runner = Runner(StoreSource(opened), settings, say=_say)
    _preflight(runner, config.languages)
    try:
        outcome = curriculum_run.run(state, opened, config, runner, rounds, _say)
    except curriculum.CurriculumError as exc:
        raise _fail(str(exc)) from None
    except Interrupted:
        raise _fail(
            "interrupted: the round's rows are kept; rerun the same command to resume it", 130
        ) from None
    current = outcome.state
    _out.print(
        f"curriculum {state}: current problem {current.current_problem}, mastered through "
        f"{current.mastered_through}, consecutive passing rounds {current.consecutive_passes}/"
        f"{config.consecutive}, rounds completed {current.rounds_completed}",
        markup=False,
    )
    if outcome.incomplete:
        raise _fail(outcome.incomplete, 1)
    if outcome.stopped:
        raise _fail(
            f"progression stopped at problem {current.current_problem}: {outcome.stopped}", 3
        )


# -- report --------------------------------------------------------------------------


@app.command("report")
def report_command(
    paths: list[Path] = typer.Argument(
        ..., metavar="ROWS...", help="rows.jsonl files, or directories holding them."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Where report.md and the plots go (default: beside the first ROWS)."
    ),
    ks: str = typer.Option("1,5,10", "--k", help="pass@k for these k."),
    title: str = typer.Option("Pi on Project Euler", "--title", help="The report's title."),
) -> None:
    """Markdown summary (pass fraction, pass@k, execution rate, median latency by problem,
    language, approach and phase) and PNG plots, recomputed from raw rows."""
    from atoll.euler import report, rows

    try:
        k_values = tuple(sorted({int(k) for k in ks.split(",") if k.strip()}))
        if not k_values or min(k_values) < 1:
            raise ValueError
    except ValueError:
        raise _fail(f"--k {ks!r}: positive integers like 1,5,10") from None
    warnings: list[str] = []
    try:
        data = rows.read_all(paths, warnings=warnings)
    except rows.RowsError as exc:
        raise _fail(str(exc)) from None
    for warning in warnings:
        _say(f"warning: {warning}")
    data = rows.latest_per_attempt(data)
    target = out or (paths[0] if paths[0].is_dir() else paths[0].parent) / "report"
    text = report.write(data, target, title=title, ks=k_values, name="report.md")
    _out.print(text, markup=False)
    _say(f"written: {target / 'report.md'} and its plots")


# -- transfer ------------------------------------------------------------------------


@transfer_app.command("run")
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
        raise _fail(str(exc)) from None
    langs, apps = _languages(languages), _approaches(approaches)
    settings = _runner_settings(
        base_url,
        model,
        api_key_env,
        thinking,
        system_prompt,
        max_turns,
        timeout,
        model_revision,
        workers,
        image,
    )
    runner = Runner(transfer_run.TransferSource(tasks), settings, say=_say)
    _preflight(runner, langs)
    try:
        done = transfer_run.run(
            out,
            runner,
            languages=langs,
            approaches=apps,
            samples=samples,
            acceptance=rule,
            say=_say,
        )
    except ManifestError as exc:
        raise _fail(str(exc), 1) from None
    except Interrupted:
        raise _fail("interrupted: rerun the same command to resume", 130) from None
    _out.print((out / "summary.md").read_text("utf-8"), markup=False)
    _out.print(
        f"manifest completed: {out / 'manifest.json'} (result {done['result_sha256'][:16]}, summary {done['summary_sha256'][:16]})",
        markup=False,
    )


@transfer_app.command("compare")
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
        raise _fail(str(exc)) from None
    if as_json:
        _out.print_json(json.dumps(result))
    else:
        _out.print(compare.markdown(result), markup=False)
