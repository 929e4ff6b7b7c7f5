#!/bin/bash
# Reward 1 only if the compiled program exists and printed the right sum.
reward=1
[ -x /app/sum ] || { echo "no compiled program"; reward=0; }
[ "$(cat /app/answer.txt 2>/dev/null)" = "189" ] || { echo "wrong answer"; reward=0; }
[ "$(python3 -c 'print(3+14+15+92+65)')" = "189" ] || { echo "python3 missing"; reward=0; }
echo $reward > /logs/verifier/reward.txt
