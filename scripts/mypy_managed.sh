#!/usr/bin/env bash
# Strict types for pi-train's managed/ scripts, against the managed Python 3.11
# environment they run in (`uv run atoll tinker install` builds it): the
# workspace's `uv run mypy` checks every other module of src and leaves these out,
# because tinker, tinker-cookbook and SkyRL tx are installed only there.
set -euo pipefail
cd "$(dirname "$0")/.."
python="$(uv run python -c 'from atoll.pi_train import env
found = env.installed()
if found is None:
    raise SystemExit("the managed Tinker environment is missing: run `uv run atoll tinker install`")
print(found.python)')"
managed=agents/pi-train/src/atoll/pi_train/managed
modules=()
for script in "$managed"/*.py; do
    name="$(basename "$script" .py)"
    [[ "$name" == __init__ ]] || modules+=(-m "$name")
done
cd "$managed"
MYPYPATH=. exec uv run mypy --config-file ../../../../mypy-managed.ini --python-executable "$python" "${modules[@]}"
