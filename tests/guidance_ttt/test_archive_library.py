"""The durable archive: journal replay, torn lines, compaction, commit, restore and a real crash."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from guidance_builders import entry, rollout

from atoll.guidance_ttt.contract import Direction
from atoll.guidance_ttt.search.archive import Archive, ArchiveError
from atoll.guidance_ttt.state.durable_archive import Library, LibraryError
from atoll.guidance_ttt.state.run_dir import COMMITTED_FILE, JOURNAL_FILE, WORKING_FILE, run_dir

SEED = "int main() { return -1; }\n"


def _new(state: Path, groups: int = 2) -> Library:
    return Library.create(state, Archive.seeded(entry(SEED, 1.0), Direction.MAX, groups))


def _play_step(library: Library, step: int, groups: int, rollouts: int) -> None:
    parents = library.select_step(step, groups)
    for group, parent in enumerate(parents):
        for index in range(rollouts):
            raw = None if index % 3 == 2 else float(10 * step + group + index)
            library.record(rollout(step, group, index, parent.id, raw))


def test_one_rollout_appends_one_line_and_leaves_the_snapshot_alone(tmp_path: Path) -> None:
    with _new(tmp_path) as library:
        working = run_dir(tmp_path) / WORKING_FILE
        journal = run_dir(tmp_path) / JOURNAL_FILE
        before = working.read_bytes()
        parents = library.select_step(0, 2)
        assert len(journal.read_bytes().splitlines()) == 2
        library.record(rollout(0, 0, 0, parents[0].id, 5.0))
        lines = journal.read_bytes().splitlines()
        assert len(lines) == 3
        assert json.loads(lines[-1])["kind"] == "rollout"
        assert json.loads(lines[-1])["child_id"] == 2
        assert working.read_bytes() == before


def test_reopen_replays_the_journal_to_the_same_state(tmp_path: Path) -> None:
    with _new(tmp_path, groups=3) as library:
        _play_step(library, 0, 3, 4)
        library.finish_step(0)
        parents = library.select_step(1, 3)
        library.record(rollout(1, 0, 0, parents[0].id, 50.0))
        library.record(rollout(1, 1, 0, parents[1].id, None))
        expected = library.archive.to_json()
    with Library.open(tmp_path) as reopened:
        assert reopened.archive.to_json() == expected
        # Selections survive: asking again returns the same parents, without a new event.
        assert [n.id for n in reopened.select_step(1, 3)] == [p.id for p in parents]
        # The finished slots survive too.
        with pytest.raises(ArchiveError, match="already recorded"):
            reopened.record(rollout(1, 0, 0, parents[0].id, 60.0))
        reopened.record(rollout(1, 0, 1, parents[0].id, 61.0))
        expected = reopened.archive.to_json()
    with Library.open(tmp_path) as again:
        assert again.archive.to_json() == expected


def test_torn_last_line_is_ignored_and_cut_off(tmp_path: Path) -> None:
    with _new(tmp_path) as library:
        parents = library.select_step(0, 2)
        library.record(rollout(0, 0, 0, parents[0].id, 5.0))
        expected = library.archive.to_json()
    journal = run_dir(tmp_path) / JOURNAL_FILE
    intact = journal.read_bytes()
    with journal.open("ab") as handle:
        handle.write(b'{"generation": 0, "seq": 3, "kind": "rollout", "event": {"st')
    with Library.open(tmp_path) as reopened:
        assert reopened.archive.to_json() == expected
        assert journal.read_bytes() == intact  # the torn tail was cut before appending
        reopened.record(rollout(0, 0, 1, parents[0].id, 6.0))
        expected = reopened.archive.to_json()
    with Library.open(tmp_path) as again:
        assert again.archive.to_json() == expected


def test_garbage_final_line_with_newline_is_also_torn(tmp_path: Path) -> None:
    with _new(tmp_path) as library:
        library.select_step(0, 2)
        expected = library.archive.to_json()
    journal = run_dir(tmp_path) / JOURNAL_FILE
    with journal.open("ab") as handle:
        handle.write(b"\x00\x00\x00\x00\n")
    with Library.open(tmp_path) as reopened:
        assert reopened.archive.to_json() == expected


def test_damage_before_the_last_line_is_corruption(tmp_path: Path) -> None:
    with _new(tmp_path) as library:
        parents = library.select_step(0, 2)
        library.record(rollout(0, 0, 0, parents[0].id, 5.0))
    journal = run_dir(tmp_path) / JOURNAL_FILE
    lines = journal.read_bytes().splitlines(keepends=True)
    lines[1] = b"not json\n"
    journal.write_bytes(b"".join(lines))
    with pytest.raises(LibraryError, match="line 2 is damaged"):
        Library.open(tmp_path)


def test_journal_from_another_run_is_refused(tmp_path: Path) -> None:
    with _new(tmp_path) as library:
        library.select_step(0, 2)
    journal = run_dir(tmp_path) / JOURNAL_FILE
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[1])  # seq 1 without seq 0
    with pytest.raises(LibraryError, match="does not follow the snapshot"):
        Library.open(tmp_path)


def test_finish_step_compacts_and_a_crash_before_truncation_is_harmless(tmp_path: Path) -> None:
    with _new(tmp_path) as library:
        _play_step(library, 0, 2, 6)
        journal = run_dir(tmp_path) / JOURNAL_FILE
        stale = journal.read_bytes()
        end = library.finish_step(0)
        assert journal.read_bytes() == b""
        assert library.generation == 1
        expected = library.archive.to_json()
    snapshot = json.loads((run_dir(tmp_path) / WORKING_FILE).read_bytes())
    assert snapshot["generation"] == 1 and snapshot["archive"] == expected
    assert snapshot["archive"]["best_id"] == end.best_id
    # Each root kept at most two children.
    for node in snapshot["archive"]["nodes"]:
        assert len(node["children"]) <= 2
    # Simulate a crash after the new snapshot but before the journal was emptied.
    journal.write_bytes(stale)
    with Library.open(tmp_path) as reopened:
        assert reopened.archive.to_json() == expected
        assert reopened.archive.step == 1


def test_commit_only_at_the_barrier_and_restore_discards_later_work(tmp_path: Path) -> None:
    with _new(tmp_path) as library:
        _play_step(library, 0, 2, 3)
        with pytest.raises(LibraryError, match="finish the step before committing"):
            library.commit()
        library.finish_step(0)
        library.commit()
        committed_state = library.archive.to_json()
        directory = run_dir(tmp_path)
        assert (directory / COMMITTED_FILE).read_bytes() == (directory / WORKING_FILE).read_bytes()
        _play_step(library, 1, 2, 3)
        library.finish_step(1)  # trained, but the gate failed: never committed
        assert library.archive.to_json() != committed_state
    with Library.restore_committed(tmp_path) as restored:
        assert restored.archive.to_json() == committed_state
        assert restored.archive.step == 1
        assert restored.generation == 3
        parents = restored.select_step(1, 2)
        restored.record(rollout(1, 0, 0, parents[0].id, 99.0))
        expected = restored.archive.to_json()
    with Library.open(tmp_path) as reopened:
        assert reopened.archive.to_json() == expected


def test_restore_without_a_commit_and_open_without_a_run(tmp_path: Path) -> None:
    with pytest.raises(LibraryError, match="no run was started"):
        Library.open(tmp_path)
    _new(tmp_path).close()
    with pytest.raises(LibraryError, match="no step of this run was committed"):
        Library.restore_committed(tmp_path)
    with pytest.raises(LibraryError, match="already exists"):
        _new(tmp_path)


def test_one_process_at_a_time(tmp_path: Path) -> None:
    with _new(tmp_path), pytest.raises(LibraryError) as refused:
        Library.open(tmp_path)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / 'guidance-run'} is in use by `")
    assert f"(pid {os.getpid()} on " in message and "wait for it to end or stop it" in message
    assert not (tmp_path / "guidance-run" / "library.lock.holder.json").exists()  # closed
    Library.open(tmp_path).close()


def test_closed_library_refuses_work(tmp_path: Path) -> None:
    library = _new(tmp_path)
    library.close()
    with pytest.raises(LibraryError, match="closed"):
        library.select(0, 0)


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from guidance_builders import rollout
    from atoll.guidance_ttt.state.durable_archive import Library

    library = Library.open(Path(sys.argv[1]))
    parent = library.select(0, 0)
    print("ready", flush=True)
    index = 0
    while True:
        library.record(rollout(0, 0, index, parent.id, float(index % 7), program="p%d" % index))
        index += 1
    """
)


@pytest.mark.slow
def test_killed_writer_leaves_a_replayable_archive(tmp_path: Path) -> None:
    _new(tmp_path, groups=1).close()
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path), str(Path(__file__).parent)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=10)
    with Library.open(tmp_path) as library:
        archive = library.archive
        journal_lines = (run_dir(tmp_path) / JOURNAL_FILE).read_bytes().count(b"\n")
        assert archive.total_rollouts == journal_lines - 1 > 0  # one selection, then rollouts
        assert sorted(index for _, index in archive.finished) == list(range(archive.total_rollouts))
        assert archive.nodes[0].n == archive.total_rollouts
