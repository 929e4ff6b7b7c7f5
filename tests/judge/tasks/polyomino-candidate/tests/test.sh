#!/bin/bash
# Unused: the frontiercs-judge verifier scores this task without a test script.
exit 1
