"""Random MLP shapes the joint-budget property tests draw: uniform, a cosine taper of a random
start (end = 2 - start), or free log-normal widths, one third each."""

from __future__ import annotations

import math
import random

from tlmsearch.profiles import relative_widths


def random_shape(rng: random.Random, layers: int) -> list[float]:
    kind = rng.randrange(3)
    if kind == 0:
        return [1.0] * layers
    if kind == 1:
        start = rng.uniform(0.2, 1.8)
        return list(relative_widths("cosine", layers, start=start, end=2 - start))
    return [math.exp(rng.uniform(-1.5, 1.5)) for _ in range(layers)]
