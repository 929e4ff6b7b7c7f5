#!/bin/sh
# Grade /workspace/solution.py with the task's isolated grader (tests/grader.py, standard
# library only). It checks the task's own generator, scorer and validator first, locks
# /tests, /solution and /logs/verifier, runs the program once per instance as an unused
# unprivileged uid, and writes reward.txt, reward.json and scores.json to /logs/verifier.
# A failed self-check writes no reward and exits non-zero: an error, never a score.
set -eu
exec python3 -I /tests/grader.py grade --tests /tests --submission /workspace/solution.py \
    --out /logs/verifier --lock /solution --lock /logs/verifier
