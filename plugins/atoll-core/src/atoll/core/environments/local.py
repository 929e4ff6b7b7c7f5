"""`atoll-local`: a Harbor environment that runs each trial under bubblewrap.

No container engine and no image build: each trial gets its own root (see
`trial_root`) with the task's directories bound at their usual paths over the
host's read-only system directories, and every `exec` is one sandbox run (see
`atoll.core.sandbox`) as an unprivileged uid, in fresh namespaces, with the
task's network mode, memory and CPU limits. Use it where Docker is missing or
too slow; tasks whose Dockerfile installs software need `--env docker`.

Users: the trial's users (root included) are unprivileged host uids of a block
drawn per trial, and each exec runs in a user namespace that maps that block
onto ids 0..15 (see `trial_root`). Root in the box is id 0 there and can do
what root in a container can (switch to the task's other users, chown their
files, signal their processes), over the trial's own ids only: a verifier that
drops to another uid to run untrusted code works as it does under Docker.

Network modes: `public` shares the host's network, `no-network` gives each
exec an empty network namespace, and `allowlist` (addresses, CIDRs and exact
hostnames, where this process is root and nftables works) shares the host's
network under nftables rules on the trial's uids (see `egress_rules`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import glob
import os
import posixpath
import shlex
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import (
    EnvironmentCapabilities,
    EnvironmentResourceCapabilities,
)
from harbor.models.task.config import NetworkMode, NetworkPolicy

from atoll.core.environments import compose_volumes, dockerfile, egress_rules, transfer
from atoll.core.environments.box import EXEC_OUTPUT_BYTES, box_limits, box_spec
from atoll.core.environments.trial_root import BLOCK, TrialRoot, TrialRootError, User, top_level
from atoll.core.sandbox import (
    CancelToken,
    Limits,
    Mount,
    Network,
    SandboxBackend,
    SandboxResult,
    SandboxSpec,
    Status,
    get_backend,
)
from atoll.core.sandbox.userns import UserNamespace
from atoll.core.sizes import GiB, MiB

DEFAULT_WORKDIR = "/app"
TRANSFER_BYTES = GiB

# Execs block a thread each for as long as the command runs (agents run for
# minutes), so they get their own pool rather than asyncio's small default.
_EXECUTOR = ThreadPoolExecutor(max_workers=256, thread_name_prefix="atoll-local")


class LocalEnvironment(BaseEnvironment):
    """Harbor environment: one bubblewrap box per trial, no container engine."""

    def __init__(self, *args: Any, root_parent: str | None = None, **kwargs: Any) -> None:
        # Where this trial's root is made (the environment config's `root_parent`; else
        # $ATOLL_LOCAL_ROOT; else the temp dir): a caller that must find one trial's root
        # again after a crash (`atoll emit frontiersmith cleanup`) gives each trial its own.
        self._root_parent = root_parent
        self._root: TrialRoot | None = None
        self._userns: UserNamespace | None = None
        self._plan = dockerfile.Plan()
        self._volumes = compose_volumes.Volumes()
        self._volume_mounts: list[Mount] = []
        self._active: set[CancelToken] = set()
        super().__init__(*args, **kwargs)
        self._backend: SandboxBackend = get_backend("bwrap")

    # --- what Harbor asks about the environment -------------------------------

    @staticmethod
    def type() -> str:
        return "atoll-local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # Each exec is a fresh namespace, so the network policy can change
        # between phases at no cost; log directories are host bind mounts.
        # Allowlists by address or exact hostname need nftables (and root);
        # wildcard hostnames would need a DNS-aware proxy, which this lacks.
        allowlist = egress_rules.supported()
        return EnvironmentCapabilities(
            disable_internet=True,
            dynamic_network_policy=True,
            mounted=True,
            network_allowlist=allowlist,
            network_allowlist_hostnames=allowlist,
            network_allowlist_ipv4_addresses=allowlist,
            network_allowlist_ipv6_addresses=allowlist,
            network_allowlist_ipv4_cidrs=allowlist,
            network_allowlist_ipv6_cidrs=allowlist,
        )

    @classmethod
    def resource_capabilities(cls) -> EnvironmentResourceCapabilities:
        return EnvironmentResourceCapabilities(cpu_limit=True, memory_limit=True)

    @classmethod
    def preflight(cls) -> None:
        from atoll.core.sandbox import SandboxError

        try:
            get_backend("bwrap").check()
        except SandboxError as exc:
            raise SystemExit(f"atoll-local cannot run here: {exc}") from None

    def _validate_definition(self) -> None:
        # Nothing is required: without a Dockerfile the trial simply starts empty.
        dockerfile_path = self.environment_dir / "Dockerfile"
        if dockerfile_path.exists():
            self._plan = dockerfile.parse(dockerfile_path)
        compose_path = compose_volumes.compose_file(self.environment_dir)
        if compose_path is not None:
            self._volumes = compose_volumes.parse(compose_path)

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        if self._root is not None:
            await self._enforce(network_policy)

    async def _enforce(self, network_policy: NetworkPolicy) -> None:
        """Write the trial's nftables table for an allowlist; remove it otherwise."""
        uids = self.root.uids
        if network_policy.network_mode == NetworkMode.ALLOWLIST:
            if not egress_rules.supported():
                raise ValueError(
                    "atoll-local enforces network_mode='allowlist' only as root with "
                    "nftables (the nft command) available; use public or no-network here"
                )
            work = functools.partial(egress_rules.apply, uids, list(network_policy.allowed_hosts))
        elif egress_rules.supported():
            work = functools.partial(egress_rules.remove, uids)
        else:
            return  # no nftables here, so no table of this trial can exist
        await asyncio.get_running_loop().run_in_executor(_EXECUTOR, work)

    # --- lifecycle ------------------------------------------------------------

    @property
    def root(self) -> TrialRoot:
        if self._root is None:
            raise RuntimeError("the atoll-local environment is not started")
        return self._root

    @property
    def _namespace(self) -> UserNamespace:
        if self._userns is None:
            raise RuntimeError("the atoll-local environment is not started")
        return self._userns

    @property
    def workdir(self) -> str:
        return self.task_env_config.workdir or self._plan.workdir or DEFAULT_WORKDIR

    async def start(self, force_build: bool) -> None:
        await asyncio.get_running_loop().run_in_executor(_EXECUTOR, self._backend.check)
        self._volume_mounts = self._resolve_volumes()
        parent = self._root_parent or os.environ.get("ATOLL_LOCAL_ROOT")
        if self._root_parent:
            Path(self._root_parent).mkdir(parents=True, exist_ok=True)
        self._root = TrialRoot(Path(parent) if parent else None)
        self._userns = UserNamespace(self.root.uids.start, BLOCK)
        if egress_rules.supported():
            # A table left by a crashed trial that had the same uids.
            egress_rules.remove(self.root.uids)
        if self._network_is_allowlist:
            await self._enforce(self._network_policy)
        for mount in self._mounts:
            if mount.get("type", "bind") == "bind" and not mount.get("read_only"):
                # Owned by the box's root, writable by its users: as in a container.
                source = Path(mount["source"])
                source.mkdir(parents=True, exist_ok=True)
                os.chown(source, self.root.root_user.host_uid, self.root.root_user.host_uid)
                source.chmod(0o777)
        await self._make_workdirs()
        await self._apply_dockerfile()
        await self._upload_environment_dir_after_start()

    async def _make_workdirs(self) -> None:
        """Each WORKDIR that does not exist yet, owned by the USER in effect (as BuildKit does)."""
        wanted = [*self._plan.workdirs, (self.workdir, None)]
        for path, owner in wanted:
            host_path = self._host_path(path)
            if os.path.lexists(host_path):
                continue
            self.root.ensure_top(top_level(path))
            if not os.path.lexists(host_path):
                made = await self.exec(f"mkdir -p {shlex.quote(path)}", cwd="/", user="root")
                if made.return_code != 0:
                    raise RuntimeError(
                        f"atoll-local could not create WORKDIR {path}: {made.stderr}"
                    )
            if owner is not None:
                user = self.root.user(owner)
                os.lchown(host_path, user.host_uid, user.host_uid)

    def _resolve_volumes(self) -> list[Mount]:
        if self._volumes.skipped:
            self.logger.warning(
                f"atoll-local binds host paths only; the compose volume(s) "
                f"{', '.join(self._volumes.skipped)} of service main are not created"
            )
        mounts = []
        for volume in self._volumes.binds:
            source, target = compose_volumes.resolve(volume, self.environment_dir)
            mounts.append(Mount(source, target, writable=not volume.read_only))
        return mounts

    async def _apply_dockerfile(self) -> None:
        for copy in self._plan.copies:
            await self._copy_from_context(copy)
        if self._plan.skipped:
            kinds = sorted({line.split()[0].upper() for line in self._plan.skipped})
            self.logger.warning(
                f"atoll-local applied only COPY/ADD/WORKDIR/ENV/USER of "
                f"{self.environment_dir / 'Dockerfile'}; {len(self._plan.skipped)} other "
                f"step(s) ({', '.join(kinds)}) are not built: use --env docker for those"
            )

    async def _copy_from_context(self, copy: dockerfile.Copy) -> None:
        context = self.environment_dir.resolve()
        for pattern in copy.sources:
            matches = sorted(glob.glob(os.path.join(context, pattern.lstrip("/"))))
            if not matches:
                raise FileNotFoundError(f"Dockerfile COPY source not found in {context}: {pattern}")
            for match in matches:
                source = Path(match)
                if not source.resolve().is_relative_to(context):
                    raise ValueError(f"Dockerfile COPY source leaves the build context: {pattern}")
                if source.is_dir():
                    await self.upload_dir(source, copy.dest)
                    target = copy.dest
                elif copy.dest_is_dir:
                    target = posixpath.join(copy.dest, source.name)
                    await self.upload_file(source, target)
                else:
                    target = copy.dest
                    await self.upload_file(source, target)
                if copy.chown:
                    owner = self.root.user(copy.chown).host_uid
                    self.root.chown_tree(self._host_path(target), owner)

    def _host_path(self, box_path: str) -> Path:
        """Where a path of the box lives on the host (only used before any exec)."""
        normal = PurePosixPath(posixpath.normpath(box_path))
        return self.root.fs.joinpath(*normal.parts[1:])

    async def stop(self, delete: bool) -> None:
        for token in list(self._active):
            token.cancel()
        if self._root is None:
            return
        self._kill_leftovers()
        try:
            if egress_rules.supported():
                egress_rules.remove(self._root.uids)
        finally:
            self._give_logs_to_host()
            if self._userns is not None:
                self._userns.close()
            if delete:
                self._root.remove()
            else:
                self.logger.info(f"atoll-local kept the trial's files in {self._root.path}")

    def _kill_leftovers(self) -> None:
        """Every run dies with its namespace; this catches anything that did not."""
        uids = self.root.uids
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                status = (entry / "status").read_text()
                line = next(x for x in status.splitlines() if x.startswith("Uid:"))
                if int(line.split()[1]) in uids:
                    os.kill(int(entry.name), signal.SIGKILL)

    async def prepare_logs_for_host(self) -> None:
        """Nothing to do while the trial runs: the host side is root and reads any file.

        Handing the log mounts to the host user mid-trial (as Harbor's docker
        environment does between phases) would take them from the box's root,
        whose later phases (a verifier locking /logs/verifier) need them; they
        are handed over when the trial stops.
        """

    def _give_logs_to_host(self) -> None:
        """Give the host user back what the trial's uids wrote in the log mounts."""
        if self._root is None:
            return
        for mount in self._mounts:
            if mount.get("type", "bind") == "bind" and not mount.get("read_only"):
                self.root.chown_tree(Path(mount["source"]), os.getuid())

    # --- running commands -----------------------------------------------------

    def _box_user(self, user: str | int | None) -> User:
        who = self._resolve_user(user)
        if who is None:
            who = self._plan.user
        return self.root.user(who)

    def _spec(self, user: User, cwd: str, env: dict[str, str], limits: Limits) -> SandboxSpec:
        extra = []
        for mount in self._mounts:
            if mount.get("type", "bind") != "bind":
                raise ValueError(f"atoll-local supports bind mounts only, not {mount['type']!r}")
            extra.append(
                Mount(Path(mount["source"]), mount["target"], writable=not mount.get("read_only"))
            )
        extra += self._volume_mounts
        # Allowlisted boxes share the host's network under the trial's nftables table.
        network = Network.NONE if self._network_disabled else Network.HOST
        return box_spec(
            self.root,
            user,
            cwd=cwd,
            limits=limits,
            user_namespace=self._namespace.path,
            network=network,
            image_env=self._plan.env,
            env=env,
            extra_mounts=extra,
        )

    def _limits(self, timeout_sec: float | None, output_bytes: int) -> Limits:
        return box_limits(
            timeout_sec=timeout_sec,
            memory_mb=self._effective_memory_mb,
            cpus=self._effective_cpus,
            output_bytes=output_bytes,
        )

    async def _run(
        self,
        argv: list[str],
        *,
        user: User,
        cwd: str,
        env: dict[str, str],
        timeout_sec: float | None = None,
        stdin: bytes | None = None,
        output_bytes: int = EXEC_OUTPUT_BYTES,
    ) -> SandboxResult:
        spec = self._spec(user, cwd, env, self._limits(timeout_sec, output_bytes))
        token = CancelToken()
        self._active.add(token)
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(
            _EXECUTOR, lambda: self._backend.run(argv, spec, stdin, cancel=token)
        )
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            token.cancel()
            with contextlib.suppress(Exception):
                await future
            raise
        finally:
            self._active.discard(token)
            token.close()

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        result = await self._run(
            ["bash", "-c", command],
            user=self._box_user(user),
            cwd=cwd or self.workdir,
            env=self._merge_env(env) or {},
            timeout_sec=timeout_sec,
        )
        if result.status is Status.WALL_TIME_LIMIT and timeout_sec:
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        stdout = result.stdout.decode(errors="replace") or None
        stderr = result.stderr.decode(errors="replace") or None
        callback = self._output_callback()
        if callback is not None and stdout:
            await callback(stdout, "stdout")
        code = result.exit_code if result.exit_code is not None else 128 + (result.signal or 9)
        return ExecResult(stdout=stdout, stderr=stderr, return_code=code)

    # --- files ----------------------------------------------------------------

    async def _unpack_in_box(self, data: bytes, target_dir: str) -> None:
        self._writable(target_dir)
        quoted = shlex.quote(target_dir)
        result = await self._run(
            ["sh", "-c", f"mkdir -p {quoted} && tar -x -f - -C {quoted} --no-same-owner"],
            user=self.root.root_user,
            cwd="/",
            env={},
            stdin=data,
            output_bytes=MiB,
        )
        if not result.ok:
            raise RuntimeError(
                f"could not copy into {target_dir}: "
                + result.stderr.decode(errors="replace").strip()
            )

    def _writable(self, box_path: str) -> None:
        try:
            self.root.ensure_top(top_level(box_path))
        except TrialRootError as exc:
            raise ValueError(str(exc)) from None

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = posixpath.normpath(target_path)
        data = transfer.pack(Path(source_path), posixpath.basename(target))
        await self._unpack_in_box(data, posixpath.dirname(target))

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        data = transfer.pack(Path(source_dir), ".")
        await self._unpack_in_box(data, posixpath.normpath(target_dir))

    async def _pack_in_box(self, argv: list[str], what: str) -> bytes:
        result = await self._run(
            argv, user=self.root.root_user, cwd="/", env={}, output_bytes=TRANSFER_BYTES
        )
        if not result.ok:
            raise RuntimeError(
                f"could not read {what} from the environment: "
                + result.stderr.decode(errors="replace").strip()
            )
        return result.stdout

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        data = await self._pack_in_box(["cat", "--", source_path], source_path)
        target = Path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.part")
        tmp.write_bytes(data)
        tmp.replace(target)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        data = await self._pack_in_box(["tar", "-c", "-f", "-", "-C", source_dir, "."], source_dir)
        skipped = transfer.unpack(data, Path(target_dir))
        if skipped:
            self.logger.warning(
                f"atoll-local left out {len(skipped)} entr(ies) of {source_dir} that point "
                f"outside it: {', '.join(skipped[:5])}"
            )
