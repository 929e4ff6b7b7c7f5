#!/bin/bash
# Reward 1 when the agent left a Reef receipt (a 32-hex agent record id).
if grep -Eq '^[0-9a-f]{32}$' /app/receipt.txt; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
