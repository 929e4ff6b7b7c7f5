#!/usr/bin/env bash
# Strict types for the managed/ scripts (pi-train's and Guidance-TTT's), against the managed Python 3.11
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
config="$PWD/agents/pi-train/mypy-managed.ini"
portable="$PWD/plugins/atoll-core/src/atoll/core/portable"
# pi-train's managed scripts, and Guidance-TTT's Tinker policy server, which runs there too.
for managed in agents/pi-train/src/atoll/pi_train/managed \
    agents/guidance-ttt/src/atoll/guidance_ttt/training/managed; do
    modules=()
    for script in "$managed"/*.py; do
        name="$(basename "$script" .py)"
        [[ "$name" == __init__ ]] || modules+=(-m "$name")
    done
    # atoll-core's portable modules are on the managed scripts' PYTHONPATH (atoll.pi_train.env).
    (cd "$managed" && MYPYPATH=.:..:"$portable" uv run mypy --config-file "$config" --python-executable "$python" "${modules[@]}")
done
