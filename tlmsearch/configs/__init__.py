"""Frozen configs (base, run, search, study), presets, their checks, resolution of a search's intent."""
