"""atoll.stack: Reef (with Ray, Slime/Megatron and SGLang when training) for a Harbor job.

The `reef-stack` Harbor job plugin (`atoll.stack.job_plugin`) and
`atoll stack render|up|status|down`. Importing this package loads nothing else.
"""
