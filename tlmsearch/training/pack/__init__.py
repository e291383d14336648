"""Many trials of one architecture and shape trained side by side in one process (issue 29):
members differ in seed and MLP width profile; each keeps its own data order, initialisation,
optimizer state, clipping, evaluation and result (`engine`). When to pack: `auto` (pure, no
torch: the engine's names load on first use, so `tlmsearch.training.pack.auto` stays light)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tlmsearch.training.pack.engine import Member, MemberOutcome, Pack, check_members, train_pack

__all__ = ["Member", "MemberOutcome", "Pack", "check_members", "train_pack"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tlmsearch.training.pack import engine  # lazy: heavy (torch)

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
