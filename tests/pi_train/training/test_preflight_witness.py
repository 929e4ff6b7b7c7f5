"""The loopback witness of the preflight: past it a run reaches Tinker, refused it sends nothing.

The fast tests (test_preflight.py) show a broken reference refusing the run
with the recording server unasked. That silence means something only if the
same command, with the references intact, does ask it: here the real
command, in the managed environment, passes the preflight and its trainer's
first Tinker call (the SDK's client configuration) lands on the recorder,
which answers 401 so the run ends at once with nothing trained. The same
run directory is then refused by a broken reference (nothing sent, not one
byte of the run changed) and taken up again once the reference is right.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from support.request_recorder import RequestRecorder
from support.tinker_local import RUN_FLAGS, run_atoll
from typer.testing import CliRunner

from atoll.euler import writer
from atoll.pi_train.cli import train_app
from atoll.pi_train.hidden import families
from atoll.pi_train.shell import families as shell_families

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

FIRST_TINKER_CALL = ("POST", "/api/v1/client/config")


def _contents(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run_dir.iterdir() if p.name not in writer.FILES}


def _break(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Put a family with a wrong python reference in the registry `command` reads."""
    registry: dict = families.FAMILIES if command == "hidden" else shell_families.FAMILIES
    name = "recurrence" if command == "hidden" else "filtered-logs"
    family = registry[name]
    wrong = "def solve(*args):\n    return 1\n" if command == "hidden" else "print(1)\n"
    broken = dataclasses.replace(family, solutions={**family.solutions, "python": wrong})
    monkeypatch.setitem(registry, name, broken)


@pytest.mark.parametrize("command", ["hidden", "shell"])
def test_past_the_preflight_tinker_is_asked_and_a_refusal_leaves_the_run_as_it_was(
    command: str,
    venv_bin: Path,
    tiny_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "run"
    args = [command, "--base-model", str(tiny_model), *RUN_FLAGS, "--iterations", "1",
            "--languages", "python,javascript", "--out", str(out)]  # fmt: skip
    with RequestRecorder() as tinker:
        env = {**os.environ, "TINKER_API_KEY": "tml-preflight", "TINKER_BASE_URL": tinker.url}
        first = run_atoll(venv_bin, env, "pi", "train", *args, timeout=600)
        # Past the preflight the trainer starts and its first Tinker call reaches the recorder.
        assert first.returncode == 1, first.stderr[-3000:]
        assert tinker.requests[:1] == [FIRST_TINKER_CALL], tinker.requests
        said = [line for line in first.stderr.splitlines() if line.startswith("preflight:")]
        assert len(said) == 1 and "got the full reward through the sandbox" in said[0], said
        record = json.loads((out / "preflight.json").read_text())
        assert record["passed"] is True
        assert {(r["family"], r["language"]) for r in record["references"]} == {
            (f, lang)
            for f in (families.FAMILIES if command == "hidden" else shell_families.FAMILIES)
            for lang in ("python", "javascript")
        }
        before, asked = _contents(out), len(tinker.requests)
        assert {"manifest.json", "preflight.json", "trainer.log"} <= set(before)

        monkeypatch.setenv("TINKER_API_KEY", "tml-preflight")
        monkeypatch.setenv("TINKER_BASE_URL", tinker.url)
        with monkeypatch.context() as broken:
            _break(command, broken)
            refused = CliRunner().invoke(train_app, args)
        assert refused.exit_code == 2, refused.output
        [line] = refused.output.strip().splitlines()
        assert line.startswith("error: preflight: the reference solution of family")
        assert len(tinker.requests) == asked  # nothing sent
        assert _contents(out) == before  # nothing of the run changed

        # The run directory is taken up again with the reference restored.
        again = run_atoll(venv_bin, env, "pi", "train", *args, timeout=600)
        assert again.returncode == 1, again.stderr[-3000:]
        assert tinker.requests[asked:][:1] == [FIRST_TINKER_CALL]
