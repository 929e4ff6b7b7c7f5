"""Bad input to `atoll emit frontiersmith`: one clear error line, before anything is paid or written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.frontiersmith_cli import emit
from support.openai_server import ScriptedOpenAIServer
from support.ports import free_port

from atoll.core.ledger import Ledger
from atoll.frontiersmith.config import RunConfig
from atoll.frontiersmith.runs import create_run

pytestmark = pytest.mark.timeout(120)


def _common(server: ScriptedOpenAIServer, seed_file: Path, out: Path) -> list[str]:
    return [
        "--seeds", str(seed_file), "--target", "1", "--model", "scripted",
        "--base-url", server.base_url, "--price-in", "1", "--price-out", "2", "--out", str(out),
    ]  # fmt: skip


def _one_line_error(done, *fragments: str) -> None:
    assert done.returncode == 2, done.stderr
    text = done.stdout + done.stderr
    assert "Traceback" not in text
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error:")
    for fragment in fragments:
        assert fragment in lines[0]


def _nothing_paid_or_written(server: ScriptedOpenAIServer, out: Path) -> None:
    assert server.chat_requests() == []
    assert not (out / "runs").exists() and not (out / "tasks").exists()


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"--budget": None}, ["--budget is required"]),
        ({"--budget": "0.01"}, ["below one request's worst-case reservation", "raise --budget"]),
        ({"--budget": "lots"}, ["is not an amount of dollars"]),
        ({"--seeds": "contests"}, ["unknown seed set 'contests'"]),
        ({"--environment": "no-such-env"}, ["unknown environment 'no-such-env'", "atoll-local"]),
        ({"--price-out": None}, ["--price-in and --price-out go together"]),
        ({"--min-divergence": "1.5"}, ["--min-divergence must be between 0 and 1"]),
        ({"--solutions": "1"}, ["--solutions must be at least 2"]),
        ({"--language": "rust"}, ["--language must be one of python, cpp, not 'rust'"]),
        ({"--worker-price": "-1"}, ["--worker-price '-1' is not a price in USD per hour"]),
        ({"--worker-price": "cheap"}, ["--worker-price 'cheap' is not a price in USD per hour"]),
        ({"--rounds": "0"}, ["--rounds must be at least 1"]),
        ({"--population": "0"}, ["--population must be at least 1"]),
    ],
)
@pytest.mark.slow
def test_bad_flags(venv_bin, tmp_path, server, seed_file, change, fragments) -> None:
    out = tmp_path / "out"
    args = _common(server, seed_file, out) + ["--budget", "5"]
    for flag, value in change.items():
        if flag in args:
            at = args.index(flag)
            del args[at : at + 2]
        if value is not None:
            args += [flag, value]
    done = emit(venv_bin, tmp_path, *args)
    _one_line_error(done, *fragments)
    _nothing_paid_or_written(server, out)


@pytest.mark.slow
def test_unreachable_endpoint(venv_bin, tmp_path, server, seed_file) -> None:
    port = free_port()  # nothing listens there
    out = tmp_path / "out"
    args = _common(server, seed_file, out) + ["--budget", "5"]
    args[args.index("--base-url") + 1] = f"http://127.0.0.1:{port}/v1"
    done = emit(venv_bin, tmp_path, *args)
    _one_line_error(done, "cannot be reached", f"127.0.0.1:{port}")
    _nothing_paid_or_written(server, out)


@pytest.mark.slow
def test_missing_key_names_the_variable(venv_bin, tmp_path, server, seed_file) -> None:
    out = tmp_path / "out"
    args = _common(server, seed_file, out) + ["--budget", "5", "--api-key-env", "NO_SUCH_KEY_VAR"]
    done = emit(venv_bin, tmp_path, *args)
    _one_line_error(done, "NO_SUCH_KEY_VAR")
    _nothing_paid_or_written(server, out)


@pytest.mark.slow
def test_unknown_model_price(venv_bin, tmp_path, server, seed_file) -> None:
    out = tmp_path / "out"
    args = _common(server, seed_file, out) + ["--budget", "5"]
    for flag in ("--price-in", "--price-out"):
        at = args.index(flag)
        del args[at : at + 2]
    done = emit(venv_bin, tmp_path, *args)
    _one_line_error(done, "no price is known for model 'scripted'")


def _stored_run(out: Path, seed_file: Path, server: ScriptedOpenAIServer, fingerprint: str) -> str:
    config = RunConfig(
        seeds=str(seed_file.resolve()), target=1, budget_micro=5_000_000, model="scripted",
        base_url=server.base_url, price_in="1", price_out="2", base_image="python:3.12-slim",
    )  # fmt: skip
    run = create_run(out, config, fingerprint, "an older code hash")
    Ledger.create(run.ledger_path, config.budget_micro).close()
    return run.run_id


@pytest.mark.slow
def test_resume_with_other_settings_is_refused(venv_bin, tmp_path, server, seed_file) -> None:
    out = tmp_path / "out"
    run_id = _stored_run(out, seed_file, server, "f" * 64)
    done = emit(venv_bin, tmp_path, "--out", str(out), "--resume", run_id, "--model", "another")
    _one_line_error(done, "fingerprint differs", "--model another (the run has scripted)")
    done = emit(venv_bin, tmp_path, "--out", str(out), "--resume", run_id)
    _one_line_error(done, "fingerprint differs", "the installed code changed")
    assert server.chat_requests() == []


@pytest.mark.slow
def test_a_new_run_in_a_directory_that_holds_one(venv_bin, tmp_path, server, seed_file) -> None:
    out = tmp_path / "out"
    run_id = _stored_run(out, seed_file, server, "f" * 64)
    done = emit(venv_bin, tmp_path, *_common(server, seed_file, out), "--budget", "5")
    _one_line_error(done, f"already holds run {run_id}", f"--resume {run_id}")
    assert server.chat_requests() == []


HOLD_RUN = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from atoll.frontiersmith.runs import RunDir\n"
    "lock = RunDir(Path(sys.argv[1]), sys.argv[2]).lock()\n"
    "print('held', flush=True)\n"
    "time.sleep(120)\n"
)


@pytest.mark.slow
def test_a_run_another_process_holds_is_refused_naming_it(
    venv_bin, tmp_path, server, seed_file
) -> None:
    out = tmp_path / "out"
    run_id = _stored_run(out, seed_file, server, "f" * 64)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_RUN, str(out), run_id], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        done = emit(venv_bin, tmp_path, "reconcile", run_id, "--out", str(out))
        _one_line_error(done, f"run {run_id} (", "is in use by `", f"(pid {holder.pid} on ")
    finally:
        holder.kill()
        holder.wait()
    done = emit(venv_bin, tmp_path, "reconcile", run_id, "--out", str(out), "--list")
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_help_shows_every_default_and_flags_as_flags(venv_bin, tmp_path) -> None:
    done = emit(venv_bin, tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "None" not in text and "<bool>" not in text
    for flag, default in [
        ("--base-url", "[default: https://api.openai.com/v1]"),
        ("--api-key-env", "[default: OPENAI_API_KEY]"),
        ("--workers", "[default: 1]"),
        ("--environment", "as `atoll run` chooses, else atoll-local]"),
        ("--solutions", "[default: 3]"),
        ("--max-repairs", "[default: 2]"),
        ("--min-divergence", "[default: 0.3]"),
        ("--min-score-spread", "[default: 0.001]"),
        ("--min-execution-diversity", "[default: 0.3]"),
        ("--max-completion-tokens", "[default: 16384]"),
        ("--base-image", "[default: python:3.12-slim]"),
        ("--worker-price", "[default: none: the report says the worker cost is unknown]"),
        ("--rounds", "[default: 1]"),
        ("--population", "[default: no cap]"),
    ]:
        block = " ".join(text.split(flag, 1)[1].split("\n  --", 1)[0].split())
        assert default in block, (flag, block)
    assert re.search(r"^  --raise-budget\s+On --resume", text, re.MULTILINE), text
