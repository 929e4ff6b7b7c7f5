"""The curriculum: a durable state machine over problems taken in strict numerical order.

State (`STATE/state.json`, rewritten atomically after every change): the
current problem, the highest contiguous mastered problem, consecutive passing
rounds, the model signature, the open round and the gate history. A round
evaluates the current problem (the frontier) with a fixed fan-out, plus an
optional replay of mastered problems; only frontier attempts decide the
round. A round passes when its frontier pass fraction reaches the threshold;
after the required number of consecutive passing rounds the problem is
mastered and the next one becomes current. A new model signature resets the
consecutive count. A problem whose statement, answer or resource is missing
stops the curriculum with a message; it is never skipped.

A round's plan is written before its first rollout and every row is appended
durably as it is scored, so a killed run resumes the same round, runs only
the attempts that have no scored row, and counts each attempt once.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from atoll.core.durable import atomic_write_json

STATE_FILE = "state.json"
PLAN_FILE = "plan.json"
FORMAT = 1
PHASES = ("frontier", "replay-recent", "replay-older")


class CurriculumError(Exception):
    """A state that cannot be resumed as asked; the message says what to do."""


@dataclass(frozen=True)
class Config:
    """What a curriculum is: changing any of it needs a new state directory."""

    store_digest: str
    languages: tuple[str, ...]
    approaches: tuple[str, ...]
    samples: int = 4
    threshold: float = 0.5
    consecutive: int = 2
    replay: tuple[float, float, float] = (0.7, 0.2, 0.1)
    recent: int = 3
    start: int = 1

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise CurriculumError("the pass threshold must lie in (0, 1]")
        if self.consecutive < 1 or self.samples < 1 or self.recent < 1 or self.start < 1:
            raise CurriculumError(
                "consecutive rounds, samples, recent window and start must be >= 1"
            )
        if len(self.replay) != 3 or any(p < 0 for p in self.replay) or self.replay[0] <= 0:
            raise CurriculumError("the replay mix is three non-negative fractions, the first > 0")
        if not math.isclose(sum(self.replay), 1.0, abs_tol=1e-6):
            raise CurriculumError(f"the replay mix {self.replay} must sum to 1")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["languages"], data["approaches"] = list(self.languages), list(self.approaches)
        data["replay"] = list(self.replay)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Config:
        return cls(
            store_digest=data["store_digest"],
            languages=tuple(data["languages"]),
            approaches=tuple(data["approaches"]),
            samples=int(data["samples"]),
            threshold=float(data["threshold"]),
            consecutive=int(data["consecutive"]),
            replay=tuple(float(p) for p in data["replay"]),  # type: ignore[arg-type]
            recent=int(data["recent"]),
            start=int(data["start"]),
        )


@dataclass
class State:
    config: Config
    current_problem: int
    mastered_through: int  # the highest problem such that it and all before it are mastered
    consecutive_passes: int = 0
    model_signature: str | None = None
    rounds_completed: int = 0
    open_round: int | None = None
    mastered: list[int] = field(default_factory=list)  # in the order they were mastered
    skipped: list[int] = field(default_factory=list)  # before --start, with no rows proving them
    history: list[dict[str, Any]] = field(default_factory=list)
    stopped: dict[str, Any] | None = None

    @classmethod
    def new(cls, config: Config, proven: frozenset[int] = frozenset()) -> State:
        """A fresh state at `config.start`. The problems before it are skipped, not mastered,
        unless `proven` (problems rows show mastered) holds them."""
        before = range(1, config.start)
        mastered = [n for n in before if n in proven]
        through = 0
        while through + 1 in proven and through + 1 < config.start:
            through += 1
        return cls(
            config,
            current_problem=config.start,
            mastered_through=through,
            mastered=mastered,
            skipped=[n for n in before if n not in proven],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "config": self.config.to_json(),
            "current_problem": self.current_problem,
            "mastered_through": self.mastered_through,
            "consecutive_passes": self.consecutive_passes,
            "model_signature": self.model_signature,
            "rounds_completed": self.rounds_completed,
            "open_round": self.open_round,
            "mastered": self.mastered,
            "skipped": self.skipped,
            "history": self.history,
            "stopped": self.stopped,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> State:
        if data.get("format") != FORMAT:
            raise CurriculumError(f"curriculum state format {data.get('format')!r} is not {FORMAT}")
        return cls(
            config=Config.from_json(data["config"]),
            current_problem=int(data["current_problem"]),
            mastered_through=int(data["mastered_through"]),
            consecutive_passes=int(data["consecutive_passes"]),
            model_signature=data.get("model_signature"),
            rounds_completed=int(data["rounds_completed"]),
            open_round=data.get("open_round"),
            mastered=[int(n) for n in data.get("mastered", [])],
            skipped=[int(n) for n in data.get("skipped", [])],
            history=list(data.get("history", [])),
            stopped=data.get("stopped"),
        )


# -- transitions (pure: they change the State object, nothing else) ----------


def begin(state: State, signature: str) -> bool:
    """Start a run under model `signature`; True (and consecutive passes reset) if it changed."""
    if state.model_signature is None:
        state.model_signature = signature
        return False
    if state.model_signature == signature:
        return False
    state.history.append(
        {
            "event": "model_change",
            "from": state.model_signature,
            "to": signature,
            "consecutive_passes_reset_from": state.consecutive_passes,
            "problem": state.current_problem,
        }
    )
    state.model_signature = signature
    state.consecutive_passes = 0
    return True


def stop(state: State, reason: str) -> None:
    """Progression stops at the current problem (a missing statement, answer or resource)."""
    state.stopped = {"problem": state.current_problem, "reason": reason}
    state.history.append({"event": "stopped", "problem": state.current_problem, "reason": reason})


def resume_stopped(state: State) -> None:
    """A stop is lifted when the missing piece is back; the history keeps it."""
    if state.stopped is not None:
        state.history.append({"event": "resumed", "problem": state.current_problem})
        state.stopped = None


@dataclass(frozen=True)
class RoundResult:
    round: int
    problem: int
    attempts: int  # scored frontier attempts
    passes: int
    replay: dict[str, dict[str, int]]  # phase -> {"attempts", "passes"}

    @property
    def pass_fraction(self) -> float:
        return self.passes / self.attempts if self.attempts else 0.0


def complete_round(state: State, result: RoundResult) -> dict[str, Any]:
    """Apply a finished round; the history entry it added."""
    config = state.config
    if result.problem != state.current_problem:
        raise CurriculumError(
            f"round {result.round} evaluated problem {result.problem}, but the current problem "
            f"is {state.current_problem}"
        )
    passed = result.attempts > 0 and result.pass_fraction >= config.threshold
    state.consecutive_passes = state.consecutive_passes + 1 if passed else 0
    entry: dict[str, Any] = {
        "event": "round",
        "round": result.round,
        "problem": result.problem,
        "model_signature": state.model_signature,
        "attempts": result.attempts,
        "passes": result.passes,
        "pass_fraction": round(result.pass_fraction, 6),
        "threshold": config.threshold,
        "passed": passed,
        "consecutive_passes": state.consecutive_passes,
        "replay": result.replay,
    }
    state.history.append(entry)
    state.rounds_completed += 1
    state.open_round = None
    if passed and state.consecutive_passes >= config.consecutive:
        if state.current_problem == state.mastered_through + 1:  # skipped ones break the run
            state.mastered_through = state.current_problem
        state.mastered.append(state.current_problem)
        state.history.append(
            {"event": "mastered", "problem": state.current_problem, "round": result.round}
        )
        entry["mastered"] = True
        state.current_problem += 1
        state.consecutive_passes = 0
    return entry


# -- round plans ---------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    phase: str
    problem: int
    language: str
    approach: str
    sample: int

    def key(self) -> tuple[str, str, str, str, int]:
        return (self.phase, str(self.problem), self.language, self.approach, self.sample)

    def name(self) -> str:
        return f"{self.phase}-p{self.problem}-{self.language}-{self.approach}-s{self.sample}"


def replay_counts(
    frontier: int, mix: tuple[float, float, float], recent: int, older: int
) -> tuple[int, int]:
    """Replay attempts (recent, older) that make `frontier` the mix's share of the round."""
    if mix[0] >= 1.0:
        return 0, 0
    total = round(frontier / mix[0])
    n_recent = round(total * mix[1]) if recent else 0
    n_older = max(total - frontier - round(total * mix[1]), 0) if older else 0
    return n_recent, n_older


def plan(state: State, round_number: int) -> dict[str, Any]:
    """The round's attempts, decided once (a seeded choice of replayed problems)."""
    config = state.config
    frontier = [
        Attempt("frontier", state.current_problem, language, approach, sample)
        for language in config.languages
        for approach in config.approaches
        for sample in range(config.samples)
    ]
    recent = state.mastered[-config.recent :]
    older = state.mastered[: -config.recent] if len(state.mastered) > config.recent else []
    n_recent, n_older = replay_counts(len(frontier), config.replay, len(recent), len(older))
    rng = random.Random(f"{config.store_digest}:{round_number}:{state.current_problem}")
    conditions = [(lang, app) for lang in config.languages for app in config.approaches]
    replay: list[Attempt] = []
    seen: dict[tuple[str, int, str, str], int] = {}
    for phase, pool, count in (
        ("replay-recent", recent, n_recent),
        ("replay-older", older, n_older),
    ):
        for index in range(count):
            problem = rng.choice(pool)
            language, approach = conditions[index % len(conditions)]
            key = (phase, problem, language, approach)
            seen[key] = seen.get(key, -1) + 1
            replay.append(Attempt(phase, problem, language, approach, seen[key]))
    attempts = frontier + replay
    return {
        "round": round_number,
        "problem": state.current_problem,
        "model_signature": state.model_signature,
        "mix": {
            "configured": {
                "current": config.replay[0],
                "recent": config.replay[1],
                "older": config.replay[2],
            },
            "counts": {
                "frontier": len(frontier),
                "replay-recent": n_recent,
                "replay-older": n_older,
            },
            "recent_pool": recent,
            "older_pool": older,
        },
        "attempts": [asdict(a) for a in attempts],
    }


def attempts_of(plan_data: dict[str, Any]) -> list[Attempt]:
    return [Attempt(**a) for a in plan_data["attempts"]]


def mix_line(plan_data: dict[str, Any]) -> str:
    """The replay mix in one line, printed and written with every round."""
    mix = plan_data["mix"]
    conf, counts = mix["configured"], mix["counts"]
    total = sum(counts.values())

    def share(n: int) -> str:
        return f"{100 * n / total:.0f}%" if total else "0%"

    return (
        f"replay mix {conf['current']:.0%}/{conf['recent']:.0%}/{conf['older']:.0%} configured; "
        f"this round: frontier {counts['frontier']} ({share(counts['frontier'])}, problem "
        f"{plan_data['problem']}), recent {counts['replay-recent']} ({share(counts['replay-recent'])}, "
        f"from {mix['recent_pool'] or 'none'}), older {counts['replay-older']} "
        f"({share(counts['replay-older'])}, from {mix['older_pool'] or 'none'})"
    )


def tally(
    plan_data: dict[str, Any], rows: list[dict[str, Any]]
) -> tuple[RoundResult, list[Attempt]]:
    """The round's result from its rows (the last scored row per attempt), and attempts still to run."""
    planned = {a.key(): a for a in attempts_of(plan_data)}
    latest: dict[tuple[str, str, str, str, int], dict[str, Any]] = {}
    for row in rows:
        key = (
            str(row.get("phase")),
            str(row.get("problem")),
            str(row.get("language")),
            str(row.get("approach")),
            int(row.get("sample", -1)),
        )
        if key in planned and row.get("status") == "scored":
            latest[key] = row
    missing = [a for k, a in planned.items() if k not in latest]
    frontier = [r for k, r in latest.items() if k[0] == "frontier"]
    replay: dict[str, dict[str, int]] = {}
    for phase in PHASES[1:]:
        cell = [r for k, r in latest.items() if k[0] == phase]
        replay[phase] = {"attempts": len(cell), "passes": sum(bool(r.get("passed")) for r in cell)}
    result = RoundResult(
        round=int(plan_data["round"]),
        problem=int(plan_data["problem"]),
        attempts=len(frontier),
        passes=sum(bool(r.get("passed")) for r in frontier),
        replay=replay,
    )
    return result, missing


# -- persistence -----------------------------------------------------------------


def load(directory: Path) -> State | None:
    path = directory / STATE_FILE
    if not path.exists():
        return None
    try:
        return State.from_json(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CurriculumError(f"{path} cannot be read: {exc}") from None


def save(directory: Path, state: State) -> None:
    atomic_write_json(directory / STATE_FILE, state.to_json(), make_parents=True)


def round_dir(directory: Path, number: int) -> Path:
    return directory / "rounds" / f"{number:04d}"


def check_identity(state: State, config: Config) -> None:
    """Refuse to resume a curriculum under other settings (the model may change)."""
    old, new = state.config.to_json(), config.to_json()
    changed = [key for key in new if old.get(key) != new.get(key) and key != "start"]
    if changed:
        detail = "; ".join(f"{k}: {old.get(k)} -> {new.get(k)}" for k in changed)
        raise CurriculumError(
            f"this state directory was started with other settings ({detail}); resume with the "
            "same settings or use a new --state directory"
        )


def proven_mastered(rows: list[dict[str, Any]], config: Config, signature: str) -> frozenset[int]:
    """Problems the rows show mastered under this model signature: `config.consecutive`
    consecutive rounds whose frontier pass fraction reached the threshold."""
    rounds: dict[int, dict[str, list[bool]]] = {}
    for row in rows:
        if (
            row.get("status") != "scored"
            or row.get("phase") != "frontier"
            or row.get("model_signature") != signature
            or not isinstance(row.get("problem"), int)
        ):
            continue
        rounds.setdefault(row["problem"], {}).setdefault(str(row.get("run_id")), []).append(
            bool(row.get("passed"))
        )
    proven = set()
    for problem, by_round in rounds.items():
        streak = best = 0
        for run in sorted(by_round):
            results = by_round[run]
            streak = streak + 1 if sum(results) / len(results) >= config.threshold else 0
            best = max(best, streak)
        if best >= config.consecutive:
            proven.add(problem)
    return frozenset(proven)
