"""Many trials of one architecture and shape trained side by side in one process (issue 29):
members differ in seed and MLP width profile; each keeps its own data order, initialisation,
optimizer state, clipping, evaluation and result (`engine`)."""

from __future__ import annotations

from tlmsearch.pack.engine import Member, MemberOutcome, Pack, check_members, train_pack

__all__ = ["Member", "MemberOutcome", "Pack", "check_members", "train_pack"]
