#!/bin/bash
set -e
tr '[:lower:]' '[:upper:]' < /app/seed.txt > /app/answer.txt
echo "solved as $(id -un) with GREETING=$GREETING"
