"""`atoll stack render|up|status|down`: the stack as a command.

`up` returns once Reef is healthy and leaves the processes running (their
pids are in the stack's state file); `down` stops them. Progress goes to
stderr and the Reef URL (or the rendered file) to stdout, so both can be
captured by scripts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from atoll.core import reef_env
from atoll.stack.errors import StackError

if TYPE_CHECKING:
    from atoll.stack.config import StackConfig
    from atoll.stack.planning import Plan

app = typer.Typer(
    help="Reef + Ray + Slime/Megatron + SGLang for a run: render, up, status, down.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_err = Console(stderr=True, highlight=False, soft_wrap=True)
_out = Console(highlight=False, soft_wrap=True)


CONFIG = typer.Option(
    None, "--config", "-c", help="Run config file (TOML or YAML), e.g. Guidance-TTT's."
)
AGENT = typer.Option(
    None, "--agent", help="The agent whose run config this is, when several run on the stack."
)
OVERRIDES = typer.Argument(None, help="Config overrides as key=value (e.g. groups=4 rollouts=8).")
TRAINING = typer.Option(None, "--training", help="on|off; default: the config's `training`.")
UPSTREAM_URL = typer.Option(None, "--upstream-url", help="Guidance endpoint for search-only mode.")
UPSTREAM_MODEL = typer.Option(None, "--upstream-model", help="Model name at the guidance endpoint.")
PORT = typer.Option(None, "--port", help="Reef's port; default: the port of the config's reef_url.")
STACK_DIR = typer.Option(
    None, "--stack-dir", help="State file, serve.yaml and logs (default: <state_dir>/stack)."
)
REEF_HOME = typer.Option(
    None, "--reef-home", envvar=reef_env.HOME_ENV, help="Reef source checkout (holds recipes/tttd)."
)


@app.callback()
def _group() -> None:
    """Reef + Ray + Slime/Megatron + SGLang for a run."""


def _guarded[T](action: Callable[[], T]) -> T:
    from atoll.core.termination import interrupted_status, sigterm_unwinds

    try:
        # SIGTERM unwinds as Ctrl-C does: what the command started is stopped on the way out.
        with sigterm_unwinds(interrupt=True):
            return action()
    except StackError as exc:
        _err.print(f"[bold red]error:[/bold red] {exc}")
        raise typer.Exit(2) from None
    except KeyboardInterrupt as exc:  # Ctrl-C exits 130, SIGTERM 143
        _err.print("interrupted; stopped what this command had started")
        raise typer.Exit(interrupted_status(exc)) from None


def _plan(
    config: Path | None,
    overrides: list[str] | None,
    training: str | None,
    upstream_url: str | None,
    upstream_model: str | None,
    port: int | None,
    stack_dir: Path | None,
    reef_home: str | None = None,
    ready_timeout: float | None = None,
    trainer_gpus: str | None = None,
    executor_server: str | None = None,
    agent: str | None = None,
) -> Plan:
    from atoll.stack.options import options_from_kwargs
    from atoll.stack.planning import plan

    pairs: dict[str, str] = {}
    for item in overrides or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise StackError(f"override {item!r} must be key=value")
        pairs[key] = value
    options = options_from_kwargs(
        {
            "config": config,
            "agent": agent,
            "training": training,
            "upstream_url": upstream_url,
            "upstream_model": upstream_model,
            "port": port,
            "stack_dir": stack_dir,
            "reef_home": reef_home,
            "ready_timeout_s": ready_timeout,
            **({"trainer_gpus": trainer_gpus} if trainer_gpus else {}),
            **({"executor_server": executor_server} if executor_server else {}),
        }
    )
    return plan(_load(config, pairs, agent), options)


def _load(config: Path | None, overrides: dict[str, str], agent: str | None) -> StackConfig:
    """The run config as the stack reads it: through the agent that runs on the stack."""
    from atoll.stack.config import file_reader, load

    return load(config, overrides, file_reader(agent))


@app.command()
def render(
    overrides: list[str] | None = OVERRIDES,
    config: Path | None = CONFIG,
    training: str | None = TRAINING,
    upstream_url: str | None = UPSTREAM_URL,
    upstream_model: str | None = UPSTREAM_MODEL,
    port: int | None = PORT,
    check: bool = typer.Option(False, "--check", help="Also load it with reef-infra's own loader."),
    reef_home: str | None = REEF_HOME,
    agent: str | None = AGENT,
) -> None:
    """Print Reef's serve.yaml for this config (the token stays a ${REEF_TOKEN} reference)."""

    def action() -> None:
        import tempfile

        planned = _plan(
            config, overrides, training, upstream_url, upstream_model, port, None, reef_home,
            agent=agent,
        )  # fmt: skip
        text = planned.serve_yaml
        if check:
            from atoll.stack import validate

            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "serve.yaml"
                path.write_text(text)
                validate.load_layout(path)
                if planned.upstream is not None:
                    validate.resolve(path, upstream=planned.upstream)
                    checked = "fully resolved"
                elif reef_home:
                    import os

                    from atoll.stack.preflight import reef_home as checkout

                    home = checkout(reef_home, os.environ)
                    validate.check_method(validate.resolve(path, reef_home=home))
                    checked = (
                        f"fully resolved with the tttd recipe of {reef_home}; "
                        "the Slime driver's checks pass"
                    )
                else:
                    resolved = validate.resolve(path, recipe=validate.WHEEL_TRAINING_RECIPE)
                    validate.check_method(resolved)
                    checked = (
                        "resolved with a wheel recipe standing in for the tttd recipe; the Slime "
                        f"driver's checks pass; set {reef_env.HOME_ENV} to resolve the tttd recipe too"
                    )
            _err.print(f"reef-infra's loader accepts this file ({checked})")
        _out.out(text, end="")

    _guarded(action)


@app.command()
def up(
    overrides: list[str] | None = OVERRIDES,
    config: Path | None = CONFIG,
    training: str | None = TRAINING,
    upstream_url: str | None = UPSTREAM_URL,
    upstream_model: str | None = UPSTREAM_MODEL,
    port: int | None = PORT,
    stack_dir: Path | None = STACK_DIR,
    reef_home: str | None = REEF_HOME,
    ready_timeout: float | None = typer.Option(
        None, "--ready-timeout", help="Health deadline, seconds."
    ),
    trainer_gpus: str | None = typer.Option(
        None, "--trainer-gpus", help="CUDA_VISIBLE_DEVICES of the trainer (default: 0,1)."
    ),
    executor_server: str | None = typer.Option(
        None, "--executor-server", help="auto|on|off: the local executor's SGLang server on GPU 2."
    ),
    agent: str | None = AGENT,
) -> None:
    """Start the stack, print the Reef URL, return when healthy (processes keep running)."""

    def action() -> None:
        from atoll.stack import launcher

        planned = _plan(
            config,
            overrides,
            training,
            upstream_url,
            upstream_model,
            port,
            stack_dir,
            reef_home,
            ready_timeout,
            trainer_gpus,
            executor_server,
            agent,
        )
        state = launcher.up(planned, _err)
        _err.print(
            f"reef-stack: {state.mode} stack up; stop it with `atoll stack down --stack-dir {planned.stack_dir}`"
        )
        _out.out(state.reef_url)

    _guarded(action)


def _stack_dir(config: Path | None, stack_dir: Path | None, agent: str | None) -> Path:
    if stack_dir is not None:
        return stack_dir
    from atoll.core.reef_runtime import default_stack_dir

    return default_stack_dir(_load(config, {}, agent).state_dir)


@app.command()
def status(
    config: Path | None = CONFIG, stack_dir: Path | None = STACK_DIR, agent: str | None = AGENT
) -> None:
    """Print what runs: Reef's URL and health, each recorded process, the Ray address.

    Then every Reef on this machine whose owning job is dead (killed before it
    could stop it), wherever its run is.
    """

    def action() -> None:
        from atoll.stack import launcher, orphans

        for line in launcher.status_lines(_stack_dir(config, stack_dir, agent)):
            _out.out(line)
        left = orphans.left_behind()
        if not left:
            _out.out("orphans: no Reef left behind by a killed job")
        for orphan in left:
            _out.out(f"orphan: {orphan.describe()}")
        if left:
            _out.out("orphans: stop them with `atoll stack down --orphans`")

    _guarded(action)


@app.command()
def down(
    config: Path | None = CONFIG,
    stack_dir: Path | None = STACK_DIR,
    agent: str | None = AGENT,
    orphans: bool = typer.Option(
        False,
        "--orphans",
        help="Instead: stop every Reef whose owning job is dead and remove its runtime files.",
    ),
) -> None:
    """Stop what `up` started; leave what it found running."""

    def action() -> None:
        if orphans:
            if config is not None or stack_dir is not None:
                raise StackError(
                    "--orphans stops the Reefs of every killed job on this machine; "
                    "pass it without --config or --stack-dir"
                )
            _down_orphans()
            return
        from atoll.stack import launcher

        launcher.down(_stack_dir(config, stack_dir, agent), _err)

    _guarded(action)


def _down_orphans() -> None:
    from atoll.stack import orphans

    stopped = orphans.stop_left_behind(_err)
    if not stopped:
        _err.print("reef-stack: no Reef left behind by a killed job")
    else:
        _err.print(f"reef-stack: cleaned up {len(stopped)} Reef(s) left behind by killed jobs")
