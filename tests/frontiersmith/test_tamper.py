"""A bundle that is not exactly what was written is refused, by the reader and by verify."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from atoll.frontiersmith.bundle import BundleError, read_bundle, write_bundle


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _replace_with_symlink(path: Path) -> None:
    outside = path.parents[2] / "same-content.py"  # identical bytes, outside the bundle
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)


def _symlink_dir(path: Path) -> None:
    moved = path.parent.parent / (path.name + "-real")
    path.rename(moved)
    path.symlink_to(moved)


TAMPERING = {
    "one byte of a program": (
        lambda b: _flip_byte(b / "tests" / "scorer.py"),
        "does not match its hash",
    ),
    "one byte of the instruction": (
        lambda b: _flip_byte(b / "instruction.md"),
        "does not match its hash",
    ),
    "a value in task.toml": (
        lambda b: (b / "task.toml").write_text(
            (b / "task.toml").read_text().replace("memory_mb = 2048", "memory_mb = 4096")
        ),
        "does not match its hash",
    ),
    "the declared hash": (
        lambda b: (b / "task.toml").write_text(
            (b / "task.toml")
            .read_text()
            .replace('bundle_hash = "sha256:', 'bundle_hash = "sha256:0')
        ),
        "does not match its hash",
    ),
    "no hash": (
        lambda b: (b / "task.toml").write_text(
            "\n".join(
                x for x in (b / "task.toml").read_text().splitlines() if "bundle_hash" not in x
            )
        ),
        "no metadata.bundle_hash",
    ),
    "an executable bit added": (
        lambda b: (b / "tests" / "generator.py").chmod(0o755),
        "mode 0755; it must be 0644",
    ),
    "an executable bit removed": (
        lambda b: (b / "tests" / "test.sh").chmod(0o644),
        "mode 0644; it must be 0755",
    ),
    "a group-writable file": (lambda b: (b / "instruction.md").chmod(0o664), "mode 0664"),
    "a world-writable directory": (lambda b: (b / "tests").chmod(0o777), "tests/ has mode 0777"),
    "an extra file in tests": (
        lambda b: (b / "tests" / "extra.py").write_text(""),
        "tests/extra.py is not part",
    ),
    "an extra file at the top": (
        lambda b: (b / "README.md").write_text(""),
        "README.md is not part",
    ),
    "an extra directory": (lambda b: (b / "data").mkdir(mode=0o755), "data/ is not part"),
    "a symlinked file": (
        lambda b: _replace_with_symlink(b / "tests" / "scorer.py"),
        "symbolic link",
    ),
    "a symlinked directory": (lambda b: _symlink_dir(b / "solution"), "symbolic link"),
    "a fifo": (
        lambda b: ((b / "tests" / "scorer.py").unlink(), os.mkfifo(b / "tests" / "scorer.py")),
        "special file",
    ),
    "a missing file": (
        lambda b: (b / "solution" / "solve.sh").unlink(),
        "missing solution/solve.sh",
    ),
}


@pytest.mark.parametrize("how", sorted(TAMPERING))
def test_tampered_bundles_are_refused(tmp_path, spec, how):
    bundle = tmp_path / "bundles" / "toy"
    write_bundle(bundle, spec)
    tamper, message = TAMPERING[how]
    tamper(bundle)
    with pytest.raises(BundleError, match=message):
        read_bundle(bundle)


def test_a_symlink_to_a_bundle_is_refused(tmp_path, spec):
    write_bundle(tmp_path / "toy", spec)
    (tmp_path / "link").symlink_to(tmp_path / "toy")
    with pytest.raises(BundleError, match="not a directory"):
        read_bundle(tmp_path / "link")


def _verify(path: Path) -> subprocess.CompletedProcess[str]:
    atoll = Path(sys.executable).parent / "atoll"
    return subprocess.run(
        [str(atoll), "checker", "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.mark.slow
def test_checker_verify_says_what_failed(tmp_path, spec):
    bundle = tmp_path / "toy"
    write_bundle(bundle, spec)
    good = _verify(bundle)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "verified" in good.stdout
    (bundle / "tests" / "generator.py").write_text(
        "import random\n\ndef generate(seed):\n    return [{'v': random.random()} for _ in range(3)]\n"
    )
    bad = _verify(bundle)
    assert bad.returncode == 1
    assert "does not match its hash" in bad.stdout
    assert "generator is deterministic and bounded at three seeds" in bad.stdout
    assert "FAILED" in bad.stdout
