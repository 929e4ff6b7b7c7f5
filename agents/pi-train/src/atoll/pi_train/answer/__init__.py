"""`atoll pi train answer`: answer-only GRPO on the Euler store, with replay from a curriculum."""
