#!/bin/bash
# Install the seed candidate (a single-row packer) as the task's answer.
set -euo pipefail
mkdir -p /workspace
install -m 0644 "$(dirname "$0")/solution.cpp" /workspace/solution.cpp
