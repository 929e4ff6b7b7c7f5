"""Whether the job a `run` started had a trial that failed, read from the job's own result.

Harbor's `run` exits 0 once the job has run, even when a trial's agent raised:
the exception is in the job's `result.json`, not in the exit status. Scripts
and CI judge a command by its exit status, so `atoll run` reads the result of
the job it just ran and exits non-zero, with one line naming the failed
trials and their exception types. The job is found as Harbor lays it out:
`<jobs dir>/<job name>/result.json`, the jobs directory from `-o/--jobs-dir`,
else a `-c/--config` file's `jobs_dir`, else Harbor's default; the job is the
one whose result this command wrote (and the `--job-name` one, when given).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from atoll.core.argv import values
from atoll.core.run_defaults import CONFIG_FLAGS

RESULT_FILE = "result.json"


@dataclass(frozen=True)
class FailedTrial:
    trial: str
    exception: str


@dataclass(frozen=True)
class JobFailures:
    job_dir: Path
    trials: tuple[FailedTrial, ...]

    def line(self) -> str:
        """The one line a user reads: how many trials failed, which, and with what."""
        count = len(self.trials)
        listed = ", ".join(f"{t.trial} ({t.exception})" for t in self.trials)
        noun = "trial" if count == 1 else "trials"
        return f"{count} {noun} of job {self.job_dir} failed: {listed}"


class JobWatch:
    """Notes the job results present before a `run`, to find the one it writes."""

    def __init__(self, args: Sequence[str]) -> None:
        self.jobs_dir = jobs_dir(args)
        names = values(args, ("--job-name",))
        self.job_name = names[-1] if names else None
        self._before = _results(self.jobs_dir)

    def failures(self) -> list[JobFailures]:
        """The failed trials of every job this command wrote a result for."""
        found: list[JobFailures] = []
        for job_dir, stamp in sorted(_results(self.jobs_dir).items()):
            if self._before.get(job_dir) == stamp:
                continue
            if self.job_name is not None and job_dir.name != self.job_name:
                continue
            trials = failed_trials(job_dir / RESULT_FILE)
            if trials:
                found.append(JobFailures(job_dir, trials))
        return found


def jobs_dir(args: Sequence[str]) -> Path:
    """Where Harbor writes this command's job: `-o`, else the `-c` file's, else `jobs`."""
    given = values(args, ("-o", "--jobs-dir"))
    if given:
        return Path(given[-1])
    configs = values(args, CONFIG_FLAGS)
    if configs:
        try:
            data = yaml.safe_load(Path(configs[-1]).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            data = None  # a remote or unreadable config: Harbor reports it itself
        if isinstance(data, dict) and data.get("jobs_dir"):
            return Path(str(data["jobs_dir"]))
    return Path(_default_jobs_dir())


def failed_trials(result_path: Path) -> tuple[FailedTrial, ...]:
    """The trials a job result lists under an exception, in name order."""
    try:
        data = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    evals = (data.get("stats") or {}).get("evals") or {}
    trials = {
        (str(trial), str(exception))
        for stats in evals.values()
        if isinstance(stats, dict)
        for exception, names in (stats.get("exception_stats") or {}).items()
        for trial in names or ()
    }
    return tuple(FailedTrial(trial, exception) for trial, exception in sorted(trials))


def _results(directory: Path) -> dict[Path, int]:
    """Each job directory's result file, by its modification time (ns)."""
    stamps: dict[Path, int] = {}
    try:
        jobs = list(directory.iterdir())
    except OSError:
        return stamps
    for job in jobs:
        try:
            stamps[job] = (job / RESULT_FILE).stat().st_mtime_ns
        except OSError:
            continue
    return stamps


def _default_jobs_dir() -> str:
    from harbor.models.job.config import JobConfig

    return str(JobConfig.model_fields["jobs_dir"].default)
