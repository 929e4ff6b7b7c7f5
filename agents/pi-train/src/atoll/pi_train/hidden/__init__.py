"""`atoll pi train hidden` and `check`: the hidden-variant families, their references, the checker
and the training run."""
