"""The run explorer: one self-contained HTML page of what a run's search found (`atoll guidance
explore`)."""
