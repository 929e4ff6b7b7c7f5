"""`atoll pi install`: the pinned Pi from the shipped lockfile, once, into atoll's cache."""

from __future__ import annotations

import json
import subprocess

import pytest

from atoll.pi import install


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_install_puts_the_pinned_pi_in_a_fresh_cache_once(pi, tmp_path):
    root = tmp_path / "cache"
    assert install.installed(root) is None
    lines: list[str] = []
    fresh = install.ensure(lines.append, root=root)
    assert lines[0].startswith(f"installing Pi 0.73.1 into {install.install_dir(root)}")
    assert lines[1].startswith("installed Pi 0.73.1 in ")
    assert fresh.root == install.install_dir(root) and fresh.lock_sha256 == install.lock_sha256()
    version = subprocess.run(
        [str(fresh.node.path), str(fresh.cli), "--version"], capture_output=True, text=True
    )
    assert version.stderr.strip() == "0.73.1"  # Pi prints its version on stderr
    # Exactly the locked tree: the lockfile's versions are what npm put there.
    lock = json.loads((fresh.root / "package-lock.json").read_text())["packages"]
    for name in ("@mariozechner/pi-coding-agent", "@mariozechner/pi-ai", "openai"):
        manifest = json.loads((fresh.root / "node_modules" / name / "package.json").read_text())
        assert manifest["version"] == lock[f"node_modules/{name}"]["version"]
    # Present: nothing to do, nothing said.
    again: list[str] = []
    assert install.ensure(again.append, root=root) == fresh and again == []
    # A record of another lockfile is not this install.
    record = fresh.root / install.RECORD
    record.write_text(json.dumps({**json.loads(record.read_text()), "lock_sha256": "0" * 64}))
    assert install.installed(root) is None
    assert not list(root.glob(".pi-*"))  # no staging directory left behind


def test_node_that_is_missing_or_too_old_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv(install.NODE_ENV, str(tmp_path / "no-node"))
    with pytest.raises(install.PiUnavailable, match="is not a file"):
        install.find_node()
    old = tmp_path / "node"
    old.write_text("#!/bin/sh\necho v18.19.0\n")
    old.chmod(0o755)
    monkeypatch.setenv(install.NODE_ENV, str(old))
    with pytest.raises(install.PiUnavailable) as caught:
        install.find_node()
    assert "needs Node.js >= 20" in str(caught.value) and "v18.19.0" in str(caught.value)


def test_pi_is_kept_in_atoll_cache_unless_atoll_pi_home_names_a_place(tmp_path, monkeypatch):
    monkeypatch.delenv(install.HOME_ENV, raising=False)
    monkeypatch.setenv("ATOLL_CACHE_DIR", str(tmp_path / "cache"))
    assert install.cache_root() == tmp_path / "cache" / "pi"
    monkeypatch.setenv(install.HOME_ENV, str(tmp_path / "pi"))
    assert install.cache_root() == tmp_path / "pi"
