"""The bootstrap corpus rendered by the cookbook renderer and trained on the local Tinker.

Rendering runs in the managed Python 3.11 (where the cookbook lives); the
check beside it (tests/support/render_check.py) asks the same renderer,
separately, for the generation prompt of every prefix. Training uses the
session's tiny model and local server (tests/pi_train/conftest.py).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest
from support.tinker_local import run_atoll

from atoll.pi_train import env as managed_env
from atoll.pi_train.bootstrap import build

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
CHECK = Path(__file__).resolve().parents[2] / "support" / "render_check.py"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory, venv_bin: Path) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "c"
    done = run_atoll(venv_bin, {}, "pi", "bootstrap", "build", str(out), "--conversations", "5")
    assert done.returncode == 0, done.stderr
    return out


def test_each_example_is_the_renderers_prompt_for_its_prefix_and_trains_only_its_target(
    small_corpus: Path, tiny_model: Path, venv_bin: Path, tmp_path: Path
) -> None:
    rendered = tmp_path / "examples.jsonl"
    done = run_atoll(
        venv_bin, {}, "pi", "bootstrap", "render", str(small_corpus),
        "--base-model", str(tiny_model), "--out", str(rendered),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    examples = _rows(rendered)
    manifest, conversations = build.read(small_corpus)
    # One example per assistant message: never one sequence for all of a conversation's turns.
    assert len(examples) == manifest["examples"] > len(conversations)

    installed = managed_env.installed()
    assert installed is not None
    job = {
        "conversations": conversations,
        "tools": manifest["tools"],
        "system_prompt": manifest["system_prompt"],
        "base_model": str(tiny_model),
        "renderer": "qwen3",
    }
    check = subprocess.run(
        [str(installed.python), str(CHECK)], input=json.dumps(job), capture_output=True,
        text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr
    prompts = [json.loads(line) for line in check.stdout.splitlines()]
    assert len(prompts) == len(examples)
    for example, expected in zip(examples, prompts, strict=True):
        assert (example["conversation"], example["message"]) == (
            expected["conversation"],
            expected["message"],
        )
        weights, tokens = example["weights"], example["tokens"]
        start = next(i for i, w in enumerate(weights) if w > 0)
        # The untrained part is exactly the renderer's prompt for this prefix; everything
        # after it, the target message, is trained.
        assert tokens[:start] == expected["prompt"]
        assert all(w > 0 for w in weights[start:])


def test_bootstrap_training_runs_the_cookbook_loop_on_the_local_tinker(
    small_corpus: Path,
    server_env: dict[str, str],
    venv_bin: Path,
    tiny_model: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    base = [
        "pi", "bootstrap", "train", str(small_corpus), "--base-model", str(tiny_model),
        "--batch-size", "2", "--max-length", "3072", "--out", str(out),
    ]  # fmt: skip
    first = run_atoll(venv_bin, server_env, *base, "--steps", "1")
    assert first.returncode == 0, first.stderr
    assert [r["step"] for r in _rows(out / "metrics.jsonl")] == [0]
    # A larger --steps continues the run from its saved state; it does not start over.
    base += ["--steps", "2"]
    done = run_atoll(venv_bin, server_env, *base)
    assert done.returncode == 0, done.stderr
    assert "Resumed training from tinker://" in (out / "logs.log").read_text()
    rows = _rows(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1]
    for row in rows:
        assert row["num_sequences"] == 2 and row["num_loss_tokens"] > 0
        assert math.isfinite(row["train_mean_nll"]) and row["train_mean_nll"] > 0
    checkpoints = _rows(out / "checkpoints.jsonl")
    assert checkpoints[-1]["name"] == "final"
    assert all(c["state_path"].startswith("tinker://") for c in checkpoints)
    counts = json.loads((out / "examples.json").read_text())
    assert counts["rendered"] == json.loads((small_corpus / build.MANIFEST).read_text())["examples"]
    assert 0 < counts["trained"] <= counts["rendered"]

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["train_on_what"] == "last_assistant_message"
    assert (
        manifest["corpus"]["sha256"]
        == json.loads((small_corpus / build.MANIFEST).read_text())["files"][build.CONVERSATIONS]
    )
    assert manifest["config"]["steps"] == 2
    summary = (out / "summary.md").read_text()
    assert "last_assistant_message" in summary and "| 1 |" in summary
    assert server_env["TINKER_API_KEY"] not in "".join(
        p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()
    )

    # A rerun finds the run finished and trains nothing more; other settings are refused.
    again = run_atoll(venv_bin, server_env, *base, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "done already" in again.stderr
    assert [r["step"] for r in _rows(out / "metrics.jsonl")] == [0, 1]
    other = run_atoll(venv_bin, server_env, *base, "--lora-rank", "4", timeout=300)
    assert other.returncode == 2 and "lora_rank" in other.stderr
