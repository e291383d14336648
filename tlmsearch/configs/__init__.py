"""The user's intent (run, search, study, verify, compare configs, presets) and its resolution into trial specs."""
