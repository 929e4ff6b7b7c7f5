"""Harbor environments that atoll adds (`atoll-local`: trials under bubblewrap)."""
