"""A cross-architecture study read from its files: its cost, progress, report and README table."""
