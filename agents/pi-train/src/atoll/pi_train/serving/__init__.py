"""`atoll tinker serve`: a Tinker model or checkpoint behind OpenAI chat completions."""
