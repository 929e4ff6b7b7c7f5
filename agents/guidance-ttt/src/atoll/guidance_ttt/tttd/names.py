"""Where TTT-Discover's objective lives, as Reef and Slime name it.

Plain strings, importable without Reef or torch: the stack renders them into
serve.yaml, and the method package registers its parts under them, so the
file and the code cannot name two different things (a test imports every one).
"""

from __future__ import annotations

#: The objective's and the Slime loss family's name (Reef's own cookbook calls its copy `tttd`).
LOSS_FAMILY = "atoll_tttd"
PACKAGE = "atoll.guidance_ttt.tttd"
RECIPE = f"{PACKAGE}.recipe:TttdRecipe"
OBJECTIVE = f"{PACKAGE}.objective:TttdObjective"
SLIME_SPEC = f"{PACKAGE}.slime:TttdAlgorithm"
LOSS_HOOK = f"{PACKAGE}.slime.objective.tttd_loss"
ADVANTAGE_HOOK = f"{PACKAGE}.slime.objective.tttd_advantages"
