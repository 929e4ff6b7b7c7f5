"""Rewrite tasks/frontiersmith-example after its sources or the grader changed.

The example is a bundle, so its hash binds every file: after editing one of
its programs (or after a change to atoll.checker's grader, which every bundle
carries as tests/grader.py) it must be written again. This reads its current
files (layout checked, hash not; the search contract and any baseline
included), grades the reference program to record its
reward, writes the new bundle beside the old one and swaps them.

    sudo uv run python scripts/refresh_frontiersmith_example.py   # root: the grader switches uid
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path

from atoll.checker import grade_task, layout
from atoll.frontiersmith.bundle import read_bundle, write_bundle
from atoll.frontiersmith.bundle.read import spec_from_files

EXAMPLE = Path(__file__).resolve().parents[1] / "tasks" / "frontiersmith-example"


def main() -> int:
    files = layout.scan(EXAMPLE)
    text = {name: f.data.decode("utf-8") for name, f in files.items()}
    spec = spec_from_files(EXAMPLE, layout.parse_task_toml(files["task.toml"].data), text)
    with tempfile.TemporaryDirectory(dir=EXAMPLE.parent, prefix=".refresh-") as scratch:
        draft = write_bundle(
            Path(scratch) / "draft", dataclasses.replace(spec, reference_reward=None)
        )
        report = grade_task(Path(draft.path), Path(draft.path) / "solution" / "solution.py")
        if report.counts()["ok"] != len(report.cases):
            print(
                f"the reference is not feasible on every case: {report.statuses}", file=sys.stderr
            )
            return 1
        fresh = dataclasses.replace(spec, reference_reward=report.reward)
        new = write_bundle(Path(scratch) / EXAMPLE.name, fresh)
        old = Path(scratch) / "old"
        os.rename(EXAMPLE, old)
        os.rename(new.path, EXAMPLE)
        shutil.rmtree(old)
    final = read_bundle(EXAMPLE)
    print(f"{EXAMPLE.name}: reference reward {report.reward!r}, {final.bundle_hash}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
