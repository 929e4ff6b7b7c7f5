"""`atoll tinker local` and `tiny-model`: the Tinker-API service on this machine and its test model."""
