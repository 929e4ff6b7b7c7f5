"""Pi training on Tinker: hidden-variant tool RL, answer-only GRPO and a local Tinker-API service."""
