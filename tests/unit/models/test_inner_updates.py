"""Titans' and Hope-attention's test-time inner updates at the default settings (stable by
themselves, the safety clip rarely engaged, its rate reported) and Titans' windowed attention
(chunked local attention equal to the masked form)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from arch_options import options_for

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.models import build_model
from tlmsearch.models.common import causal_attention, inner_clip_fraction, masked_window_attention
from tlmsearch.models.titans_spec import TitansOptions, attention_window

# Stated targets for the safety clips at their defaults (Titans 2, Hope 1): fewer than 1% of token
# updates clipped at initialisation on cpu-s (tested here), fewer than 5% after 300 training steps
# (measured, too long for a unit test: bench/README.md "Titans' clip after training").
CLIP_TARGET_AT_INIT = 0.01


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def text_batch(seq_len: int, batch: int) -> torch.Tensor:
    """Real text (pydoc topics, always available), `batch` windows of seq_len + 1 bytes."""
    from tlmsearch.data import gather, prepare, train_starts

    data = prepare(DataConfig(corpus="pydoc"))
    starts = train_starts(data.train.shape[0], seq_len, (1, batch), 0, 0)[0]
    return torch.from_numpy(gather(data.train, starts, seq_len)).long()  # (B, T+1)


# ------------------------------------------------------------------ windowed attention


@pytest.mark.parametrize(
    ("t", "window", "prefix"),
    [(36, 8, 4), (37, 8, 4), (40, 5, 0), (20, 19, 1), (12, 3, 2), (9, 1, 0), (68, 16, 4)],
)
def test_windowed_attention_equals_the_masked_form(t: int, window: int, prefix: int) -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, t, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    fast = causal_attention(q, k, v, window, prefix)
    ref = masked_window_attention(q, k, v, window, prefix)
    torch.testing.assert_close(fast, ref, atol=1e-12, rtol=1e-12)
    w = torch.randn_like(ref)
    g_fast = torch.autograd.grad((fast * w).sum(), (q, k, v))
    g_ref = torch.autograd.grad((ref * w).sum(), (q, k, v))
    for a, b in zip(g_fast, g_ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)


def test_window_defaults_to_a_quarter_of_the_sequence() -> None:
    cfg = preset("cpu-s").model_config("titans")
    assert TitansOptions.of(cfg).window == -1 and attention_window(cfg) == cfg.seq_len // 4
    full = preset("cpu-s").model_config("titans", options={"window": 0})
    assert attention_window(full) == 0


# ------------------------------------------------------------------ inner updates


@pytest.mark.parametrize("arch", ["titans", "hope_attention"])
@pytest.mark.slow
def test_clip_rarely_engages_at_init_on_cpu_s(arch: str) -> None:
    """One training-mode forward of the cpu-s shape on real text: the fraction of token
    updates the safety clip scales down stays below the stated target."""
    cfg = preset("cpu-s").model_config(arch)
    model = build_model(cfg, seed=0).train()
    with torch.no_grad():
        model(text_batch(cfg.seq_len, 4)[:, :-1])
    frac = inner_clip_fraction(model)
    assert frac is not None and frac < CLIP_TARGET_AT_INIT, frac
    assert inner_clip_fraction(model) is None  # read and reset


@pytest.mark.parametrize("arch", ["titans", "hope_attention"])
@pytest.mark.slow
def test_unclipped_inner_updates_stay_finite_at_a_high_learning_rate(arch: str) -> None:
    """The setting in which the previous defaults overflowed without the clip (eight chunks per
    sequence, outer lr 1e-2): at the new defaults the inner updates need no clip."""
    opts = options_for(arch, mem_max_grad_norm=0.0, cms_max_grad_norm=0.0)
    cfg = ModelConfig(arch=arch, d_model=64, n_layers=4, n_heads=2, mlp_widths=(192,) * 4, seq_len=128, options=opts)
    model = build_model(cfg, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    idx = text_batch(cfg.seq_len, 32)
    for step in range(8):
        x = idx[4 * step : 4 * step + 4]
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), x[:, 1:].reshape(-1))
        assert torch.isfinite(loss), step
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_trainer_reports_the_clip_rate() -> None:
    from tlmsearch.training.trainer import train

    cfg = preset("tiny").model_config("titans", options={"mem_chunk": 8})
    result = train(cfg, TrainConfig(steps=2, eval_interval=1, eval_windows=2, batch_size=2), DataConfig(corpus="pydoc"))
    assert [0.0 <= m["inner_clip_frac"] <= 1.0 for m in result.curve] == [True, True]
    plain = train(
        preset("tiny").model_config("transformer"),
        TrainConfig(steps=1, eval_interval=1, eval_windows=2, batch_size=2),
        DataConfig(corpus="pydoc"),
    )
    assert "inner_clip_frac" not in plain.metrics


# ------------------------------------------------------------------ normalised steps vs token-by-token references


def _normalise_and_clip(
    grads: tuple[torch.Tensor, ...], residual: torch.Tensor, max_norm: float
) -> tuple[torch.Tensor, ...]:
    """The normalised-LMS step of one token, then the safety clip: divide the gradient by
    1 + ||∇||² / (4 ||residual||²), then scale it to at most `max_norm` (when > 0)."""
    curv = sum(g.pow(2).sum() for g in grads) / (4 * residual.pow(2).sum())
    grads = tuple(g / (1 + curv) for g in grads)
    if max_norm > 0:
        norm = sum(g.pow(2).sum() for g in grads).sqrt()
        grads = tuple(g * torch.clamp(max_norm / norm, max=1.0) for g in grads)
    return grads


def _titans_reference(q, k, v, theta, eta, alpha, a2, a1, chunk, max_norm):  # type: ignore[no-untyped-def]
    """Token-by-token Titans memory for one head, (T, D) inputs, per-token autograd gradients."""
    w2, w1 = a2, a1
    s2, s1 = torch.zeros_like(a2), torch.zeros_like(a1)
    outs = []
    for start in range(0, q.shape[0], chunk):
        wc2, wc1 = w2, w1  # chunk-start weights: read and differentiate here
        for t in range(start, min(start + chunk, q.shape[0])):
            outs.append(q[t] + F.silu(q[t] @ wc2) @ wc1)
        for t in range(start, min(start + chunk, q.shape[0])):
            residual = k[t] + F.silu(k[t] @ wc2) @ wc1 - v[t]
            grads = torch.autograd.grad(residual.pow(2).sum(), (wc2, wc1), create_graph=True)
            g2, g1 = _normalise_and_clip(grads, residual, max_norm)
            s2, s1 = eta[t] * s2 - theta[t] * g2, eta[t] * s1 - theta[t] * g1
            w2, w1 = (1 - alpha[t]) * w2 + s2, (1 - alpha[t]) * w1 + s1
    return torch.stack(outs)


@pytest.mark.parametrize("max_norm", [0.0, 2.0])
@pytest.mark.parametrize("t", [16, 13])
def test_titans_normalised_step_matches_per_token_autograd(t: int, max_norm: float) -> None:
    from tlmsearch.models.titans import memory_scan

    torch.manual_seed(0)
    b, h, d, f, chunk = 2, 2, 4, 8, 4
    dt = torch.float64
    q, k, v = (torch.randn(b, h, t, d, dtype=dt) for _ in range(3))
    q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    theta = (0.3 * torch.rand(b, h, t, dtype=dt)).requires_grad_()
    eta, alpha = torch.rand(b, h, t, dtype=dt), 0.2 * torch.rand(b, h, t, dtype=dt)
    a2 = torch.randn(h, d, f, dtype=dt, requires_grad=True)
    a1 = (0.5 * torch.randn(h, f, d, dtype=dt)).requires_grad_()
    v.requires_grad_()
    fast, norms = memory_scan(q, k, v, theta, eta.log(), (1 - alpha).log(), a2, a1, chunk, max_norm, True)
    assert (norms is None) == (max_norm == 0)
    if norms is not None:  # the clip engages on some tokens and not on others here
        assert 0 < (norms > max_norm).sum() < norms.numel()
    ref = torch.stack(
        [
            torch.stack(
                [
                    _titans_reference(
                        q[i, j], k[i, j], v[i, j], theta[i, j], eta[i, j], alpha[i, j], a2[j], a1[j], chunk, max_norm
                    )
                    for j in range(h)
                ]
            )
            for i in range(b)
        ]
    )
    torch.testing.assert_close(fast, ref, atol=1e-10, rtol=1e-10)
    w = torch.randn_like(fast)
    g_fast = torch.autograd.grad((fast * w).sum(), (a2, a1, theta, v))
    g_ref = torch.autograd.grad((ref * w).sum(), (a2, a1, theta, v))
    for gf, gr in zip(g_fast, g_ref, strict=True):
        torch.testing.assert_close(gf, gr, atol=1e-9, rtol=1e-9)


def _swiglu(x, wg, wu, wd):  # type: ignore[no-untyped-def]
    return (F.silu(x @ wg) * (x @ wu)) @ wd


@pytest.mark.parametrize("max_norm", [0.0, 2.0])
@pytest.mark.parametrize("t", [12, 10])
def test_hope_normalised_step_matches_autograd_steps(t: int, max_norm: float) -> None:
    from tlmsearch.models.hope_attention import fast_swiglu_scan

    torch.manual_seed(0)
    b, c, f, chunk, lr = 2, 4, 6, 4, torch.tensor(0.1, dtype=torch.float64)
    u, k, v = (torch.randn(b, t, c, dtype=torch.float64) for _ in range(3))
    wg, wu, wd = (torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in ((c, f), (c, f), (f, c)))
    fast, norms = fast_swiglu_scan(u, k, v, wg, wu, wd, lr, chunk, max_norm, True)
    if norms is not None:
        assert 0 < (norms > max_norm).sum() < norms.numel()
    refs = []
    for i in range(b):
        ws = (wg, wu, wd)
        for start in range(0, t, chunk):
            refs.append(_swiglu(u[i, start : start + chunk], *ws))
            total = [torch.zeros_like(w) for w in ws]
            for j in range(start, min(start + chunk, t)):  # token by token
                residual = _swiglu(k[i, j], *ws) - v[i, j]
                grads = torch.autograd.grad(residual.pow(2).sum(), ws, create_graph=True)
                grads = _normalise_and_clip(grads, residual, max_norm)
                total = [a + g for a, g in zip(total, grads, strict=True)]
            ws = tuple(w - lr * g for w, g in zip(ws, total, strict=True))
    ref = torch.cat(refs).view(b, t, c)
    torch.testing.assert_close(fast, ref, atol=1e-10, rtol=1e-10)
    g_fast = torch.autograd.grad(fast.pow(2).sum(), (wg, wu, wd))
    g_ref = torch.autograd.grad(ref.pow(2).sum(), (wg, wu, wd))
    for gf, gr in zip(g_fast, g_ref, strict=True):
        torch.testing.assert_close(gf, gr, atol=1e-9, rtol=1e-9)
