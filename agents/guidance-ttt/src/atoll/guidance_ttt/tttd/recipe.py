"""Reef's tttd recipe, bound to atoll's objective.

The recipe's processor (the exact-step barrier: a step trains only when
every G×R slot is reported, mixed releases are discarded, constant groups
dropped) stays Reef's own, from the Reef source checkout that the stack puts
on the path (`REEF_HOME`). Only the objective changes: this recipe names
`TttdObjective`, so the loss family, and with it the worker hooks Slime
resolves, are the ones this package ships and tests.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from atoll.guidance_ttt.tttd.names import LOSS_FAMILY
from atoll.guidance_ttt.tttd.objective import TttdObjective

try:
    from recipes.tttd.recipe import TTTDRecipe
except ImportError as exc:  # pragma: no cover - the message is the behaviour
    raise ImportError(
        "atoll's tttd recipe extends Reef's tttd recipe from a Reef source checkout: put the "
        f"checkout on PYTHONPATH (the stack does, from REEF_HOME); importing it failed: {exc}"
    ) from exc


@dataclass(frozen=True, kw_only=True)
class TttdRecipe(TTTDRecipe):  # type: ignore[misc]  # the checkout is not installed here
    """Reef's tttd recipe whose training objective is `atoll_tttd`."""

    @classmethod
    def training_spec(cls):  # type: ignore[no-untyped-def]  # Reef's type, from the checkout
        spec = super().training_spec()
        if "objective" not in {field.name for field in fields(spec)}:
            raise TypeError(
                "this Reef checkout's tttd recipe predates training objectives (reef-infra 0.1.3); "
                "use a checkout that matches the installed reef-infra"
            )
        return replace(spec, objective=TttdObjective.name)


__all__ = ["LOSS_FAMILY", "TttdRecipe"]
