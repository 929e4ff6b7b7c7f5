"""Results in SQLite: kept after reading, and never a score for work a crash interrupted."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from atoll.judge.engine import Engine
from atoll.judge.service import JudgeService
from atoll.judge.store import MAX_ATTEMPTS, State, Store, StoreBusy

pytestmark = pytest.mark.timeout(120)


def wait_final(service: JudgeService, sid: int) -> tuple[int, dict]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        view = service.result(sid)
        if view.body.get("status") != "queued":
            return view.http_status, view.body
        time.sleep(0.05)
    raise AssertionError(f"submission {sid} not judged")


def test_result_survives_reopening_the_database(tmp_path: Path) -> None:
    store = Store(tmp_path / "judge.sqlite")
    sid = store.add("0", "cpp", b"int main(){}")
    store.start(sid)
    store.finish(sid, {"status": "done", "score": 42.5, "cases": []})
    store.close()
    again = Store(tmp_path / "judge.sqlite")
    for _ in range(2):
        found = again.get(sid)
        assert found is not None and found.state is State.FINAL
        assert found.result == {"status": "done", "score": 42.5, "cases": []}
    assert again.unfinished() == []


def test_interrupted_work_is_rerun_then_given_up_as_an_infrastructure_error(
    tmp_path: Path, small_engine: Engine, sources: dict[str, bytes]
) -> None:
    db = tmp_path / "judge.sqlite"
    store = Store(db)
    rerun = store.add("0", "cpp", sources["row"])
    store.start(rerun)  # a judge died once while running it
    poison = store.add("0", "cpp", sources["row"] + b"\n")
    for _ in range(MAX_ATTEMPTS):
        store.start(poison)  # ... and this one killed the judge every time
    store.close()

    service = JudgeService(small_engine, Store(db))
    service.start()
    try:
        status, body = wait_final(service, rerun)
        assert status == 200 and body["status"] == "done" and body["score"] > 0
        status, body = wait_final(service, poison)
        assert status == 500
        assert body["status"] == "infrastructure_error" and "score" not in body
        assert "not scored" in body["error"]
    finally:
        service.stop()


def test_one_judge_per_database(tmp_path: Path) -> None:
    database = tmp_path / "judge.sqlite"
    first = Store(database)
    with pytest.raises(StoreBusy) as refused:
        Store(database)
    assert str(refused.value).startswith(f"{database} is in use by `")
    assert f"(pid {os.getpid()} on " in str(refused.value)
    assert str(refused.value).endswith("; stop it or give this one another --state-dir")
    first.close()
    assert not (tmp_path / "judge.sqlite.lock.holder.json").exists()
    Store(database).close()


@pytest.mark.parametrize("sid", [0, -1, 2**63, 2**64 + 1, 10**30])
def test_ids_no_row_can_have_are_absent_not_errors(tmp_path: Path, sid: int) -> None:
    store = Store(tmp_path / "judge.sqlite")
    store.add("0", "cpp", b"int main(){}")
    assert store.get(sid) is None
    store.close()
