"""The pi-train tests share the session's tiny model and local Tinker server (tests/conftest.py)."""
