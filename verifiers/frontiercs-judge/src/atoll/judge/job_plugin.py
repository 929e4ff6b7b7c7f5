"""The `frontiercs-judge` Harbor job plugin: a judge for the whole job, without a second terminal.

The agent's scorer and the task's verifier both find the judge through
`FRONTIERCS_JUDGE_URL`. At job start, a judge that variable already names is
checked and used (and left running); if it is set but does not answer, the job
stops with one line. Otherwise the embedded judge is started in this process
on a free loopback port, with its compile cache under `<job_dir>/frontiercs-judge`,
and the variable is exported for the job. It runs in-process on purpose: it
cannot outlive the Harbor process, whatever ends it (job end, Ctrl-C, a
failed start of another plugin), so nothing is left to clean up by pid.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from harbor.models.job.plugin import BaseJobPlugin
from rich.console import Console

from atoll.judge.embedded import JUDGE_URL_ENV, EmbeddedJudge, JudgeSetup

if TYPE_CHECKING:
    from harbor.job import Job
    from harbor.models.job.result import JobResult

JUDGE_SUBDIR = "frontiercs-judge"
HEALTH_TIMEOUT_S = 5.0


class FrontierCSJudgePlugin(BaseJobPlugin):
    """Finds the judge named by FRONTIERCS_JUDGE_URL, or runs the embedded one for the job."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if kwargs:
            raise SystemExit(
                f"frontiercs-judge: error: this plugin takes no options (got {', '.join(kwargs)}); "
                f"set {JUDGE_URL_ENV} to use a judge that is already running"
            )
        self.url: str | None = None
        self._judge: EmbeddedJudge | None = None
        self._previous_env: str | None = None
        self._console = Console(stderr=True, highlight=False, soft_wrap=True)

    async def on_job_start(self, job: Job) -> None:
        named = os.environ.get(JUDGE_URL_ENV, "").strip().rstrip("/")
        if named:
            if not answers(named):
                raise SystemExit(
                    f"frontiercs-judge: error: {JUDGE_URL_ENV}={named} does not answer GET /health; "
                    f"start that judge, or unset {JUDGE_URL_ENV} to run the embedded one for the job"
                )
            self.url = named
            self._console.print(f"frontiercs-judge: using the judge at {named} (left running)")
            return
        state_dir = Path(job.job_dir).resolve() / JUDGE_SUBDIR
        judge = EmbeddedJudge(JudgeSetup(state_dir=state_dir))
        atexit.register(self.stop)
        self._judge = judge
        try:
            self.url = judge.start()
        except BaseException as exc:
            self.stop()
            if isinstance(exc, Exception):
                raise SystemExit(
                    f"frontiercs-judge: error: the embedded judge did not start: {exc}"
                ) from exc
            raise
        self._previous_env = os.environ.get(JUDGE_URL_ENV)
        os.environ[JUDGE_URL_ENV] = self.url
        self._console.print(
            f"frontiercs-judge: embedded judge at {self.url} for this job (data in {state_dir})"
        )

    async def on_job_end(self, job_result: JobResult) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the embedded judge this plugin started (idempotent); a found judge is left alone."""
        judge, self._judge = self._judge, None
        if judge is None:
            return
        atexit.unregister(self.stop)
        judge.stop()
        if os.environ.get(JUDGE_URL_ENV) == self.url:
            if self._previous_env is None:
                os.environ.pop(JUDGE_URL_ENV, None)
            else:
                os.environ[JUDGE_URL_ENV] = self._previous_env


def answers(url: str, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    """Whether a judge answers GET /health at `url` with 200."""
    try:
        return httpx.get(f"{url}/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False
