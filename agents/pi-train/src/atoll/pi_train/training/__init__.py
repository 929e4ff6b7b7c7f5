"""What every training command shares: the run directory, its manifest and lineage, the scoring
service, the managed trainer, the held-out evaluation, the summary and the no-spend preflight."""
