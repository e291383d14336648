"""Option values for tests that build several architecture families from one set of settings.

Each family owns its options (`ArchSpec.options`, e.g. `TitansOptions`) and refuses another
family's, so a test that means "small memory chunks wherever there is a memory" keeps, for each
family, only the fields that family's options have (`options_for`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tlmsearch.core.base import options_class

# several memory chunks in a 32-token sequence: Titans' memory and Hope's fast CMS level
SMALL_CHUNKS: dict[str, Any] = {"mem_chunk": 8, "cms_periods": (8, 0)}


def options_for(arch: str, **fields: Any) -> dict[str, Any]:
    """The entries of `fields` that are options of `arch` (a mapping `ModelConfig` reads as them)."""
    names = {f.name for f in dataclasses.fields(options_class(arch))}
    return {k: v for k, v in fields.items() if k in names}


def small_chunks(arch: str, **more: Any) -> dict[str, Any]:
    """`SMALL_CHUNKS` (and `more`) as options of `arch`."""
    return options_for(arch, **SMALL_CHUNKS, **more)
