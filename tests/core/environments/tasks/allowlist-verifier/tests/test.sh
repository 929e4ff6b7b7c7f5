#!/bin/bash
# The verifier runs under allowed_hosts = ["127.0.0.1"]: it reaches the
# listener there and is refused, at once, by the one on 127.0.0.2.
. /tests/ports.env
reward=1
[ "$(cat /app/agent.txt)" = reached ] || { echo "the agent phase was not public"; reward=0; }
(exec 3<>"/dev/tcp/127.0.0.1/$ALLOWED_PORT") || { echo "allowed listener not reached"; reward=0; }
if timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.2/$OTHER_PORT" 2>/dev/null; then
    echo "listener outside the allowlist reached"; reward=0
fi
echo $reward > /logs/verifier/reward.txt
