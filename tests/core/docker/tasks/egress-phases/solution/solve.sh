#!/bin/bash
set -euo pipefail
python3 /usr/local/bin/probe.py agent > /logs/agent/probe.txt
