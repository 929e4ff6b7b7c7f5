#!/bin/sh
# Install the seed candidate as the task's answer (Harbor's oracle agent runs this).
set -eu
mkdir -p /workspace
install -m 0644 "$(dirname "$0")/solution.py" /workspace/solution.py
