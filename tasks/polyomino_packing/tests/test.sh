#!/bin/bash
# Re-score /workspace/solution.cpp with the FrontierCS judge, reached through
# its unix socket at /run/frontiercs-judge/judge.sock (the verifier has no
# network), and write /logs/verifier/reward.json
# ({"reward": <judge score>, "raw_score": <unbounded score>}) plus the judge's
# full answer in /logs/verifier/judge-result.json. If the judge cannot be
# reached, nothing is written and the script fails: that is never a score.
set -euo pipefail
exec python3 "$(dirname "$0")/score.py"
