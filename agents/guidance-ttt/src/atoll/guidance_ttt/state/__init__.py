"""Everything a run keeps under its state directory: the archive's files, journals, resume state."""
