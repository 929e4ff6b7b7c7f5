"""What `atoll doctor` says about Node.js, the pinned Pi and the rollout image."""

from __future__ import annotations

from atoll.core.doctor import Finding
from atoll.pi import install


def check_node() -> Finding:
    try:
        node = install.find_node()
    except install.PiUnavailable as exc:
        return Finding("node", False, str(exc), f"install Node.js >= {install.MIN_NODE_MAJOR}")
    return Finding("node", True, f"{node.version} at {node.path}", "")


def check_pi() -> Finding:
    try:
        pi = install.installed()
    except install.PiUnavailable as exc:
        return Finding(
            "pi", False, f"cannot run Pi: {exc}", f"install Node.js >= {install.MIN_NODE_MAJOR}"
        )
    if pi is None:
        return Finding(
            "pi",
            False,
            f"Pi {install.PI_VERSION} is not installed in {install.install_dir()}",
            "`atoll pi install` (the agent also installs it on first use)",
        )
    return Finding("pi", True, f"Pi {pi.version} at {pi.root}", "")


def check_rollout_image() -> Finding:
    from atoll.pi import container, image

    try:
        client = container.connect()
    except container.ContainerError as exc:
        return Finding(
            "pi-image", False, str(exc), "`atoll docker up`, then `atoll pi image build`"
        )
    try:
        found = image.describe(client)
    except container.ContainerError:
        return Finding("pi-image", False, f"{image.TAG} is missing", "`atoll pi image build`")
    finally:
        client.close()
    runtimes = ", ".join(f"{image.NAMES[k]} {v}" for k, v in sorted(found.runtimes.items()))
    lacks = ", ".join(image.NAMES.get(k, k) for k in found.lacks) or "nothing"
    return Finding("pi-image", True, f"{found.image_id[:19]}: {runtimes}; lacks {lacks}", "")
