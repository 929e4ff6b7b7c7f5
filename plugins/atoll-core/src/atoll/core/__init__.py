"""atoll.core: the plugin host every atoll plugin builds on.

The package is deliberately light to import: listing plugins or resolving a
short name must not pull in Harbor's job machinery or any backend.
"""

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration, StackUse

__all__ = ["Kind", "Registration", "StackUse", "hookimpl"]

# atoll.core is also the library of shared mechanisms: other distributions may import
# these sub-modules (and, from each, the names in its `__all__`, else the names without
# a leading underscore) and nothing else of atoll.core. The README's "Public face" says
# what each is for; tests/test_public_faces.py holds every distribution to it.
__public_modules__ = (
    "agent_settings",
    "digests",
    "docker_engine",
    "doctor",
    "durable",
    "entry_points",
    "http_abort",
    "environments.box",
    "environments.dockerfile",
    "environments.local",
    "environments.trial_root",
    "executables",
    "hookspecs",
    "lazy",
    "ledger",
    "llm",
    "portable.chat_stream",
    "process_group",
    "processes",
    "records",
    "reef_env",
    "reef_runtime",
    "registry",
    "run_defaults",
    "run_lock",
    "sandbox",
    "sandbox.cgroups",
    "sandbox.conformance",
    "sandbox.fusion",
    "sandbox.owners",
    "sandbox.userns",
    "scoring",
    "settings_files",
    "sizes",
    "stack_use",
    "task_dirs",
    "termination",
    "user_dirs",
)
