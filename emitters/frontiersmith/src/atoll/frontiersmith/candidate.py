"""One seed, end to end: from the seed problem to an emitted task or a coded rejection.

mutate -> filter -> baseline + samples -> divergence -> construction ->
execution -> optional blind rollout -> export. Every stage reports its
name through `progress`, so the console shows where each worker is. The
result is an `Outcome`, written by the caller to the run's journal; the
model's money is in the ledger, the trials' time in worker receipts.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.checker import Contract
from atoll.core.llm import (
    BlockedByUncertain,
    PaidChat,
    ProviderRejected,
    ProviderUnavailable,
    RequestUncertain,
)
from atoll.frontiersmith import execution, stages
from atoll.frontiersmith.bundle import BundleError, BundleSpec, write_bundle
from atoll.frontiersmith.config import RECIPE_VERSION, RunConfig
from atoll.frontiersmith.evidence import CheckerFailed, repair_findings
from atoll.frontiersmith.lineage import Lineage, original
from atoll.frontiersmith.meter import MeteredEndpoint
from atoll.frontiersmith.model import StageModel
from atoll.frontiersmith.outcome import (
    InfrastructureError,
    Outcome,
    Reason,
    Rejected,
    Status,
    Tally,
)
from atoll.frontiersmith.rollout import MODEL_FREE
from atoll.frontiersmith.runs import RunDir
from atoll.frontiersmith.search_contract import search_contract
from atoll.frontiersmith.seeds import Seed, task_name
from atoll.frontiersmith.taskcode import CheckInfrastructureError, SandboxedChecks
from atoll.frontiersmith.trials import HarborTrials

Progress = Callable[[str, str], None]  # (seed id, what it is doing)
# Refusals that concern the whole run (key, permission, model or endpoint), not one request.
FATAL_STATUSES = frozenset({401, 403, 404})


@dataclass
class Context:
    """What every candidate of a run shares."""

    config: RunConfig
    run: RunDir
    chat: PaidChat
    trials: HarborTrials
    checks: SandboxedChecks
    base_image: str
    progress: Progress
    rollouts_left: list[int]  # a one-element counter shared by the workers


async def process(seed: Seed, ctx: Context, lineage: Lineage | None = None) -> Outcome:
    """Run every stage for `seed`; the Outcome says how far it got and why it stopped.

    `lineage` is the seed's round and origin (a round-1 seed of the run's set by default).
    """
    candidate = _Candidate(seed, ctx, lineage or original(seed))
    try:
        return await candidate.run()
    except Rejected as rejected:
        candidate.evidence.setdefault("rejection", rejected.evidence)
        return candidate.done(Status.REJECTED, rejected.reason, rejected.stage, rejected.detail)
    except InfrastructureError as error:
        return candidate.done(Status.ERROR, error.reason, error.stage, error.detail)
    except ProviderRejected as exc:
        if exc.status in FATAL_STATUSES:
            raise  # the key, the model or the endpoint is wrong: no seed can succeed
        return candidate.done(
            Status.ERROR, Reason.PROVIDER_REJECTED, candidate.last_stage, str(exc)
        )
    except ProviderUnavailable as exc:
        return candidate.done(
            Status.ERROR, Reason.PROVIDER_UNAVAILABLE, candidate.last_stage, str(exc)
        )
    except (RequestUncertain, BlockedByUncertain) as exc:
        # The candidate is skipped and the run goes on; the receipt stays uncertain with its
        # reservation, and a resume refuses to send it again until `reconcile` settles it.
        return candidate.done(
            Status.ERROR, Reason.REQUEST_UNCERTAIN, candidate.last_stage, str(exc)
        )
    except CheckInfrastructureError as exc:
        return candidate.done(Status.ERROR, Reason.EXECUTION_ERROR, "construction", str(exc))
    except BundleError as exc:
        return candidate.done(Status.ERROR, Reason.EXPORT_ERROR, candidate.last_stage, str(exc))


@dataclass(frozen=True)
class _Tested:
    """The final bundle as its trials tested it, before the export."""

    spec: BundleSpec
    directory: Path
    bundle_hash: str
    reference_reward: float | None
    baseline_reward: float | None


class _Candidate:
    """One seed on its way through the stages: the stages reached, the evidence, the time each took.

    Each stage is one method; `process` turns whatever stops the way into
    the Outcome's status and reason.
    """

    def __init__(self, seed: Seed, ctx: Context, lineage: Lineage) -> None:
        self.seed = seed
        self.ctx = ctx
        self.lineage = lineage
        self.tally = Tally()
        self.model = StageModel(ctx.chat, seed.id, self.tally, ctx.config.language)
        self.reached: list[str] = []
        self.evidence: dict[str, Any] = {}
        self.started = time.monotonic()
        self.name = task_name(seed)
        self._lap_started = time.monotonic()

    @property
    def last_stage(self) -> str:
        return self.reached[-1] if self.reached else ""

    def stage(self, label: str) -> None:
        """Enter stage `label`: the previous one's time is counted, the console told."""
        self.lap()
        self.reached.append(label)
        self.ctx.progress(self.seed.id, label)

    def lap(self) -> None:
        """Add the time since the last lap to the stage last reached."""
        now = time.monotonic()
        if self.reached:
            seconds = self.tally.stage_seconds
            spent = seconds.get(self.reached[-1], 0.0) + now - self._lap_started
            seconds[self.reached[-1]] = round(spent, 4)
        self._lap_started = now

    def done(
        self, status: Status, reason: Reason, where: str, detail: str, **extra: Any
    ) -> Outcome:
        self.lap()
        return Outcome(
            seed_id=self.seed.id,
            family=self.seed.family,
            status=status,
            reason=reason,
            stage=where,
            detail=detail,
            reached=self.reached,
            tally=self.tally,
            wall_seconds=time.monotonic() - self.started,
            evidence=self.evidence,
            lineage=self.lineage.to_json(),
            **extra,
        )

    async def run(self) -> Outcome:
        """Every stage, in order; the accepted Outcome with the exported task."""
        config = self.ctx.config
        formulation = await self._formulate()
        self.stage("programs")
        programs = await stages.write_programs(self.model, formulation, config)
        self.stage("divergence")
        self.evidence["divergence"] = await stages.judge_divergence(self.model, programs, config)
        built = await self._construct(formulation)
        work = self.ctx.run.seed_work(self.seed.id)
        while True:
            try:
                tested = await self._execute(work, formulation, programs, built)
                break
            except CheckerFailed as failed:  # the task's code failed on real outputs: repair it
                built = await self._repair_from_execution(formulation, built, failed)
        rollout = await _rollout(tested.directory, work, self.seed, self.ctx, self.stage)
        task = self._export(work, formulation, tested)
        return self.done(
            Status.ACCEPTED, Reason.ACCEPTED, "export", "accepted", task=task, rollout=rollout
        )

    async def _formulate(self) -> stages.Formulation:
        self.stage("mutate")
        formulation = await stages.formulate(self.model, self.seed, self.ctx.config, self.lineage)
        self.lap()  # the mutate -> filter loop is timed as "mutate"
        self.reached.append("filter")
        self.evidence["formulation"] = {
            "attempts": formulation.attempts,
            "mutation": formulation.value["mutation"],
            "title": formulation.value["title"],
            "rejected_findings": formulation.findings,
        }
        return formulation

    async def _construct(self, formulation: stages.Formulation) -> stages.Construction:
        self.stage("construction")
        built = await stages.construct(
            self.model,
            formulation,
            self.ctx.config,
            self.ctx.checks,
            self.name,
            lambda what: self.ctx.progress(self.seed.id, f"construction: {what}"),
        )
        self._record_construction(built)
        return built

    def _record_construction(self, built: stages.Construction) -> None:
        record = self.evidence.setdefault("construction", {})
        record |= {"rounds": built.rounds, "failed_rounds": built.findings}
        record["repairs"] = built.repairs

    async def _repair_from_execution(
        self, formulation: stages.Formulation, built: stages.Construction, failed: CheckerFailed
    ) -> stages.Construction:
        """Execution's evidence against the task's code goes back to construction's authors."""
        ctx = self.ctx
        self.stage("construction")
        record = self.evidence.setdefault("construction", {})
        record.setdefault("execution_failures", []).append([f.to_json() for f in failed.failures])
        self.tally.trials += len(failed.outcomes)
        self.tally.worker_seconds += sum(o.seconds for o in failed.outcomes.values())
        seed = Contract.from_json(built.contract).seed
        found = repair_findings(failed, await ctx.checks.instances(built.code, seed))
        repaired = await stages.repair_from_execution(
            self.model,
            formulation,
            ctx.config,
            ctx.checks,
            self.name,
            lambda what: ctx.progress(self.seed.id, f"construction: {what}"),
            built,
            found,
        )
        self._record_construction(repaired)
        return repaired

    async def _execute(
        self,
        work: Path,
        formulation: stages.Formulation,
        programs: stages.Programs,
        built: stages.Construction,
    ) -> _Tested:
        """Run the baseline and the samples as trials, choose the reference, test it again."""
        seed, ctx, name, tally = self.seed, self.ctx, self.name, self.tally
        self.stage("execution")
        spec = _spec(seed, name, formulation.value, programs, None, built, ctx, None, self.lineage)
        staging, _ = _write(spec, work / "staging" / name)
        program_code = {"baseline": programs.baseline["code"]}
        program_code |= {f"sample-{i}": s["code"] for i, s in enumerate(programs.samples)}
        outcomes = await execution.run_programs(
            ctx.trials,
            staging,
            work,
            seed.id,
            program_code,
            lambda what: ctx.progress(seed.id, what),
            ctx.config.language,
        )
        self.evidence["execution"] = {"trials": {k: v.to_json() for k, v in outcomes.items()}}
        tally.trials += len(outcomes)
        tally.worker_seconds += sum(o.seconds for o in outcomes.values())
        best, diversity = execution.choose_reference(outcomes, len(programs.samples), ctx.config)
        reference = outcomes[f"sample-{best}"]
        final_spec = _spec(
            seed,
            name,
            formulation.value,
            programs,
            best,
            built,
            ctx,
            reference.reward,
            self.lineage,
        )
        final, tested = _write(final_spec, work / "final" / name)
        ctx.progress(seed.id, "execution: reference repeated")
        repeated = await execution.repeat_reference(ctx.trials, final, work, seed.id, reference)
        tally.trials += 1
        tally.worker_seconds += repeated.seconds
        result = execution.Execution(
            {**outcomes, "reference": repeated}, best, reference.reward or 0.0, diversity
        )
        self.evidence["execution"] = result.to_json()
        return _Tested(final_spec, final, tested, reference.reward, outcomes["baseline"].reward)

    def _export(
        self, work: Path, formulation: stages.Formulation, tested: _Tested
    ) -> dict[str, Any]:
        """Write the tested bundle to the run's tasks; the task's entry in the outcome."""
        self.stage("export")
        name = self.name
        exported = write_bundle(self.ctx.run.tasks_dir / name, tested.spec)
        if exported.bundle_hash != tested.bundle_hash:
            raise InfrastructureError(
                "export", Reason.EXPORT_ERROR, "the exported bundle differs from the tested one"
            )
        shutil.rmtree(work / "staging", ignore_errors=True)  # the trials' logs stay
        shutil.rmtree(work / "final", ignore_errors=True)  # identical to the exported bundle
        return {
            "name": name,
            "path": str(Path("tasks") / name),
            "bundle_hash": exported.bundle_hash,
            "reference_reward": tested.reference_reward,
            "baseline_reward": tested.baseline_reward,
            "mutation": formulation.value["mutation"],
            "title": formulation.value["title"],
        }


def _spec(
    seed: Seed,
    name: str,
    formulation: dict[str, Any],
    programs: stages.Programs,
    best: int | None,
    built: stages.Construction,
    ctx: Context,
    reference_reward: float | None,
    lineage: Lineage,
) -> BundleSpec:
    """The bundle: with sample `best` as its reference, or (None) the baseline in its place.

    A task of round 2 or later names its round, its parent task and its root seed in
    `metadata.seed_lineage` (task.toml: outside what a learner sees).
    """
    contract = Contract.from_json(built.contract)
    reference = programs.baseline if best is None else programs.samples[best]
    return BundleSpec(
        name=name,
        title=" ".join(formulation["title"].split()),
        summary=" ".join(formulation["objective"].split())[:300] or formulation["title"],
        statement=formulation["instruction"],
        solution=reference["code"],
        generator=built.code.generator,
        scorer=built.code.scorer,
        feasibility=built.code.feasibility,
        contract=contract,
        mutation=formulation["mutation"],
        seed_lineage={
            "seed_id": seed.id,
            "seed_title": seed.title,
            "seed_source": seed.source,
            "seed_license": seed.license,
            "family": seed.family,
            **lineage.bundle_keys(),
        },
        recipe_version=RECIPE_VERSION,
        reference_reward=reference_reward,
        keywords=(re.sub(r"[^A-Za-z0-9_-]", "-", seed.family)[:64],),
        base_image=ctx.base_image,
        baseline=programs.baseline["code"],
        baseline_summary=programs.baseline["strategy"],
        solution_summary=reference["strategy"],
        search_contract=search_contract(formulation, contract.limits, contract.language),
    )


def _write(spec: BundleSpec, directory: Path) -> tuple[Path, str]:
    """A fresh bundle in the seed's working directory (a previous attempt's is replaced)."""
    if directory.exists():
        shutil.rmtree(directory)
    info = write_bundle(directory, spec)
    return directory, info.bundle_hash


async def _rollout(
    final: Path,
    work: Path,
    seed: Seed,
    ctx: Context,
    stage: Callable[[str], None],
) -> dict[str, Any] | None:
    """A coding agent's blind attempt at the finished task, in a Harbor trial, scored apart.

    It never changes or discards the task: whatever goes wrong (the agent,
    the provider, a timeout, the trial) is recorded as a failed rollout with
    why, and the task is exported all the same.
    """
    from atoll.frontiersmith.preparation import rollout_agent

    if ctx.rollouts_left[0] <= 0:
        return None
    ctx.rollouts_left[0] -= 1
    stage("rollout")
    agent = rollout_agent(ctx.config)
    record: dict[str, Any] = {"agent": agent.name, "model": agent.model}
    meter = MeteredEndpoint(
        ctx.chat, f"rollout:{seed.id}", ctx.config.max_completion_tokens
    )  # the agent's requests go through the run's ledger
    try:
        async with meter.serving():
            if agent.name not in MODEL_FREE:
                agent = dataclasses.replace(agent, base_url=meter.base_url)
            outcome = await ctx.trials.run(
                final, work / "trials", "rollout", owner=seed.id, agent_config=agent.agent_config()
            )
    except Exception as exc:  # the rollout is evidence apart: nothing in it may drop the task
        return record | {"status": "failed", "detail": f"{type(exc).__name__}: {exc}"[:500]}
    paid = [r for r in ctx.chat.ledger.receipts() if r.label == meter.label]
    record["requests"] = len(paid)
    record["cost_usd"] = sum(r.committed_micro for r in paid) / 1e6
    record |= {"trial_name": outcome.trial_name, "seconds": round(outcome.seconds, 3)}
    if not outcome.ok:
        return record | {"status": "failed", "detail": outcome.error}
    return record | {"status": "scored", "reward": outcome.reward, "scores": outcome.scores}
