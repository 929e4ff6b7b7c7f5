"""`atoll pi train shell`: Pi-shaped file/shell RL, its workspace families, episodes and reward."""
