#!/bin/sh
# Verify /workspace/solution.py: tests/verify.py runs it once in isolation (tests/grader.py's
# Sandbox, under the limits in tests/problem.json), recomputes the objective from the
# construction it prints, and writes /logs/verifier/result.json and then reward.json:
# {"reward": R, "raw_score": objective} for a valid construction, {"reward": 0.0} otherwise.
# A verifier that cannot verify writes no reward and exits non-zero: an error, never a score.
set -eu
exec python3 -I /tests/verify.py --tests /tests --submission /workspace/solution.py \
    --out /logs/verifier --lock /solution
