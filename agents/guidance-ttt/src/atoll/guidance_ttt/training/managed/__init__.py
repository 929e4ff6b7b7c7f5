"""Scripts the managed Python 3.11 environment (tinker, tinker-cookbook) runs for Guidance-TTT."""
