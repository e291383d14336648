"""Tests shared by the four architecture families (one class parametrized over all of them),
plus family-specific checks (Titans' and Hope's chunked inner updates against per-token
autograd references). Everything uses the `tiny` preset (d 32, 2 layers, seq 32)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from arch_options import options_for, small_chunks

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ARCHITECTURE_NAMES, ModelConfig, options_class
from tlmsearch.errors import ConfigError
from tlmsearch.models import ARCHITECTURES, build_model, count_params, flops_per_token, mlp_hidden_sizes
from tlmsearch.models.hope_attention import fast_swiglu_scan
from tlmsearch.models.titans import memory_scan

TINY = preset("tiny")
WIDTHS = (96, 32)  # a non-uniform profile of the tiny budget (2 x 64)


def tiny(arch: str, widths: tuple[int, ...] = WIDTHS, **overrides: object) -> ModelConfig:
    return TINY.model_config(arch, widths, **overrides)


def batch(cfg: ModelConfig, b: int = 2, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, cfg.vocab_size, (b, cfg.seq_len), generator=g)


def lm_loss(model: torch.nn.Module, idx: torch.Tensor) -> torch.Tensor:
    logits = model(idx[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), idx[:, 1:].reshape(-1))


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def test_registry_has_exactly_the_families() -> None:
    assert set(ARCHITECTURES) == set(ARCHITECTURE_NAMES)


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
class TestFamily:
    def test_shape_finite_loss_and_grads_reach_every_parameter(self, arch: str) -> None:
        cfg = tiny(arch, options=small_chunks(arch))
        model = build_model(cfg, seed=0)
        idx = batch(cfg)
        assert model(idx).shape == (2, cfg.seq_len, cfg.vocab_size)
        loss = lm_loss(model, idx)
        assert torch.isfinite(loss)
        loss.backward()
        for name, p in model.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, name

    @pytest.mark.parametrize("small", [False, True], ids=["default", "chunk8"])
    def test_causality(self, arch: str, small: bool) -> None:
        cfg = tiny(arch, options=small_chunks(arch) if small else {})
        model = build_model(cfg, seed=0).eval()
        idx = batch(cfg, b=1)
        with torch.no_grad():
            base = model(idx)
            # chunk edges: titans' chunks start at x~ positions 0, 8, 16 (tokens 4, 12, 20 with
            # 4 persistent tokens); hope's fast level at tokens 8, 16, 24
            for j in (0, 3, 4, 7, 8, 9, 11, 12, 15, 16, 20, 24, 31):
                changed = idx.clone()
                changed[0, j] = (changed[0, j] + 1) % cfg.vocab_size
                out = model(changed)
                torch.testing.assert_close(out[:, :j], base[:, :j], atol=1e-5, rtol=0)
                assert (out[:, j] - base[:, j]).abs().max() > 1e-4  # the test can see a change

    def test_param_count_and_widths(self, arch: str) -> None:
        for widths in (WIDTHS, (40, 88), (64, 64)):
            cfg = tiny(arch, widths)
            model = build_model(cfg)
            counts = count_params(cfg)
            assert counts.total == sum(p.numel() for p in model.parameters())
            assert counts.mlp == 3 * cfg.d_model * sum(widths)
            assert counts.non_embedding == counts.total - cfg.vocab_size * cfg.d_model
            assert mlp_hidden_sizes(model) == widths
        totals = {count_params(tiny(arch, w)).total for w in (WIDTHS, (40, 88), (64, 64))}
        assert len(totals) == 1  # every profile of a budget has the same size
        flops = {flops_per_token(tiny(arch, w)) for w in (WIDTHS, (40, 88), (64, 64))}
        assert len(flops) == 1 and flops.pop() > 6 * counts.non_embedding

    def test_untied_embeddings_are_counted(self, arch: str) -> None:
        cfg = tiny(arch, tie_embeddings=False)
        model = build_model(cfg)
        assert count_params(cfg).total == sum(p.numel() for p in model.parameters())
        assert count_params(cfg).embedding == 2 * cfg.vocab_size * cfg.d_model

    def test_same_seed_same_weights_and_loss(self, arch: str) -> None:
        cfg = tiny(arch)
        a, b = build_model(cfg, seed=3), build_model(cfg, seed=3)
        for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
            assert na == nb and torch.equal(pa, pb), na
        idx = batch(cfg)
        assert torch.equal(lm_loss(a, idx), lm_loss(b, idx))
        c = build_model(cfg, seed=4)
        assert not torch.equal(a.embed.weight, c.embed.weight)

    def test_overfits_a_fixed_batch(self, arch: str) -> None:
        cfg = tiny(arch, options=small_chunks(arch))
        model = build_model(cfg, seed=0)
        idx = batch(cfg, b=4)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        first = lm_loss(model, idx).item()
        for _ in range(40):
            opt.zero_grad()
            loss = lm_loss(model, idx)
            loss.backward()
            opt.step()
        assert loss.item() < 0.5 * first


@pytest.mark.parametrize("arch", ["titans", "hope_attention"])
@pytest.mark.slow
def test_test_time_learning_stays_finite_over_many_chunks(arch: str, clip: float = 1.0) -> None:
    """Eight chunks per sequence and a high outer learning rate: the inner updates must not
    diverge (without the per-token gradient clipping they overflow here)."""
    opts = options_for(arch, mem_max_grad_norm=clip, cms_max_grad_norm=clip)
    cfg = ModelConfig(arch=arch, d_model=64, n_layers=4, n_heads=2, mlp_widths=(192,) * 4, seq_len=128, options=opts)
    model = build_model(cfg, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(8):
        loss = lm_loss(model, batch(cfg, b=4, seed=step))
        assert torch.isfinite(loss), step
        opt.zero_grad()
        loss.backward()
        opt.step()


# ------------------------------------------------------------------ family options and counts


@pytest.mark.parametrize(
    ("arch", "options"),
    [
        ("gated_attention", {"gate": "headwise"}),
        ("titans", {"titans_variant": "mal", "window": 8}),
        ("titans", {"mem_heads": 1, "mem_expansion": 3, "n_persistent": 0}),
        ("hope_attention", {"cms_levels": 3, "cms_periods": (4, 16, 0), "cms_shares": (0.2, 0.3, 0.5)}),
        ("hope_attention", {"cms_levels": 1, "cms_periods": (8,)}),
    ],
)
def test_options_variants(arch: str, options: dict[str, object]) -> None:
    cfg = tiny(arch, options=options)
    model = build_model(cfg, seed=0)
    assert count_params(cfg).total == sum(p.numel() for p in model.parameters())
    assert mlp_hidden_sizes(model) == WIDTHS
    loss = lm_loss(model, batch(cfg))
    loss.backward()
    assert torch.isfinite(loss)
    assert all(p.grad is not None for p in model.parameters())


def test_titans_window_is_causal_and_local() -> None:
    cfg = tiny("titans", options={"window": 4, "n_persistent": 0, "mem_chunk": 64})
    model = build_model(cfg, seed=0).eval()
    block = model.blocks[0]
    x = torch.randn(1, cfg.seq_len, cfg.d_model)
    rope = model.rope(cfg.seq_len)
    with torch.no_grad():
        y = block.attend(x, rope)
        x2 = x.clone()
        x2[0, 5] += 1.0
        y2 = block.attend(x2, rope)
    changed = (y2 - y).abs().amax(-1)[0] > 1e-6
    assert changed.nonzero().flatten().tolist() == [5, 6, 7, 8]


def test_titans_window_keeps_persistent_tokens_visible() -> None:
    from tlmsearch.models.common import causal_attention

    q, k, v = (torch.randn(1, 1, 12, 4) for _ in range(3))
    base = causal_attention(q, k, v, window=3, prefix=2)
    for j, seen_by in ((0, range(12)), (1, range(1, 12)), (5, range(5, 8))):
        v2 = v.clone()
        v2[0, 0, j] += 1.0
        changed = (causal_attention(q, k, v2, window=3, prefix=2) - base).abs().amax(-1)[0, 0] > 1e-6
        assert changed.nonzero().flatten().tolist() == list(seen_by)


@pytest.mark.parametrize("arch", ["titans", "hope_attention"])
def test_recomputed_scan_gives_the_same_loss_and_grads(arch: str) -> None:
    grads = []
    for mode in ("never", "always"):
        cfg = tiny(arch, options=small_chunks(arch, recompute_memory=mode))
        model = build_model(cfg, seed=0)
        loss = lm_loss(model, batch(cfg))
        loss.backward()
        grads.append([loss.detach()] + [p.grad for p in model.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("gate", ["elementwise", "headwise"])
def test_gate_scales_each_heads_attention_output_before_w_o(gate: str) -> None:
    """With zero gate logits, sigmoid(0) = 1/2: gated attention is half the plain attention
    with the same q, k, v and W_o weights."""
    from tlmsearch.models.common import Attention

    cfg = tiny("gated_attention", options={"gate": gate})
    model = build_model(cfg, seed=0)
    gated = model.blocks[0].attn
    plain = Attention(tiny("transformer"), 0)
    c = cfg.d_model
    with torch.no_grad():
        plain.w_qkv.weight.copy_(gated.w_qkvg.weight[: 3 * c])
        plain.w_o.weight.copy_(gated.w_o.weight)
        x = torch.randn(2, cfg.seq_len, c)
        rope = model.rope(cfg.seq_len)
        gated.w_qkvg.weight[3 * c :] = 0.0
        torch.testing.assert_close(gated(x, rope), 0.5 * plain(x, rope))
        gated.w_qkvg.weight[3 * c :].normal_()  # a real gate differs per channel / per head
        assert not torch.allclose(gated(x, rope), 0.5 * plain(x, rope))


def test_hope_with_one_frozen_level_is_the_transformer() -> None:
    """A plain Transformer MLP is the one-level, never-updated CMS."""
    hope = build_model(tiny("hope_attention", options={"cms_levels": 1, "cms_periods": (0,)}), seed=0)
    transformer = build_model(tiny("transformer"), seed=0)
    state = {
        name.replace("levels.0.norm", "mlp_norm").replace("levels.0.mlp", "mlp"): value
        for name, value in hope.state_dict().items()
    }
    transformer.load_state_dict(state)
    idx = batch(transformer.cfg)
    torch.testing.assert_close(hope(idx), transformer(idx))


# ------------------------------------------------------------------ chunked inner updates vs autograd


def _titans_reference(q, k, v, theta, eta, alpha, a2, a1, chunk, max_norm, clipped):  # type: ignore[no-untyped-def]
    """Token-by-token Titans memory for one head: (T, D) inputs, per-token autograd gradients
    (clipped to Frobenius norm `max_norm` when > 0; clipped tokens are counted in `clipped`)."""
    w2, w1 = a2, a1
    s2, s1 = torch.zeros_like(a2), torch.zeros_like(a1)
    outs = []
    for start in range(0, q.shape[0], chunk):
        wc2, wc1 = w2, w1  # chunk-start weights: read and differentiate here
        for t in range(start, min(start + chunk, q.shape[0])):
            outs.append(q[t] + F.silu(q[t] @ wc2) @ wc1)
        for t in range(start, min(start + chunk, q.shape[0])):
            loss = (k[t] + F.silu(k[t] @ wc2) @ wc1 - v[t]).pow(2).sum()
            g2, g1 = torch.autograd.grad(loss, (wc2, wc1), create_graph=True)
            if max_norm > 0:
                norm = (g2.pow(2).sum() + g1.pow(2).sum()).sqrt()
                clipped.append(bool(norm > max_norm))
                g2, g1 = (g * torch.clamp(max_norm / norm, max=1.0) for g in (g2, g1))
            s2, s1 = eta[t] * s2 - theta[t] * g2, eta[t] * s1 - theta[t] * g1
            w2, w1 = (1 - alpha[t]) * w2 + s2, (1 - alpha[t]) * w1 + s1
    return torch.stack(outs)


@pytest.mark.parametrize("max_norm", [0.0, 2.0])  # no clipping; clipping some tokens
@pytest.mark.parametrize("t", [16, 13])  # whole chunks, and a padded last chunk
def test_titans_chunked_memory_matches_per_token_autograd(t: int, max_norm: float) -> None:
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
    fast, _ = memory_scan(q, k, v, theta, eta.log(), (1 - alpha).log(), a2, a1, chunk, max_norm)
    clipped: list[bool] = []
    ref = torch.stack(
        [
            torch.stack(
                [
                    _titans_reference(
                        q[i, j],
                        k[i, j],
                        v[i, j],
                        theta[i, j],
                        eta[i, j],
                        alpha[i, j],
                        a2[j],
                        a1[j],
                        chunk,
                        max_norm,
                        clipped,
                    )  # fmt: skip
                    for j in range(h)
                ]
            )
            for i in range(b)
        ]
    )
    torch.testing.assert_close(fast, ref, atol=1e-10, rtol=1e-10)
    if max_norm > 0:
        assert any(clipped) and not all(clipped)
    assert not torch.allclose(fast[:, :, chunk:], q[:, :, chunk:] + F.silu(q[:, :, chunk:] @ a2[:, None]) @ a1[:, None])
    # the outer gradient flows through the inner updates identically
    w = torch.randn_like(fast)
    g_fast = torch.autograd.grad((fast * w).sum(), (a2, a1, theta, v))
    g_ref = torch.autograd.grad((ref * w).sum(), (a2, a1, theta, v))
    for gf, gr in zip(g_fast, g_ref, strict=True):
        torch.testing.assert_close(gf, gr, atol=1e-9, rtol=1e-9)


def _swiglu(x, wg, wu, wd):  # type: ignore[no-untyped-def]
    return (F.silu(x @ wg) * (x @ wu)) @ wd


@pytest.mark.parametrize("max_norm", [0.0, 4.0])  # no clipping; clipping some tokens
@pytest.mark.parametrize("t", [12, 10])
def test_hope_fast_level_matches_autograd_steps(t: int, max_norm: float) -> None:
    torch.manual_seed(0)
    b, c, f, chunk, lr = 2, 4, 6, 4, torch.tensor(0.1, dtype=torch.float64)
    u, k, v = (torch.randn(b, t, c, dtype=torch.float64) for _ in range(3))
    wg, wu, wd = (torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in ((c, f), (c, f), (f, c)))
    fast, _ = fast_swiglu_scan(u, k, v, wg, wu, wd, lr, chunk, max_norm)
    refs, clipped = [], []
    for i in range(b):
        ws = (wg, wu, wd)
        for start in range(0, t, chunk):
            refs.append(_swiglu(u[i, start : start + chunk], *ws))
            total = [torch.zeros_like(w) for w in ws]
            for j in range(start, min(start + chunk, t)):  # token by token
                loss = (_swiglu(k[i, j], *ws) - v[i, j]).pow(2).sum()
                grads = torch.autograd.grad(loss, ws, create_graph=True)
                if max_norm > 0:
                    norm = sum(g.pow(2).sum() for g in grads).sqrt()
                    clipped.append(bool(norm > max_norm))
                    grads = tuple(g * torch.clamp(max_norm / norm, max=1.0) for g in grads)
                total = [a + g for a, g in zip(total, grads, strict=True)]
            ws = tuple(w - lr * g for w, g in zip(ws, total, strict=True))
    ref = torch.cat(refs).view(b, t, c)
    torch.testing.assert_close(fast, ref, atol=1e-10, rtol=1e-10)
    if max_norm > 0:
        assert any(clipped) and not all(clipped)
    g_fast = torch.autograd.grad(fast.pow(2).sum(), (wg, wu, wd))
    g_ref = torch.autograd.grad(ref.pow(2).sum(), (wg, wu, wd))
    for gf, gr in zip(g_fast, g_ref, strict=True):
        torch.testing.assert_close(gf, gr, atol=1e-9, rtol=1e-9)


# ------------------------------------------------------------------ bad configs


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"arch": "mamba"}, "arch"),
        ({"mlp_widths": (64, 64, 64)}, "mlp_widths"),
        ({"mlp_widths": (64, 0)}, "mlp_widths"),
        ({"n_heads": 3}, "n_heads"),
        ({"d_model": 0}, "d_model"),
        ({"arch": "titans", "options": {"mem_heads": 3}}, "mem_heads"),
        ({"arch": "hope_attention", "mlp_widths": (127, 1)}, "cms_levels"),
    ],
)
def test_bad_config_is_a_one_line_value_error(change: dict[str, object], field: str) -> None:
    fields = dataclasses.asdict(tiny("transformer")) | {"options": {}} | change
    with pytest.raises(ValueError, match=field) as info:
        ModelConfig(**fields)  # type: ignore[arg-type]
    assert isinstance(info.value, ConfigError) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("arch", "options", "field"),
    [
        ("gated_attention", {"gate": "channelwise"}, "gate"),
        ("titans", {"titans_variant": "mac"}, "titans_variant"),
        ("hope_attention", {"cms_levels": 3}, "cms_periods"),
        ("hope_attention", {"cms_shares": (0.5, 0.6)}, "cms_shares"),
        ("titans", {"mem_chunk": 0}, "mem_chunk"),
    ],
)
def test_bad_options_name_the_field(arch: str, options: dict[str, object], field: str) -> None:
    kind = options_class(arch)
    with pytest.raises(ValueError, match=field) as info:
        kind(**options)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match=field):  # the same message through the model config
        tiny(arch, options=options)


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_each_family_serializes_only_its_own_options(arch: str) -> None:
    """`options:` holds exactly the fields of the family's options class, and reads back equal."""
    cfg = tiny(arch, options=small_chunks(arch))
    data = cfg.to_dict()
    assert list(data["options"]) == [f.name for f in dataclasses.fields(options_class(arch))]
    assert isinstance(cfg.options, options_class(arch))
    assert ModelConfig.from_dict(data) == cfg and ModelConfig.from_json(cfg.to_json()) == cfg
    assert ModelConfig.from_yaml(cfg.to_yaml()) == cfg


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_another_familys_option_is_refused_naming_both(arch: str) -> None:
    for other in ARCHITECTURE_NAMES:
        foreign = [
            f.name
            for f in dataclasses.fields(options_class(other))
            if f.name not in {g.name for g in dataclasses.fields(options_class(arch))}
        ]
        for name in foreign:
            with pytest.raises(
                ConfigError,
                match=rf"options: {name} \(an option of [a-z_, ]*{other}.*\) is not an "
                rf"option of arch='{arch}'; its options: ",
            ):
                tiny(arch, options={name: getattr(options_class(other)(), name)})


def test_config_round_trips() -> None:
    cfg = tiny("titans", options={"titans_variant": "mal", "mem_chunk": 8})
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    assert ModelConfig.from_json(cfg.to_json()) == cfg


# ------------------------------------------------------------------ autocast and compile on CPU


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_cpu_bf16_autocast_forward_backward(arch: str) -> None:
    cfg = tiny(arch, options=small_chunks(arch))
    model = build_model(cfg, seed=0)
    idx = batch(cfg)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(idx)
    assert logits.dtype == torch.bfloat16
    loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab_size), idx.reshape(-1))
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    ref = F.cross_entropy(model(idx).reshape(-1, cfg.vocab_size), idx.reshape(-1))
    assert abs(loss.item() - ref.item()) < 0.02 * ref.item()


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_traces_as_one_graph(arch: str) -> None:
    """torch.compile sees the whole model without graph breaks (dynamo only, no codegen)."""
    cfg = tiny(arch, options=small_chunks(arch))
    model = build_model(cfg, seed=0)
    idx = batch(cfg)
    compiled = torch.compile(model, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(idx), model(idx), atol=1e-6, rtol=1e-6)


# ------------------------------------------------------------------ CUDA


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_cuda_bf16_autocast_forward_backward(arch: str) -> None:
    cfg = tiny(arch, options=small_chunks(arch))
    model = build_model(cfg, seed=0).cuda()
    idx = batch(cfg).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = lm_loss(model, idx)
    loss.backward()
    assert torch.isfinite(loss)
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    ref = lm_loss(model.float(), idx)
    assert abs(loss.item() - ref.item()) < 0.05 * ref.item()


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_cuda_torch_compile_matches_eager(arch: str) -> None:
    cfg = tiny(arch, options=small_chunks(arch))
    model = build_model(cfg, seed=0).cuda()
    idx = batch(cfg).cuda()
    compiled = torch.compile(model)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = lm_loss(compiled, idx)
    loss.backward()
    assert torch.isfinite(loss)
    with torch.no_grad():
        torch.testing.assert_close(compiled(idx), model(idx), atol=2e-4, rtol=2e-4)
