"""The frozen transfer evaluation: four non-Euler file tasks, manifests and comparisons."""
