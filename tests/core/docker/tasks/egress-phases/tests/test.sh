#!/bin/bash
# Reward 1 only if the agent phase reached the listener and this phase cannot.
python3 /usr/local/bin/probe.py verifier > /logs/verifier/probe.txt
reward=1
grep -q '^reached' /logs/agent/probe.txt || { echo "agent phase did not reach the listener"; reward=0; }
grep -q '^blocked' /logs/verifier/probe.txt || { echo "verifier phase was not blocked"; reward=0; }
echo $reward > /logs/verifier/reward.txt
