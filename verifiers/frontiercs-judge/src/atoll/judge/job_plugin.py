"""The `frontiercs-judge` Harbor job plugin: a judge for the whole job, without a second terminal.

The agent's scorer finds the judge through `FRONTIERCS_JUDGE_URL`; a task's
verifier, which has no network, through the unix socket in
`FRONTIERCS_JUDGE_SOCKET_DIR`. At job start the plugin finds, relays or
starts the judge (see `provision.JudgeForTrials`), once the job's agents
have accepted their options (`atoll.core.agent_settings`), with the embedded judge's
compile cache under `<job_dir>/frontiercs-judge` (with `--pk ray=ADDRESS|auto`, the
embedded judge sends the cases to the judge nodes of that Ray cluster); at job end, on Ctrl-C, on
SIGTERM or at exit, it stops what it started and restores both variables.
"""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harbor.models.job.plugin import BaseJobPlugin
from rich.console import Console

from atoll.core.agent_settings import StackConfigError, check_job_agents
from atoll.core.termination import UnwindOnSigterm
from atoll.judge.embedded import JUDGE_URL_ENV
from atoll.judge.provision import JudgeForTrials, JudgeNotReady

if TYPE_CHECKING:
    from harbor.job import Job
    from harbor.models.job.result import JobResult

JUDGE_SUBDIR = "frontiercs-judge"


class FrontierCSJudgePlugin(BaseJobPlugin):
    """Finds the judge named by FRONTIERCS_JUDGE_URL, or runs the embedded one for the job."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        ray = kwargs.pop("ray", None)
        if kwargs:
            raise SystemExit(
                f"frontiercs-judge: error: this plugin takes one option, ray=ADDRESS|auto (got "
                f"{', '.join(kwargs)}); set {JUDGE_URL_ENV} to use a judge that is already running"
            )
        if ray is not None and (not isinstance(ray, str) or not ray.strip()):
            raise SystemExit(
                "frontiercs-judge: error: ray= needs the address of a Ray cluster's head "
                "(host:port) or auto"
            )
        self._ray: str | None = ray.strip() if ray is not None else None
        self._judge: JudgeForTrials | None = None
        self._sigterm = UnwindOnSigterm()  # SIGTERM unwinds, so atexit stops the judge
        self._console = Console(stderr=True, highlight=False, soft_wrap=True)

    @property
    def url(self) -> str | None:
        return self._judge.url if self._judge is not None else None

    async def on_job_start(self, job: Job) -> None:
        try:  # options an agent refuses must not cost a judge's start first
            check_job_agents(job.config.agents)
        except StackConfigError as exc:
            raise SystemExit(f"frontiercs-judge: error: {exc}") from None
        judge = self._judge = JudgeForTrials(
            Path(job.job_dir).resolve() / JUDGE_SUBDIR,
            say=lambda message: self._console.print(f"frontiercs-judge: {message}"),
            ray=self._ray,
        )
        atexit.register(self.stop)
        self._sigterm.install()
        try:
            judge.start()
        except JudgeNotReady as exc:
            self.stop()
            raise SystemExit(f"frontiercs-judge: error: {exc}") from exc

    async def on_job_end(self, job_result: JobResult) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop what the plugin started and restore the environment (idempotent)."""
        atexit.unregister(self.stop)
        judge, self._judge = self._judge, None
        if judge is not None:
            judge.stop()
        self._sigterm.restore()
