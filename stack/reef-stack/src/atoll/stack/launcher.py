"""Starting, inspecting and stopping the stack: Reef, its trainer and the local executor.

`up` starts `reef serve -c serve.yaml` (from the Reef checkout when training,
so the `recipes/` cookbook is importable), and on GPU machines with the local
executor preset also an SGLang server for the executor, each in its own
process group with its pid recorded in the stack's state file before anything
waits on it. A failed or interrupted start stops what it started. A Reef that
already answers at the configured URL, an executor already serving, and a Ray
cluster named by `RAY_ADDRESS` are used and never stopped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from filelock import FileLock
from rich.console import Console

from atoll.core.docker_engine.files import tail, write_atomic
from atoll.guidance_ttt.config import GuidanceConfig
from atoll.stack import health, preflight, processes
from atoll.stack import state as state_file
from atoll.stack.errors import StackError
from atoll.stack.options import StackOptions
from atoll.stack.processes import Recorded
from atoll.stack.render import TOKEN_ENV, Placement, reef_address, render, to_yaml
from atoll.stack.state import StackState

SEARCH_ONLY_READY_S = 120.0
TRAINING_READY_S = 3600.0
LOCAL_EXECUTOR_PRESET = "gpt-oss-local"


@dataclass(frozen=True)
class Plan:
    """Everything `up` will do, decided before anything starts."""

    config: GuidanceConfig
    options: StackOptions
    training: bool
    placement: Placement
    upstream: tuple[str, str] | None

    @property
    def reef_url(self) -> str:
        return f"http://{self.placement.host}:{self.placement.port}"

    @property
    def stack_dir(self) -> Path:
        return self.placement.stack_dir

    @property
    def serve_yaml(self) -> str:
        return to_yaml(
            render(self.config, self.placement, training=self.training), upstream=self.upstream
        )


def plan(config: GuidanceConfig, options: StackOptions, *, stack_dir: Path | None = None) -> Plan:
    """Decide the mode, the address and the directories from the config and the options."""
    training = options.training if options.training is not None else config.training == "on"
    host, port = reef_address(config, options.port)
    state_dir = config.state_dir.expanduser().resolve()
    directory = (options.stack_dir or stack_dir or state_dir / "stack").expanduser().resolve()
    deadline = options.ready_timeout_s or (TRAINING_READY_S if training else SEARCH_ONLY_READY_S)
    upstream = None
    if not training:
        if not options.upstream_url:
            raise StackError(
                "training is off, so Reef runs in upstream mode and needs the guidance endpoint: "
                "pass --upstream-url URL (and --upstream-model NAME)"
            )
        upstream = (
            _provider_root(options.upstream_url),
            options.upstream_model or config.guidance_model,
        )
    gpus = [g for g in options.trainer_gpus.split(",") if g.strip()]
    placement = Placement(host, port, directory, state_dir, len(gpus), deadline)
    return Plan(config, options, training, placement, upstream)


def _provider_root(url: str) -> str:
    """Reef wants the provider's root URL; OpenAI clients' base URLs end in `/v1`."""
    root = url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def up(plan: Plan, console: Console, environ: Mapping[str, str] | None = None) -> StackState:
    """Start the stack (or find it running) and return once Reef is healthy."""
    env = dict(os.environ if environ is None else environ)
    plan.stack_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(plan.stack_dir / "stack.lock"), timeout=60):
        running = _still_running(plan.stack_dir)
        if running is not None:
            console.print(f"reef-stack: already running at {running.reef_url}")
            return running
        if health.is_reef(plan.reef_url):
            console.print(
                f"reef-stack: using the Reef already running at {plan.reef_url} (left running)"
            )
            found = StackState(reef_url=plan.reef_url, mode=_mode(plan), reused=True)
            state_file.save(plan.stack_dir, found)
            return found
        _preflight(plan, env)
        return _start(plan, env, console)


def _still_running(stack_dir: Path) -> StackState | None:
    recorded = state_file.load(stack_dir)
    if recorded is None:
        return None
    if recorded.reused or not any(processes.alive(p) for p in recorded.processes):
        state_file.clear(stack_dir)
        return None
    return recorded


def _mode(plan: Plan) -> str:
    return "training" if plan.training else "search-only"


def _preflight(plan: Plan, env: dict[str, str]) -> None:
    if not preflight.port_free(plan.placement.host, plan.placement.port):
        raise StackError(
            f"port {plan.placement.port} on {plan.placement.host} is in use by a program that is not "
            "Reef; stop it or pass --port"
        )
    preflight.reef_executable(env)
    preflight.require_git_lfs(env)
    if not env.get(TOKEN_ENV, "").strip():
        raise StackError(f"{TOKEN_ENV} is not set; export the bearer token Reef should accept")
    if plan.training:
        preflight.reef_home(plan.options.reef_home or env.get("REEF_HOME"))
        if preflight.gpu_count(env) == 0:
            raise StackError(
                "training needs GPUs and nvidia-smi lists none on this machine; "
                "run search-only with --training off --upstream-url URL"
            )


def _start(plan: Plan, env: dict[str, str], console: Console) -> StackState:
    stack_dir = plan.stack_dir
    logs = stack_dir / "logs"
    serve_yaml = stack_dir / "serve.yaml"
    write_atomic(serve_yaml, plan.serve_yaml.encode())
    state = StackState(
        reef_url=plan.reef_url,
        mode=_mode(plan),
        serve_yaml=str(serve_yaml),
        ray_address=env.get("RAY_ADDRESS") or None,
        ray_owned=plan.training and not env.get("RAY_ADDRESS"),
    )
    try:
        executor = _maybe_start_executor(plan, env, logs, console)
        if executor is not None:
            state.processes.append(executor)
            state_file.save(stack_dir, state)
        reef_env, cwd, argv = _reef_command(plan, env, serve_yaml)
        if plan.upstream is not None:
            console.print(
                f"reef-stack: search-only (training off): Reef records receipts and reports and "
                f"proxies guidance to {plan.upstream[0]} ({plan.upstream[1]})"
            )
        reef = processes.spawn("reef-serve", argv, logs / "reef-serve.log", reef_env, cwd=cwd)
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
        state.processes.extend(_reef_children(plan.placement.run_dir, known=state.processes))
        if plan.training:
            state.ray_address = _ray_address(plan.placement.run_dir) or state.ray_address
        state_file.save(stack_dir, state)
        if executor is not None:
            health.wait_healthy(
                "the executor's SGLang server",
                _executor_root(plan.config),
                plan.placement.ready_timeout_s,
                still_running=lambda: processes.leader_alive(executor),
                last_lines=lambda: tail(Path(executor.log), 12),
                console=console,
                path="/health",
            )
    except BaseException:
        state.processes.extend(_reef_children(plan.placement.run_dir, known=state.processes))
        processes.stop(state.processes, grace=plan.options.grace_s)
        state_file.clear(stack_dir)
        raise
    return state


def _reef_command(
    plan: Plan, env: dict[str, str], serve_yaml: Path
) -> tuple[dict[str, str], Path, list[str]]:
    reef = preflight.reef_executable(env)
    argv = [reef, "serve", "-c", str(serve_yaml)]
    reef_env = dict(env)
    cwd = plan.stack_dir
    if plan.upstream is not None:
        argv += [
            "--inference.upstream-url",
            plan.upstream[0],
            "--inference.upstream-model",
            plan.upstream[1],
        ]
    else:
        home = preflight.reef_home(plan.options.reef_home or env.get("REEF_HOME"))
        cwd = home
        reef_env["REEF_HOME"] = str(home)
        reef_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(home), env.get("PYTHONPATH", "")) if p
        )
        reef_env["CUDA_VISIBLE_DEVICES"] = plan.options.trainer_gpus
    return reef_env, cwd, argv


def _executor_root(config: GuidanceConfig) -> str:
    parts = urlsplit(config.executor_base_url or "")
    return f"{parts.scheme}://{parts.netloc}"


def _maybe_start_executor(
    plan: Plan, env: dict[str, str], logs: Path, console: Console
) -> Recorded | None:
    """The local executor's SGLang server on its own GPU, when the local preset is chosen."""
    choice = plan.options.executor_server
    wanted = choice == "on" or (
        choice == "auto" and plan.training and plan.config.executor_preset == LOCAL_EXECUTOR_PRESET
    )
    if not wanted:
        return None
    root = _executor_root(plan.config)
    if health.healthy(root, "/health"):
        console.print(f"reef-stack: using the executor already serving at {root} (left running)")
        return None
    parts = urlsplit(root)
    if importlib.util.find_spec("sglang") is None:
        raise StackError(
            "the local executor needs SGLang in this environment (pip install sglang), "
            "or point executor_base_url at a running server"
        )
    model = plan.config.executor_model or ""
    argv = [
        sys.executable, "-m", "sglang.launch_server",
        "--model-path", model,
        "--served-model-name", model,
        "--host", parts.hostname or "127.0.0.1",
        "--port", str(parts.port or 30000),
        "--tp", "1",
    ]  # fmt: skip
    executor_env = dict(env, CUDA_VISIBLE_DEVICES=plan.options.executor_gpu)
    console.print(
        f"reef-stack: starting the executor {model} on GPU {plan.options.executor_gpu} at {root}"
    )
    return processes.spawn("executor-sglang", argv, logs / "executor-sglang.log", executor_env)


def _reef_children(run_dir: Path, known: list[Recorded]) -> list[Recorded]:
    """Reef's own service processes (each in its own group), from its `*.worker.json` files."""
    seen = {p.pid for p in known}
    found: list[Recorded] = []
    for worker in sorted(run_dir.glob("*.worker.json")):
        try:
            pids = json.loads(worker.read_text()).get("pids", {})
        except (OSError, ValueError):
            continue
        for name, pid in pids.items():
            started = processes.start_time(int(pid))
            if started is None or int(pid) in seen:
                continue
            log = run_dir / name / f"{name}.log"
            found.append(Recorded(f"reef:{name}", int(pid), started, (), str(log)))
            seen.add(int(pid))
    return found


def _ray_address(run_dir: Path) -> str | None:
    """The Ray address Reef's services were given, from their runtime files."""
    for runtime in sorted(run_dir.glob("*/runtime.yaml")):
        try:
            data = yaml.safe_load(runtime.read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        address = (data.get("reef") or {}).get("ray_address")
        if address:
            return str(address)
    return None


def down(stack_dir: Path, console: Console, grace_s: float = 30.0) -> list[str]:
    """Stop what `up` started from `stack_dir`; leave what it found running. Returns the names stopped."""
    stack_dir = stack_dir.expanduser().resolve()
    if not stack_dir.is_dir():
        console.print(f"reef-stack: nothing was started from {stack_dir}")
        return []
    with FileLock(str(stack_dir / "stack.lock"), timeout=60):
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
