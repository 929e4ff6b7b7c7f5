"""Project Euler with the Pi coding agent: import, evaluate, score, progress, report, transfer.

Raw rollout rows are the source of truth; every number a report prints is
recomputed from them. Answers live only in a store's private part (mode
0600) and never travel into a rollout's container.
"""
