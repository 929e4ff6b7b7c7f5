#!/bin/bash
# The agent's phase has the public network: the listener on 127.0.0.2 answers.
. /solution/ports.env
if (exec 3<>"/dev/tcp/127.0.0.2/$OTHER_PORT") 2>/dev/null; then
    echo reached > /app/agent.txt
else
    echo blocked > /app/agent.txt
fi
