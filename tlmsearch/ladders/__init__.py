"""Ladders: the same profiles at several (model size x tokens per parameter) points, and how
their gain over uniform and over cosine moves with training compute.

Pure analysis lives here (`trend`: the weighted fit with its intervals and extrapolation;
`simulate`: ladders with a known answer); the training is `tlmsearch.tuning.ladder`'s. Nothing
is imported at package import: numpy loads with the module that needs it. (The package is
`ladders`, plural: `tlmsearch.ladder` is the public function that runs one.)
"""
