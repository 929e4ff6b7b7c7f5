"""Code that runs inside the managed Python 3.11 environment (tinker, tinker-cookbook, SkyRL tx).

Nothing here is imported by the Python 3.12 side: these modules are run as
scripts with the managed interpreter, and they import only the standard
library, the managed environment's packages and each other. The two
exceptions are standard library only and valid on both interpreters:
`pass_at_k`, whose metric names the held-out records read
(atoll.pi_train.training.held_out), and `openai_surface`, whose tests run on
the 3.12 side.
"""
