"""The machines a run talks to: guidance through Reef, the executor, the scorer, Reef's trainer."""
