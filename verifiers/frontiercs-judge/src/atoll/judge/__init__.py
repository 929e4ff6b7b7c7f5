"""atoll.judge: the FrontierCS judge, as a client, an embedded server and a Harbor verifier.

The verifier `frontiercs-judge` (`atoll.judge.verifier`), the job plugin that
starts the embedded judge for a job (`atoll.judge.job_plugin`), `atoll judge`
and `atoll task frontiercs`, and the packaged `polyomino_packing` task.
Importing this package loads nothing else.
"""
