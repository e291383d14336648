"""The trainer's optimizer step for M members stacked along dimension 0: per-member gradient
clipping, then AdamW with each member's own learning rate.

Every member gets exactly the update the trainer gives a model alone (`trainer.make_optimizer`:
torch's AdamW, decoupled weight decay on the matrices only, `lr_scale` multipliers of the
width parametrisation; `clip_grad_norm_` on the member's whole gradient), computed for all
members at once. The arithmetic is torch's AdamW written out, with the learning rate a
tensor of one value per member:

    p <- p (1 - lr wd);  m <- lerp(m, g, 1 - b1);  v <- b2 v + (1 - b2) g²
    p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
"""

from __future__ import annotations

import math

import torch


def member_view(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A per-member vector (M,) shaped to broadcast over `like` (M, ...)."""
    return x.view(-1, *([1] * (like.dim() - 1)))


def clip_per_member(grads: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale each member's gradient (its slices of `grads`, each (M, ...)) to total 2-norm at most
    `max_norm`, as `torch.nn.utils.clip_grad_norm_` does for one model; returns the norms (M,)
    before clipping."""
    norms = torch.stack([torch.linalg.vector_norm(g.reshape(g.shape[0], -1), 2, dim=1) for g in grads])  # (P, M)
    total = torch.linalg.vector_norm(norms, 2, dim=0)  # (M,)
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)  # (M,)
    for g in grads:
        g.mul_(member_view(coef.to(g.dtype), g))
    return total


class PackedAdamW:
    """AdamW over stacked parameters {name: (M, ...)}: `weight_decay` {name: decay} and
    `lr_scale` {name: (M,) multiplier} per parameter (absent: 1 for every member)."""

    def __init__(
        self,
        params: dict[str, torch.Tensor],
        weight_decay: dict[str, float],
        lr_scale: dict[str, torch.Tensor],
        betas: tuple[float, float],
        eps: float,
    ) -> None:
        self.weight_decay, self.lr_scale = weight_decay, lr_scale
        self.betas, self.eps = betas, eps
        self.exp_avg = {n: torch.zeros_like(p) for n, p in params.items()}
        self.exp_avg_sq = {n: torch.zeros_like(p) for n, p in params.items()}
        self.steps = 0

    @torch.no_grad()
    def step(self, params: dict[str, torch.Tensor], grads: dict[str, torch.Tensor], lr: float) -> None:
        """One update of every parameter in place with its gradient, at schedule value `lr`."""
        self.steps += 1
        b1, b2 = self.betas
        bias1, bias2_sqrt = 1 - b1**self.steps, math.sqrt(1 - b2**self.steps)
        for name, p in params.items():
            g, m, v = grads[name], self.exp_avg[name], self.exp_avg_sq[name]
            wd = self.weight_decay[name]
            scale = self.lr_scale.get(name)
            rate: float | torch.Tensor = lr if scale is None else member_view(lr * scale.to(p.dtype), p)
            if wd:
                p.mul_(1 - rate * wd)
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / bias2_sqrt).add_(self.eps)
            if isinstance(rate, float):
                p.addcdiv_(m, denom, value=-rate / bias1)
            else:
                p.sub_(rate / bias1 * m / denom)

    def select(self, keep: torch.Tensor) -> None:
        """Keep the members at indices `keep` (the others left the pack)."""
        for state in (self.exp_avg, self.exp_avg_sq):
            for n in state:
                state[n] = state[n][keep]
        self.lr_scale = {n: s[keep] for n, s in self.lr_scale.items()}
