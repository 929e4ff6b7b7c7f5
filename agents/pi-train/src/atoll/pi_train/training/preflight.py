"""The no-spend preflight of `atoll pi train hidden` and `shell`: every reference must score full.

A run trains against its scorer, so a scorer that cannot recognise a right
answer (a family whose checker disagrees with its own generator, a runtime
the sandbox lacks, a path audit that flags honest code) would waste every
paid sample. Before the trainer (and so any Tinker client) exists, each
family's trusted reference solution, in every language the run trains, goes
through exactly the route the rewards come from: for `hidden`, the checker
(`check_submission`) on the run's sandbox; for `shell`, an `Episode` on the
run's sandbox runner with the run's bounds (write the program, run it, state
what it printed) and the shell reward. Anything short of the full reward
refuses the run with one line naming the family and language; a sandbox that
cannot run a reference is an infrastructure error, never a score. Only these
reference sources take this path: sampled code never runs here.

The outcome (per family x language: reward, full reward, seconds) is written
to `preflight.json` in the run directory, atomically, once the run's manifest
is in place; a refused run writes nothing there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, Literal

from atoll.core.durable import atomic_write_json
from atoll.pi_train.training.run import ALL_CASES_BONUS, RunError, RunInputError

RECORD = "preflight.json"
# The instance each reference is checked on: the first of the train namespace.
SPLIT: Final[Literal["train"]] = "train"
INDEX: Final = 0


class PreflightRefused(RunInputError):
    """A reference solution fell short of the full reward: the run must not start."""


@dataclass(frozen=True)
class ReferenceOutcome:
    """One reference solution through the reward's route."""

    family: str
    language: str
    instance: str  # split/index of the instance it was checked on
    reward: float
    full_reward: float
    seconds: float
    detail: str  # what fell short, in words ("" when full)

    @property
    def full(self) -> bool:
        return abs(self.reward - self.full_reward) < 1e-9

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "full": self.full}


def check_hidden(languages: tuple[str, ...], sandbox_url: str) -> list[ReferenceOutcome]:
    """Every hidden family's reference, in every language, through `check_submission`."""
    from atoll.pi_train.hidden.families import FAMILIES
    from atoll.pi_train.hidden.harness import check_submission

    outcomes = []
    full_reward = 1.0 + ALL_CASES_BONUS
    for name in sorted(FAMILIES):
        family = FAMILIES[name]
        instance = family.instance(SPLIT, INDEX)
        for language in languages:
            source = _source(family.solutions, name, language)
            started = time.monotonic()
            result = check_submission(source, language, instance, sandbox_url)
            seconds = time.monotonic() - started
            if result.failure == "infrastructure":
                raise _infrastructure(name, language, "the sandbox could not run its check")
            all_passed = result.total > 0 and result.passed == result.total
            reward = (result.passed / result.total if result.total else 0.0) + (
                ALL_CASES_BONUS if all_passed else 0.0
            )
            detail = "" if all_passed else f"{result.passed} of {result.total} hidden cases passed"
            outcomes.append(
                ReferenceOutcome(
                    name, language, f"{SPLIT}/{INDEX}", reward, full_reward, seconds, detail
                )
            )
    return outcomes


def check_shell(languages: tuple[str, ...], runner: Any, bounds: Any) -> list[ReferenceOutcome]:
    """Every shell family's reference, in every language, through an episode and its reward.

    The episode is the one a trajectory gets (the task's files, the run's
    sandbox runner and bounds, Pi's tools and their rules, the path audit): the
    reference is written with `write`, run with the one allowed command, and
    the final response states the last line the run printed.
    """
    from atoll.pi_train.shell.families import FAMILIES

    return [
        _shell_reference(name, language, runner, bounds)
        for name in sorted(FAMILIES)
        for language in languages
    ]


def _shell_reference(name: str, language: str, runner: Any, bounds: Any) -> ReferenceOutcome:
    from atoll.pi_train.euler_source import final_nonempty_line
    from atoll.pi_train.shell.episode import RUNTIMES, Episode, InfrastructureFailure
    from atoll.pi_train.shell.families import FAMILIES
    from atoll.pi_train.shell.reward import COMPONENT_WEIGHT, COMPONENTS, CONJUNCTION_WEIGHT, score

    family = FAMILIES[name]
    instance = family.instance(SPLIT, INDEX)
    runtime = RUNTIMES[language]
    _source(family.solutions, name, language)
    program = family.solution(language, instance.params)
    started = time.monotonic()
    episode = Episode(runtime, dict(instance.files), runner, bounds)
    episode.call("write", {"path": runtime.program, "content": program}, "preflight-1")
    try:
        episode.call("bash", {"command": runtime.command}, "preflight-2")
    except InfrastructureFailure as exc:
        raise _infrastructure(name, language, str(exc)) from None
    runs = episode.executions
    printed = final_nonempty_line(runs[-1].stdout) if runs else None
    outcome = score(episode, f"The answer is {printed}.", str(instance.answer))
    missing = [part for part in COMPONENTS if not getattr(outcome, part)]
    return ReferenceOutcome(
        name,
        language,
        f"{SPLIT}/{INDEX}",
        outcome.reward,
        CONJUNCTION_WEIGHT + COMPONENT_WEIGHT * len(COMPONENTS),
        time.monotonic() - started,
        "" if outcome.conjunction else _shell_detail(episode, outcome.disqualified, missing),
    )


def _shell_detail(episode: Any, disqualified: bool, missing: list[str]) -> str:
    if disqualified:
        return "the path audit disqualified it"
    last = episode.log[-1]["result"].strip().splitlines() if episode.log else []
    said = f" (the run said: {last[-1][:120]})" if last else ""
    return f"it missed {', '.join(missing)}{said}"


def _source(solutions: Any, family: str, language: str) -> str:
    try:
        return str(solutions[language])
    except KeyError:
        raise PreflightRefused(
            f"preflight: family {family} has no reference solution in {language}; the run "
            "is refused before any Tinker call (add one, or train without that language)"
        ) from None


def _infrastructure(family: str, language: str, why: str) -> RunError:
    return RunError(
        f"preflight: {why} for the reference solution of family {family} in {language} "
        "(an infrastructure failure, not a score); nothing was sent to Tinker"
    )


def require_full(outcomes: list[ReferenceOutcome]) -> None:
    """Refuse the run, naming the first family and language short of the full reward."""
    for outcome in outcomes:
        if not outcome.full:
            raise PreflightRefused(
                f"preflight: the reference solution of family {outcome.family} in "
                f"{outcome.language} got reward {outcome.reward:g} of {outcome.full_reward:g} "
                f"on {outcome.instance} ({outcome.detail}); the run is refused before any "
                "Tinker call"
            )


def record(
    run_dir: Path,
    command: str,
    sandbox: str,
    outcomes: list[ReferenceOutcome],
    say: Callable[[str], None],
) -> None:
    """Write `preflight.json` (atomically) and say the outcome in one line."""
    atomic_write_json(
        run_dir / RECORD,
        {
            "command": command,
            "sandbox": sandbox,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "passed": all(o.full for o in outcomes),
            "references": [o.to_json() for o in outcomes],
        },
    )
    families = sorted({o.family for o in outcomes})
    languages = list(dict.fromkeys(o.language for o in outcomes))
    seconds = sum(o.seconds for o in outcomes)
    say(
        f"preflight: {len(outcomes)} reference solutions ({len(families)} families x "
        f"{', '.join(languages)}) got the full reward through the sandbox in {seconds:.1f} s "
        f"({run_dir / RECORD})"
    )
