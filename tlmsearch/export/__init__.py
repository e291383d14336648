"""Export of a run's per-layer width schedule to training-config formats."""
