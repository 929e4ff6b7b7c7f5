"""The search over programs: the PUCT archive, its nodes, the seed, one step, and the run's steps."""
