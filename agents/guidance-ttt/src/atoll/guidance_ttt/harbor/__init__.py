"""What a Harbor trial gets of a run: its outputs and score plot, and a run as a reef-eval episode."""
