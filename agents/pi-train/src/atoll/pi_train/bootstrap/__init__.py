"""The tool-protocol bootstrap: a synthetic supervised corpus for Pi's tools and its trainer.

`corpus` writes the conversations (deterministic from a seed), `guard` keeps
every Euler answer and statement out of them, `build` writes a corpus to disk,
`trainer` renders it and trains on it with tinker-cookbook's supervised loop in
the managed environment, and `cli` is `atoll pi bootstrap build|render|train`.
"""
