"""What `atoll doctor` says about the managed Tinker environment and the local server."""

from __future__ import annotations

from atoll.core.doctor import Finding
from atoll.pi_train import env
from atoll.pi_train.local import server as local_server


def check_tinker_env() -> Finding:
    present = env.installed()
    if present is None:
        return Finding(
            "tinker-env",
            False,
            f"not installed in {env.env_dir()}",
            "`atoll tinker install` (`atoll tinker local up` and `atoll pi train` also do on first use)",
        )
    return Finding("tinker-env", True, f"Python {env.PYTHON_VERSION} at {present.root}", "")


def check_tinker_local() -> Finding:
    """The local SkyRL tx server: none is fine (it is optional); one that does not answer is not.

    A server that runs but does not answer holds its port and memory for
    nothing, so it is a warning naming the command that stops it.
    """
    state = local_server.status()
    if state is None:
        return Finding(
            "tinker-local", True, "no local server (`atoll tinker local up` starts one)", ""
        )
    where = f"{state.base_url} (pid {state.pid}, base model {state.base_model})"
    if not local_server.answers(state.base_url):
        return Finding(
            "tinker-local",
            False,
            f"{where} runs but does not answer; its log: {state.log}",
            "`atoll tinker local down`, then `atoll tinker local up`",
            warning=True,
        )
    return Finding("tinker-local", True, f"{where} answers", "")
