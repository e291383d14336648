"""Training: the short-trial trainer, hardware facts, and packed training of many members."""
