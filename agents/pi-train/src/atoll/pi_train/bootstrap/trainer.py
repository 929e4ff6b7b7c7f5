"""`atoll pi bootstrap render|train`: the corpus rendered, and trained on with the cookbook's SL loop.

Both launch `managed/bootstrap.py` with the managed Python 3.11 (where the
cookbook and its renderers live); the 3.12 side reads the corpus, holds the
run directory, writes the manifest and the summary. `train` follows the
part-1 commands: one writer per run directory, the key only in the
trainer's environment, a rerun resumes after the last saved step and a run
with other settings in the same directory is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_text
from atoll.pi_train import env as managed_env
from atoll.pi_train.bootstrap import build
from atoll.pi_train.training import run, summary, trained_on

COMMAND = "atoll pi bootstrap train"
TRAIN_ON_WHAT = "last_assistant_message"
EXAMPLES_FILE = "examples.json"  # written by the managed trainer: rendered, trained, too long
SUMMARY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("train NLL", "train_mean_nll"),
    ("sequences", "num_sequences"),
    ("tokens", "num_tokens"),
    ("loss tokens", "num_loss_tokens"),
    ("learning rate", "learning_rate"),
    ("seconds", "time/finish_batch"),
)


@dataclass(frozen=True)
class BootstrapSettings:
    base_model: str
    renderer: str
    base_url: str
    lora_rank: int
    learning_rate: float
    batch_size: int
    steps: int
    max_length: int
    # The training state the run starts from (`--load-checkpoint`); None: the base model.
    load_checkpoint: str | None = None


def _job(manifest: dict[str, Any], conversations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "conversations": conversations,
        "tools": manifest["tools"],
        "system_prompt": manifest["system_prompt"],
        "seed": manifest["seed"],
    }


def _launch(
    job: dict[str, Any],
    child_env: dict[str, str],
    log: Path,
    cwd: Path,
    say: Callable[[str], None],
    watch: Callable[[], None] = lambda: None,
) -> int:
    """Run the managed script on `job`; its exit status (its output appended to `log`)."""
    env = managed_env.ensure(say)
    with (
        log.open("ab") as sink,
        run.trainer_process(
            [str(env.python), str(managed_env.managed_script("bootstrap"))], child_env, sink, cwd
        ) as child,
    ):
        assert child.stdin is not None
        child.stdin.write(json.dumps(job).encode())
        child.stdin.close()
        while child.poll() is None:
            watch()
            time.sleep(0.5)
    watch()
    return int(child.returncode)


def render(
    corpus_dir: Path, base_model: str, renderer: str, out: Path, say: Callable[[str], None]
) -> int:
    """Write every example's tokens and weights to `out` (JSONL); how many examples."""
    manifest, conversations = build.read(corpus_dir)
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    job = {
        **_job(manifest, conversations),
        "mode": "render",
        "base_model": base_model,
        "renderer": renderer,
        "out": str(partial),
    }
    child_env = run.trainer_environment(base_model, key="")
    child_env.pop("TINKER_API_KEY")
    log = out.with_name(f"{out.name}.log")
    status = _launch(job, child_env, log, out.parent, say)
    if status != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-12:])
        raise run.RunError(f"rendering failed (exit {status}):\n{tail}")
    os.replace(partial, out)
    return sum(1 for line in out.read_text().splitlines() if line.strip())


def steps_done(run_dir: Path) -> int:
    """Steps whose metrics the cookbook logged."""
    return len({row.get("step") for row in summary.read_metrics(run_dir)})


def finished(run_dir: Path, steps: int) -> bool:
    """Whether the cookbook's final checkpoint records `steps` steps done (one per epoch)."""
    path = run_dir / "checkpoints.jsonl"
    if not path.is_file():
        return False
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            if row.get("name") == "final" and int(row.get("epoch", 0)) >= steps:
                return True
    return False


def train(
    corpus_dir: Path,
    settings: BootstrapSettings,
    out: Path,
    progress: Callable[[int, int], None],
    say: Callable[[str], None],
    load_from: str | None = None,
) -> Path:
    """Supervised training on the corpus to `settings.steps`; the summary's path.

    `load_from` is `--load-checkpoint` as given: where the run's lineage is read from.
    """
    key = run.api_key()  # before anything is written: a run without a key never starts
    try:
        manifest, conversations = build.read(corpus_dir)
    except build.CorpusInputError as exc:
        raise run.RunInputError(str(exc)) from None
    corpus = {
        "sha256": manifest["files"][build.CONVERSATIONS],
        "generator_version": manifest["generator_version"],
        "seed": manifest["seed"],
        "conversations": manifest["conversations"],
        "examples": manifest["examples"],
    }
    with contextlib.ExitStack() as stack:
        run.hold_run_dir(stack, out, COMMAND)
        run_manifest = run.prepare_manifest(
            out,
            COMMAND,
            settings,
            {"digest": corpus["sha256"], "examples": corpus["examples"]},
            {"max_length": settings.max_length, "batch_size": settings.batch_size},
            {
                "corpus": corpus,
                "train_on_what": TRAIN_ON_WHAT,
                "one_prefix_per_target": True,
                "loss": "cross_entropy, token mean per example",
            },
            free=("base_url", "steps"),  # how long and where, not what is trained
            trained=trained_on.bootstrap_record(corpus["sha256"]),
            started_from=trained_on.started_from(load_from, settings.load_checkpoint),
        )
        if finished(out, settings.steps):
            progress(settings.steps, settings.steps)
            say(f"{out}: all {settings.steps} steps are done already")
            return write_summary(out, run_manifest)
        job = {
            **_job(manifest, conversations),
            "mode": "train",
            "run_dir": str(out.resolve()),
            **{k: getattr(settings, k) for k in settings.__dataclass_fields__},
        }
        log = out / "trainer.log"
        status = _launch(
            job,
            run.trainer_environment(settings.base_model, key),
            log,
            out,
            say,
            watch=lambda: progress(steps_done(out), settings.steps),
        )
        if status != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-12:])
            raise run.RunError(f"the trainer exited with status {status}:\n{tail}")
        if not finished(out, settings.steps):
            raise run.RunError(f"the trainer stopped before step {settings.steps} (see {log})")
        return write_summary(out, run_manifest)


def write_summary(run_dir: Path, manifest: dict[str, Any]) -> Path:
    rows = summary.read_metrics(run_dir)
    config, corpus = manifest["config"], manifest["corpus"]
    lines = [
        f"# {manifest['command']} — {run_dir.name}",
        "",
        f"Base model `{config['base_model']}`, renderer `{config['renderer']}`, corpus "
        f"`{corpus['sha256'][:16]}` ({corpus['conversations']} conversations, "
        f"{corpus['examples']} examples: one conversation prefix per assistant target, "
        f"`{manifest['train_on_what']}`), {config['batch_size']} examples per step.",
        "",
        *(
            [f"Started from the training state `{config['load_checkpoint']}`.", ""]
            if config.get("load_checkpoint")
            else []
        ),
        *_example_lines(run_dir),
        "| step | " + " | ".join(h for h, _ in SUMMARY_COLUMNS) + " |",
        "|---" * (len(SUMMARY_COLUMNS) + 1) + "|",
    ]
    for row in rows:
        cells = [
            f"{row[key]:.2e}"
            if key == "learning_rate" and key in row
            else summary.cell(row.get(key))
            for _, key in SUMMARY_COLUMNS
        ]
        lines.append(f"| {row.get('step')} | " + " | ".join(cells) + " |")
    lines.append("")
    path = run_dir / "summary.md"
    atomic_write_text(path, "\n".join(lines))
    return path


def _example_lines(run_dir: Path) -> list[str]:
    """How many rendered examples fit `--max-length` (the longer ones are left out, not cut)."""
    path = run_dir / EXAMPLES_FILE
    if not path.is_file():
        return []
    counts = json.loads(path.read_text())
    return [
        f"{counts['trained']} of {counts['rendered']} examples trained; "
        f"{counts['over_max_length']} longer than {counts['max_length']} tokens left out.",
        "",
    ]
