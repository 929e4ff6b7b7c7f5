#!/bin/bash
# Reward 1 if the program and its output are in the trial's working directory.
reward=1
[ "$(cat /app/answer.txt 2>/dev/null)" = "42" ] || { echo "wrong or missing answer.txt"; reward=0; }
[ -f /app/solve.py ] || { echo "no solve.py"; reward=0; }
echo $reward > /logs/verifier/reward.txt
