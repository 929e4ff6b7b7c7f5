"""Starting, inspecting and stopping the stack: Reef, its trainer and the local executor.

`up` starts `reef serve -c serve.yaml` (from the Reef checkout when training,
so the `recipes/` cookbook is importable), and on GPU machines, when the
agent's settings say the executor is served on this machine, also an SGLang
server for it, each in its own
process group with its pid recorded in the stack's state file before anything
waits on it. A failed or interrupted start stops what it started. A Reef that
already answers at the configured URL, an executor already serving, and a Ray
cluster named by `RAY_ADDRESS` are used and never stopped.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path

from rich.console import Console

from atoll.core import reef_env, run_lock
from atoll.core.docker_engine import tail
from atoll.core.durable import atomic_write_bytes
from atoll.core.reef_runtime import RUN_SUBDIR
from atoll.stack import commands, health, preflight, processes, reef_run_dir
from atoll.stack import state as state_file
from atoll.stack.errors import StackError
from atoll.stack.planning import Plan, mode, plan
from atoll.stack.processes import Recorded
from atoll.stack.state import StackState

__all__ = ["Plan", "down", "plan", "status_lines", "up"]


def up(plan: Plan, console: Console, environ: Mapping[str, str] | None = None) -> StackState:
    """Start the stack (or find it running) and return once Reef is healthy."""
    env = dict(os.environ if environ is None else environ)
    with _stack_lock(plan.stack_dir):
        running = _still_running(plan.stack_dir)
        if running is not None:
            console.print(f"reef-stack: already running at {running.reef_url}")
            return running
        if health.is_reef(plan.reef_url):
            console.print(
                f"reef-stack: using the Reef already running at {plan.reef_url} (left running)"
            )
            found = StackState(reef_url=plan.reef_url, mode=mode(plan), reused=True)
            state_file.save(plan.stack_dir, found)
            return found
        _preflight(plan, env)
        return _start(plan, env, console)


def _stack_lock(stack_dir: Path) -> run_lock.Lock:
    """One `up` or `down` of a stack directory at a time; a minute's wait, then a refusal naming who."""
    what = f"the stack in {stack_dir}"
    return run_lock.wait(stack_dir / "stack.lock", timeout=60, what=what, error=StackError)


def _still_running(stack_dir: Path) -> StackState | None:
    recorded = state_file.load(stack_dir)
    if recorded is None:
        return None
    if recorded.reused or not any(processes.alive(p) for p in recorded.processes):
        # Reef died without `down` (killed with its job): its runtime files still hold the token.
        _remove_runtime_files(stack_dir, recorded)
        state_file.clear(stack_dir)
        return None
    return recorded


def _preflight(plan: Plan, env: dict[str, str]) -> None:
    if not preflight.port_free(plan.placement.host, plan.placement.port):
        raise StackError(
            f"port {plan.placement.port} on {plan.placement.host} is in use by a program that is not "
            "Reef; stop it or pass --port"
        )
    preflight.reef_executable(env)
    preflight.require_git_lfs(env)
    if reef_env.named_token(env) is None:
        raise StackError(
            f"{reef_env.TOKEN_ENV} is not set; export the bearer token Reef should accept"
        )
    if plan.training:
        preflight.reef_home(plan.options.reef_home, env)
        if preflight.gpu_count(env) == 0:
            raise StackError(
                "training needs GPUs and nvidia-smi lists none on this machine; "
                "run search-only with --training off --upstream-url URL"
            )
        _check_method(plan, env)


def _check_method(plan: Plan, env: dict[str, str]) -> None:
    """Reef's own resolution and its Slime driver's checks, before any GPU is taken."""
    import tempfile

    from atoll.stack import validate

    home = preflight.reef_home(plan.options.reef_home, env)
    preflight.method_importable(preflight.reef_executable(env), home, env)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "serve.yaml"
        path.write_text(plan.serve_yaml)
        validate.check_method(validate.resolve(path, reef_home=home))


def _start(plan: Plan, env: dict[str, str], console: Console) -> StackState:
    stack_dir = plan.stack_dir
    logs = stack_dir / "logs"
    serve_yaml = stack_dir / "serve.yaml"
    atomic_write_bytes(serve_yaml, plan.serve_yaml.encode(), make_parents=True)
    state = StackState(
        reef_url=plan.reef_url,
        mode=mode(plan),
        serve_yaml=str(serve_yaml),
        ray_address=(env.get("RAY_ADDRESS") or None) if plan.training else None,
        ray_owned=plan.training and not env.get("RAY_ADDRESS"),
    )
    try:
        executor = _maybe_start_executor(plan, env, logs, console)
        if executor is not None:
            state.processes.append(executor)
            state_file.save(stack_dir, state)
        command = commands.reef_command(plan, env, serve_yaml)
        if plan.upstream is not None:
            console.print(
                f"reef-stack: search-only (training off): Reef records receipts and reports and "
                f"proxies guidance to {plan.upstream[0]} ({plan.upstream[1]})"
            )
        # Reef writes its resolved configuration, token included, into its run directory.
        reef = processes.spawn(
            "reef-serve",
            command.argv,
            logs / "reef-serve.log",
            command.env,
            cwd=command.cwd,
            private=True,
        )
        state.processes.append(reef)
        state_file.save(stack_dir, state)
        health.wait_healthy(
            "Reef",
            plan.reef_url,
            plan.placement.ready_timeout_s,
            still_running=lambda: processes.leader_alive(reef),
            last_lines=lambda: tail(Path(reef.log), 12),
            console=console,
        )
        state.processes.extend(
            reef_run_dir.service_processes(plan.placement.run_dir, known=state.processes)
        )
        if plan.training:
            state.ray_address = (
                reef_run_dir.ray_address(plan.placement.run_dir) or state.ray_address
            )
        state_file.save(stack_dir, state)
        if executor is not None:
            health.wait_healthy(
                "the executor's SGLang server",
                commands.executor_root(plan.config),
                plan.placement.ready_timeout_s,
                still_running=lambda: processes.leader_alive(executor),
                last_lines=lambda: tail(Path(executor.log), 12),
                console=console,
                path="/health",
            )
    except BaseException:
        state.processes.extend(
            reef_run_dir.service_processes(plan.placement.run_dir, known=state.processes)
        )
        processes.stop(state.processes, grace=plan.options.grace_s)
        reef_run_dir.remove_resolved_configs(plan.placement.run_dir)
        state_file.clear(stack_dir)
        raise
    return state


def _maybe_start_executor(
    plan: Plan, env: dict[str, str], logs: Path, console: Console
) -> Recorded | None:
    """The local executor's SGLang server on its own GPU, unless one already serves."""
    if not commands.executor_wanted(plan):
        return None
    root = commands.executor_root(plan.config)
    if health.healthy(root, "/health"):
        console.print(f"reef-stack: using the executor already serving at {root} (left running)")
        return None
    if importlib.util.find_spec("sglang") is None:
        raise StackError(
            "the local executor needs SGLang in this environment (pip install sglang), "
            "or point executor_base_url at a running server"
        )
    command = commands.executor_command(plan, env)
    console.print(
        f"reef-stack: starting the executor {plan.config.executor_model} "
        f"on GPU {plan.options.executor_gpu} at {root}"
    )
    return processes.spawn(
        "executor-sglang", command.argv, logs / "executor-sglang.log", command.env
    )


def down(stack_dir: Path, console: Console, grace_s: float = 30.0) -> list[str]:
    """Stop what `up` started from `stack_dir`; leave what it found running. Returns the names stopped."""
    stack_dir = stack_dir.expanduser().resolve()
    if not stack_dir.is_dir():
        console.print(f"reef-stack: nothing was started from {stack_dir}")
        return []
    with _stack_lock(stack_dir):
        recorded = state_file.load(stack_dir)
        if recorded is None:
            console.print(f"reef-stack: nothing was started from {stack_dir}")
            return []
        if recorded.reused:
            console.print(
                f"reef-stack: Reef at {recorded.reef_url} was already running; left running"
            )
            state_file.clear(stack_dir)
            return []
        living = [p for p in recorded.processes if processes.alive(p)]
        killed = processes.stop(recorded.processes, grace=grace_s)
        _remove_runtime_files(stack_dir, recorded)
        state_file.clear(stack_dir)
    for name in killed:
        console.print(f"reef-stack: {name} ignored SIGTERM for {grace_s:.0f} s and was killed")
    if recorded.ray_address and not recorded.ray_owned:
        console.print(
            f"reef-stack: Ray cluster {recorded.ray_address} was already running; left running"
        )
    console.print(
        f"reef-stack: stopped {', '.join(p.name for p in living) or 'nothing (all had exited)'}"
    )
    return [p.name for p in living]


def _remove_runtime_files(stack_dir: Path, recorded: StackState) -> None:
    """Delete Reef's token-bearing runtime files: this stack's, and an adopted Reef's."""
    reef_run_dir.remove_resolved_configs(stack_dir / RUN_SUBDIR)
    if recorded.run_dir:
        reef_run_dir.remove_resolved_configs(Path(recorded.run_dir))


def status_lines(stack_dir: Path) -> list[str]:
    """What runs for `stack_dir`, one line per item."""
    stack_dir = stack_dir.expanduser().resolve()
    recorded = state_file.load(stack_dir) if stack_dir.is_dir() else None
    if recorded is None:
        return [f"no stack was started from {stack_dir}"]
    answering = "healthy" if health.healthy(recorded.reef_url) else "not answering"
    lines = [f"reef: {recorded.reef_url} ({recorded.mode}, {answering})"]
    if recorded.reused:
        lines.append("reef was already running when the stack came up; `down` leaves it running")
    for process in recorded.processes:
        state = "running" if processes.alive(process) else "exited"
        lines.append(f"{process.name}: pid {process.pid} {state}; log {process.log}")
    if recorded.ray_address:
        owner = "started with Reef" if recorded.ray_owned else "existing cluster, left running"
        lines.append(f"ray: {recorded.ray_address} ({owner})")
    return lines
