"""atoll.frontiersmith: closed programming problems turned into graded optimization tasks.

The `frontiersmith` emitter (`atoll emit frontiersmith`, `atoll.frontiersmith.cli`),
task bundles (`atoll.frontiersmith.bundle`) and the packaged
`frontiersmith-example` task. Importing this package loads nothing else.
"""
