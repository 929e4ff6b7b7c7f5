"""Execution trials: a timed-out case is run again alone before it counts against a task.

Real Harbor trials on atoll-local of a staging bundle written by the real
bundle writer; the run's ledger keeps a worker receipt for each.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.frontiersmith_model import (
    BASELINE,
    EXACT,
    GENERATOR,
    SAMPLES,
    cart_bundle_spec,
)

from atoll.checker import Contract, Limits
from atoll.core.ledger import Ledger
from atoll.frontiersmith import execution
from atoll.frontiersmith.bundle import write_bundle
from atoll.frontiersmith.config import RunConfig
from atoll.frontiersmith.outcome import Reason, Rejected
from atoll.frontiersmith.trials import HarborTrials, resolve_environment

SEED = 11


def _instances() -> list[dict]:
    namespace: dict = {}
    exec(GENERATOR, namespace)
    return namespace["generate"](SEED)


def _staging(tmp_path: Path) -> Path:
    contract = Contract(
        seed=SEED,
        check_seeds=(SEED + 1, SEED + 2, SEED + 3),
        limits=Limits(cpu_seconds=1.0, wall_seconds=3.0),
    )
    write_bundle(tmp_path / "staging" / "cart", cart_bundle_spec(contract, "t1"))
    return tmp_path / "staging" / "cart"


def _ledger(tmp_path: Path) -> Ledger:
    return Ledger.create(tmp_path / "ledger.sqlite", 10**6)


def test_a_trial_run_alone_waits_for_every_other_and_holds_them_off(tmp_path: Path) -> None:
    trials = HarborTrials(resolve_environment("atoll-local"), _ledger(tmp_path), slots=3)
    running: set[str] = set()
    overlaps: dict[str, set[str]] = {}

    async def hold(name: str, alone: bool, seconds: float) -> None:
        async with trials._slot(alone):
            overlaps[name] = set(running)
            running.add(name)
            await asyncio.sleep(seconds)
            overlaps[name] |= running - {name}
            running.discard(name)

    async def scenario() -> None:
        first = [asyncio.create_task(hold(f"shared-{i}", False, 0.2)) for i in range(2)]
        await asyncio.sleep(0.05)
        alone = asyncio.create_task(hold("alone", True, 0.2))
        await asyncio.sleep(0.05)
        later = asyncio.create_task(hold("later", False, 0.05))
        await asyncio.gather(*first, alone, later)

    asyncio.run(scenario())
    assert overlaps["alone"] == set()  # nothing else ran while it ran
    assert overlaps["shared-0"] == {"shared-1"}  # ordinary trials still share the slots


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_case_that_times_out_even_alone_rejects_as_timed_out_alone(tmp_path: Path) -> None:
    staging = _staging(tmp_path)
    slow_capacity = _instances()[0]["capacity"]
    spinner = (
        "import json, sys\n\ninstance = json.load(sys.stdin)\n"
        f"while instance['capacity'] == {slow_capacity}:\n    pass\n"
        "print(json.dumps({'take': []}))\n"
    )
    programs = {"baseline": BASELINE, "sample-0": spinner, "sample-1": spinner, "sample-2": EXACT}
    with _ledger(tmp_path) as ledger:
        trials = HarborTrials(resolve_environment("atoll-local"), ledger, slots=2)
        outcomes = asyncio.run(
            execution.run_programs(trials, staging, tmp_path, "t1", programs, lambda _: None)
        )
        labels = [w.label for w in ledger.work()]
    slow = outcomes["sample-0"]
    assert slow.timed_out_under_load and slow.timed_out == slow.timed_out_under_load
    assert {c.status for i, c in enumerate(slow.cases) if i not in slow.timed_out} == {"ok"}
    assert labels.count("trial:t1:sample-0-alone") == 1  # run again once, alone
    assert "trial:t1:sample-2-alone" not in labels  # a trial without a timeout is not
    config = RunConfig(seeds="x", target=1, budget_micro=1, model="m")
    with pytest.raises(Rejected) as rejected:
        execution.choose_reference(outcomes, 3, config)
    assert rejected.value.reason is Reason.TIMED_OUT_ALONE
    assert "timed out even when run again alone" in rejected.value.detail


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_programs_that_finish_are_not_run_again(tmp_path: Path) -> None:
    staging = _staging(tmp_path)
    programs = {"baseline": BASELINE} | {f"sample-{i}": code for i, code in enumerate(SAMPLES)}
    roots = tmp_path / "local-roots"
    with _ledger(tmp_path) as ledger:
        trials = HarborTrials(
            resolve_environment("atoll-local"), ledger, slots=2, local_roots=roots
        )
        outcomes = asyncio.run(
            execution.run_programs(trials, staging, tmp_path, "t1", programs, lambda _: None)
        )
        labels = sorted(w.label for w in ledger.work())
        own = {w.detail["local_root"] for w in ledger.work()}
    # each trial had its own root folder, named in its receipt, and none is left behind
    assert len(own) == len(labels) and {Path(p).parent for p in own} == {roots}
    assert not any(roots.iterdir())
    assert labels == sorted(
        f"trial:t1:{label}" for label in ["nop", "empty-answer", "silent-answer", *programs]
    )
    assert all(not o.timed_out_under_load for o in outcomes.values())
    silent = outcomes["silent-answer"]  # prints nothing: malformed on every case, scored 0
    assert silent.reward == 0.0 and {c.status for c in silent.cases} == {"malformed"}
    config = RunConfig(seeds="x", target=1, budget_micro=1, model="m")
    best, _ = execution.choose_reference(outcomes, 3, config)
    assert outcomes[f"sample-{best}"].reward > outcomes["baseline"].reward
