"""task.toml is checked against the installed Harbor's own task model before it is written."""

from __future__ import annotations

from atoll.frontiersmith.bundle.spec import BundleError


def check_harbor_schema(text: str) -> None:
    """BundleError unless Harbor's TaskConfig accepts `text` as a task.toml."""
    from harbor.models.task.config import TaskConfig
    from pydantic import ValidationError

    try:
        TaskConfig.model_validate_toml(text)
    except (ValidationError, ValueError) as exc:
        first = str(exc).strip().splitlines()
        raise BundleError(f"task.toml is not valid for Harbor: {' '.join(first[:3])}") from None
