"""Code that runs inside the managed Python 3.11 environment (tinker, tinker-cookbook, SkyRL tx).

Nothing here is imported by the Python 3.12 side: these modules are run as
scripts with the managed interpreter, and they import only the standard
library, the managed environment's packages and each other. The one
exception, `openai_surface`, is standard library only and valid on both
interpreters, so its tests run on the 3.12 side.
"""
