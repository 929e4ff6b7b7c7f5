"""The `reef-stack` Harbor job plugin: Reef up for the job, down at its end.

`harbor run --plugin reef-stack --pk key=value ...` takes the same options as
`atoll stack up`. The stack's config (`atoll.stack.config.StackConfig`) is
the one the job's agent hands over: an agent whose registration declares
`StackUse("reef-stack", "module:function")` has that function turn its
Harbor options (`--ak`, `--model`) into a `StackConfig` or a mapping of its
settings (the first such agent of the job, when several are). `--pk
config=FILE` names the run config instead, which that agent reads (or the
installed agent that runs on the stack, when the job has none); with neither,
that agent's defaults. A Reef that `REEF_URL` names is used as it is (and must
answer). Otherwise, at job start the stack is started (or found running) with
its state and logs under `<job_dir>/reef-stack`, and `REEF_URL` and
`REEF_TOKEN` are set in this process's environment for the job's agents. At
job end, and also when the process exits without reaching job end (Ctrl-C, a
failed trial loop, SIGTERM), what the plugin started is stopped; what it found
running is left alone.

Errors a user can act on leave Harbor as one line (`SystemExit` with the
message), not as a traceback.
"""

from __future__ import annotations

import atexit
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harbor.models.job.plugin import BaseJobPlugin
from rich.console import Console

from atoll.core import reef_env
from atoll.core.agent_settings import StackConfigError, check_job_agents
from atoll.core.termination import UnwindOnSigterm
from atoll.stack.errors import StackError
from atoll.stack.options import StackOptions, options_from_kwargs
from atoll.stack.plugin import JOB_PLUGIN

if TYPE_CHECKING:
    from harbor.job import Job
    from harbor.models.job.result import JobResult

    from atoll.stack.config import StackConfig

STACK_SUBDIR = "reef-stack"


class ReefStackPlugin(BaseJobPlugin):
    """Starts the Reef stack for a Harbor job and stops it at the job's end."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        try:
            self.options: StackOptions = options_from_kwargs(kwargs)
        except StackError as exc:
            raise SystemExit(f"reef-stack: error: {exc}") from exc
        self.stack_dir: Path | None = None
        self._state_dir: Path | None = None
        self.reef_url: str | None = None
        self._stopped = True
        self._sigterm = UnwindOnSigterm()  # SIGTERM unwinds, so atexit stops the stack
        self._console = Console(stderr=True, highlight=False, soft_wrap=True)

    async def on_job_start(self, job: Job) -> None:
        # Runs in the event loop's thread on purpose: nothing else of the job runs yet,
        # and Ctrl-C must interrupt the health wait itself so that it stops what it started.
        from atoll.stack import launcher, orphans

        try:  # options an agent refuses must not cost a stack's start first
            check_job_agents(job.config.agents)
        except StackConfigError as exc:
            raise SystemExit(f"reef-stack: error: {exc}") from None
        if self._use_named_reef():
            return
        try:
            config = self.config_for(job)
            if reef_env.named_token() is None:
                # Lives only in this process's environment and its children's; never on disk.
                os.environ[reef_env.TOKEN_ENV] = secrets.token_urlsafe(24)
            planned = launcher.plan(
                config, self.options, stack_dir=Path(job.job_dir) / STACK_SUBDIR
            )
            self.stack_dir = planned.stack_dir
            self._state_dir = planned.placement.state_dir
            self._stopped = False
            atexit.register(self.stop)
            self._sigterm.install()
            orphans.take_over(
                self._state_dir, planned.stack_dir, os.environ[reef_env.TOKEN_ENV], self._console
            )
            # Recorded before anything starts: a kill at any later moment leaves a Reef
            # that the run's next job knows to be a killed job's.
            orphans.record(self._state_dir, planned.stack_dir, planned.reef_url)
            state = launcher.up(planned, self._console)
            if state.reused:
                orphans.release(self._state_dir)
        except StackError as exc:
            self._forget()  # a failed start has already stopped what it started
            raise SystemExit(f"reef-stack: error: {exc}") from exc
        except BaseException:
            self._forget()
            raise
        self.reef_url = state.reef_url
        os.environ[reef_env.URL_ENV] = state.reef_url
        # Where Reef's runtime files name its trainer's Ray cluster, for the training gate.
        os.environ[reef_env.RUN_DIR_ENV] = str(state.run_dir or planned.placement.run_dir)
        self._console.print(f"reef-stack: Reef at {state.reef_url}")

    async def on_job_end(self, job_result: JobResult) -> None:
        self.stop()

    def _use_named_reef(self) -> bool:
        """A Reef that `REEF_URL` already names is the job's, left running; a dead one is an error."""
        from atoll.stack import health

        named = reef_env.named_url()
        if named is None:
            return False
        if not health.is_reef(named):
            raise SystemExit(
                f"reef-stack: error: {reef_env.URL_ENV}={named} does not answer as Reef (GET /healthz); "
                f"start that Reef, or unset {reef_env.URL_ENV} to start one for the job"
            )
        self.reef_url = named
        self._console.print(
            f"reef-stack: using the Reef at {named} ({reef_env.URL_ENV}; left running)"
        )
        return True

    def config_for(self, job: Job) -> StackConfig:
        """The job's agent's config, read from `--pk config=FILE` when given, else the defaults."""
        from atoll.core.stack_use import StackConfigError, declaring_agent, handed_config
        from atoll.stack.config import file_reader, from_agent, load

        try:
            if self.options.config is None:
                handed = handed_config(JOB_PLUGIN, job.config.agents)
                if handed is not None:
                    return from_agent(handed.agent, handed.config)
                return load(None, {}, file_reader(self.options.agent))
            found = declaring_agent(JOB_PLUGIN, job.config.agents)
            reader = found[1] if found is not None else file_reader(self.options.agent)
            return load(self.options.config, {}, reader)
        except StackConfigError as exc:
            raise StackError(str(exc)) from None

    def stop(self) -> None:
        """Stop what this plugin started (idempotent)."""
        if self._stopped or self.stack_dir is None:
            return
        self._stopped = True
        from atoll.stack import launcher, orphans

        atexit.unregister(self.stop)
        launcher.down(self.stack_dir, self._console, grace_s=self.options.grace_s)
        if self._state_dir is not None:
            orphans.release(self._state_dir)
        self._sigterm.restore()

    def _forget(self) -> None:
        self._stopped = True
        atexit.unregister(self.stop)
        self._sigterm.restore()
