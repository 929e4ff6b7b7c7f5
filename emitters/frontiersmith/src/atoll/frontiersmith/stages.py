"""The model stages of one candidate: formulation, programs, divergence, construction.

Each function takes the seed's `StageModel` and returns what the next stage
needs, or raises `Rejected` with the stage's reason code. The acceptance
rules are the design's: the filter sees no author reasoning and its
findings feed the next attempt; strategy hints rotate over the samples; low
divergence rejects the candidate before any test is built; construction
repairs carry concrete review or execution evidence and the previous code.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from atoll.frontiersmith import prompts
from atoll.frontiersmith.config import RunConfig
from atoll.frontiersmith.lineage import Lineage
from atoll.frontiersmith.model import StageModel
from atoll.frontiersmith.outcome import Reason, Rejected
from atoll.frontiersmith.protocol import HARDEN, MUTATIONS, distinct_fraction
from atoll.frontiersmith.public_contract import (
    blame_the_checker,
    concerns_published_example,
    optimum_findings,
    published_example,
)
from atoll.frontiersmith.seeds import Seed
from atoll.frontiersmith.taskcode import FILES, Finding, SandboxedChecks, TaskCode, contract_json

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Formulation:
    value: dict[str, Any]
    attempts: int
    findings: list[list[str]]  # each rejected attempt's findings


@dataclass(frozen=True)
class Programs:
    baseline: dict[str, Any]
    samples: list[dict[str, Any]]


@dataclass(frozen=True)
class Construction:
    code: TaskCode
    contract: dict[str, Any]
    rounds: int  # rounds of review and self-check
    findings: list[list[str]]  # each failed round's evidence (execution's included)
    repairs: int = 0  # repairs spent, construction's and execution's, out of --max-repairs
    # each file's first request, which its repairs extend
    first_requests: dict[str, list[dict[str, str]]] = field(default_factory=dict)


def first_axis(seed: Seed) -> int:
    """Where a seed's rotation over the mutation axes starts (stable across runs)."""
    return hashlib.sha256(seed.id.encode()).digest()[0] % len(MUTATIONS)


def axes(seed: Seed, lineage: Lineage | None) -> tuple[str, ...]:
    """The axes a seed's attempts rotate over, in order: a round-1 seed's three, from the one its
    id picks; a later round's seed (a task) is asked to harden first, then to change."""
    if lineage is not None and lineage.derived:
        return (HARDEN, *MUTATIONS)
    start = first_axis(seed)
    return MUTATIONS[start:] + MUTATIONS[:start]


def _no_harden(value: dict[str, Any]) -> str:
    """A round-1 seed is a closed problem: there is no task yet to harden."""
    if value["mutation"] == HARDEN:
        return (
            "mutation harden is for a task of an earlier round; this seed is a closed problem: "
            f"change it on one of {', '.join(MUTATIONS)}"
        )
    return ""


async def formulate(
    model: StageModel, seed: Seed, config: RunConfig, lineage: Lineage | None = None
) -> Formulation:
    """mutate -> filter, up to 1 + max_repairs attempts; the filter's findings feed the next one."""
    findings: list[str] = []
    history: list[list[str]] = []
    rejected_by_filter = False
    rotation = axes(seed, lineage)
    derived = lineage is not None and lineage.derived
    for attempt in range(config.max_repairs + 1):
        if attempt:
            model.tally.repairs += 1
        axis = rotation[attempt % len(rotation)]
        value, _, why = await model.ask(
            "mutate",
            prompts.mutate(seed, axis, findings, attempt + 1, config.language, lineage),
            check=None if derived else _no_harden,
        )
        if value is None:
            findings = [f"the previous answer was not a valid mutate object: {why}"]
            history.append(findings)
            continue
        verdict = await model.ask_valid(
            "filter", prompts.filter_review(value, config.language), repairs=config.max_repairs
        )
        if verdict["approved"]:
            return Formulation(value, attempt + 1, history)
        rejected_by_filter = True
        findings = list(verdict["issues"])
        history.append(findings)
    if rejected_by_filter:
        raise Rejected(
            "filter",
            Reason.FORMULATION_REJECTED,
            f"the filter rejected {config.max_repairs + 1} formulations; last: "
            + "; ".join(findings)[:500],
            findings=history,
        )
    raise Rejected(
        "mutate",
        Reason.INVALID_MODEL_OUTPUT,
        f"no valid mutate answer in {config.max_repairs + 1} tries",
        findings=history,
    )


async def write_programs(
    model: StageModel, formulation: Formulation, config: RunConfig
) -> Programs:
    """The baseline and `--solutions` samples, requested together; hints rotate over samples."""
    f = formulation.value
    asks: list[Awaitable[dict[str, Any]]] = [
        model.ask_valid(
            "baseline", prompts.baseline(f, config.language), repairs=config.max_repairs
        )
    ]
    asks += [
        model.ask_valid(
            "solve",
            prompts.solve(f, i, config.solutions, config.language),
            repairs=config.max_repairs,
        )
        for i in range(config.solutions)
    ]
    answers = await _all(asks)
    return Programs(baseline=answers[0], samples=answers[1:])


async def judge_divergence(
    model: StageModel, programs: Programs, config: RunConfig
) -> dict[str, Any]:
    """The pairwise review of the samples' core algorithms; Rejected below the threshold."""
    count = len(programs.samples)
    verdict = await model.ask_valid(
        "divergence",
        prompts.divergence(programs.samples, config.language),
        repairs=config.max_repairs,
        samples=count,
    )
    fraction = distinct_fraction(verdict["distinct_pairs"], count)
    evidence = {"distinct_pairs": verdict["distinct_pairs"], "fraction": fraction}
    if fraction < config.min_divergence:
        raise Rejected(
            "divergence",
            Reason.LOW_SEMANTIC_DIVERGENCE,
            f"{fraction:.2f} of sample pairs are distinct; at least {config.min_divergence:g} needed",
            **evidence,
            rationale=verdict["rationale"],
        )
    return evidence


async def construct(
    model: StageModel,
    formulation: Formulation,
    config: RunConfig,
    checks: SandboxedChecks,
    task_name: str,
    progress: Progress,
) -> Construction:
    """Generator, scorer, validator; cross-file review and the grader's self-check; repairs."""
    f = formulation.value
    first_requests = {stage: prompts.construction(stage, f, config.language) for stage in FILES}
    answers = await _all(
        [
            model.ask_valid(stage, first_requests[stage], repairs=config.max_repairs)
            for stage in FILES
        ]
    )
    code = TaskCode(**{stage: a["code"] for stage, a in zip(FILES, answers, strict=True)})
    built = Construction(code, {}, 0, [], first_requests=first_requests)
    return await _settle(model, formulation, config, checks, task_name, progress, built)


async def repair_from_execution(
    model: StageModel,
    formulation: Formulation,
    config: RunConfig,
    checks: SandboxedChecks,
    task_name: str,
    progress: Progress,
    built: Construction,
    found: list[Finding],
) -> Construction:
    """Repair the files execution found failing, with its evidence, then check them again.

    The repair comes out of the same budget as construction's own repairs
    (`--max-repairs` in all); once it is spent the candidate is rejected
    with the evidence, at the execution stage.
    """
    history = [*built.findings, [f.text() for f in found]]
    if built.repairs >= config.max_repairs:
        raise Rejected(
            "execution",
            Reason.INFRASTRUCTURE_REPAIR_EXHAUSTED,
            f"the task's own code still fails on the programs' outputs after "
            f"{config.max_repairs} repairs: " + "; ".join(f.text() for f in found)[:500],
            findings=history,
        )
    model.tally.repairs += 1
    progress(f"repair {built.repairs + 1} (execution evidence)")
    code = await _repair(model, built.first_requests, built.code, found, config)
    again = Construction(
        code, built.contract, built.rounds, history, built.repairs + 1, built.first_requests
    )
    return await _settle(model, formulation, config, checks, task_name, progress, again)


async def _settle(
    model: StageModel,
    formulation: Formulation,
    config: RunConfig,
    checks: SandboxedChecks,
    task_name: str,
    progress: Progress,
    built: Construction,
) -> Construction:
    """Review and self-check `built.code`, repairing with the evidence while repairs are left."""
    f = formulation.value
    published = published_example(f)
    code, history, repairs, rounds = built.code, list(built.findings), built.repairs, built.rounds
    last: list[Finding] = []
    while True:
        rounds += 1
        progress("review" if repairs == 0 else f"review (repair {repairs})")
        review = await model.ask_valid(
            "review",
            prompts.cross_review(f, code.files(), config.language),
            repairs=config.max_repairs,
        )
        found = [_review_finding(issue) for issue in review["issues"]]
        examples, problem = await checks.examples(code)
        # the formulation's worked example joins the generator's: the checker must agree with it
        contract = contract_json(task_name, [*examples, published], config.language)
        if problem is not None:
            found.append(problem)
        else:
            found += blame_the_checker(await checks.self_check(code, contract))
            instances = await checks.instances(code, contract["seed"])
            found += optimum_findings(instances, code.scorer)
        if not found:
            return Construction(code, contract, rounds, history, repairs, built.first_requests)
        last = found
        history.append([f.text() for f in found])
        if repairs >= config.max_repairs:
            break
        repairs += 1
        model.tally.repairs += 1
        progress(f"repair {repairs}")
        code = await _repair(model, built.first_requests, code, found, config)
    rewarded = await checks.empty_answer_scores(code, contract.get("examples") or [])
    if rewarded:
        raise Rejected(
            "construction",
            Reason.NOOP_NOT_ZERO,
            f"the scorer gives an empty answer ({{}}) {rewarded[0]!r}, not exactly 0, after "
            f"{config.max_repairs} repairs: " + "; ".join(history[-1])[:400],
            findings=history,
        )
    if any(concerns_published_example(f) for f in last):
        raise Rejected(
            "construction",
            Reason.EXAMPLE_DISAGREES_WITH_CHECKER,
            f"the task's checker disagrees with its published worked example after "
            f"{config.max_repairs} repairs: " + "; ".join(history[-1])[:500],
            findings=history,
        )
    raise Rejected(
        "construction",
        Reason.INFRASTRUCTURE_REPAIR_EXHAUSTED,
        f"construction checks still fail after {config.max_repairs} repairs: "
        + "; ".join(history[-1])[:500],
        findings=history,
    )


def _review_finding(issue: str) -> Finding:
    lowered = issue.lower()
    files = tuple(stage for stage in FILES if stage in lowered or FILES[stage] in lowered)
    if "validator" in lowered and "feasibility" not in files:
        files += ("feasibility",)
    return Finding("review", issue, files or tuple(FILES))


async def _repair(
    model: StageModel,
    first_requests: dict[str, list[dict[str, str]]],
    code: TaskCode,
    found: list[Finding],
    config: RunConfig,
) -> TaskCode:
    implicated = [stage for stage in FILES if any(stage in f.files for f in found)]
    evidence = {
        stage: "\n".join(f"- {f.text()}" for f in found if stage in f.files) for stage in implicated
    }
    answers = await _all(
        [
            model.ask_valid(
                stage,
                prompts.repair(
                    first_requests[stage],
                    prompts.previous_code(code.files()[stage]),
                    evidence[stage],
                ),
                repairs=config.max_repairs,
            )
            for stage in implicated
        ]
    )
    for stage, answer in zip(implicated, answers, strict=True):
        code = code.replace(stage, answer["code"])
    return code


async def _all(asks: list[Awaitable[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every answer; the first failure is raised once all requests have settled.

    Settling all first matters for money: a request abandoned mid-flight would
    leave its answer lost and its receipt uncertain.
    """
    results = await asyncio.gather(*asks, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return list(results)  # type: ignore[arg-type]
