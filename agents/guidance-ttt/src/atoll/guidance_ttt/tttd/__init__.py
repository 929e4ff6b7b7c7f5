"""TTT-Discover's training objective, packaged the way Reef's loss families are.

Reef's own `tttd` recipe is source-only (its cookbook is not in the
reef-infra wheel), so a stack built from wheels could name an objective that
does not exist where the trainer runs. This package is the method as atoll
ships it:

- `objective`: the backend-neutral `TrainingObjective` (one entropic
  adaptive-β leave-one-out advantage per trajectory, from
  `atoll.guidance_ttt.training.advantage`, the arithmetic the Tinker path
  uses too);
- `slime`: the Slime loss family (`TttdAlgorithm`, no torch) and its worker
  hooks (`slime.objective`: the sum-reduced importance-sampling loss and the
  KL-to-base advantage shaping, in torch);
- `recipe`: Reef's tttd recipe (its exact-step barrier) bound to this
  objective.

The package itself imports nothing, so `names` (the dotted paths the stack
renders) reads without Reef. Importing `objective` registers the objective
and the loss family's reference with Reef; it needs reef-infra
(`atoll-guidance-ttt[reef]`). The Slime side is imported by Reef's training
driver and workers only.
"""
