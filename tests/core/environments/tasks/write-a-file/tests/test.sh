#!/bin/bash
# Reward 1 only if the answer is right and the box is what atoll-local promises.
reward=1
[ "$(cat /app/answer.txt)" = "BUBBLEWRAP" ] || { echo "wrong answer"; reward=0; }
# Root of the box may be id 0 of its user namespace, never uid 0 of the host.
host_uid=$(awk -v u="$(id -u)" '$1 <= u && u < $1 + $3 { print $2 + u - $1 }' /proc/self/uid_map)
[ -n "$host_uid" ] && [ "$host_uid" != 0 ] || { echo "running as real root"; reward=0; }
[ ! -e /root/.bashrc ] || [ -O /root ] || { echo "host /root visible"; reward=0; }
[ -d /logs/agent ] && [ -d /tests ] && [ -d /solution ] || { echo "missing dirs"; reward=0; }
echo $reward > /logs/verifier/reward.txt
