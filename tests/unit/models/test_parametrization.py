"""Width-aware parametrisation (`TrainConfig.parametrization = "width"`): the coordinate check
(each layer's MLP output moves by about the same amount whatever its width), the standard path
unchanged bit for bit, every family, the budget, checkpoints, bad values, float64 determinism."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ARCHITECTURE_NAMES, DataConfig, ModelConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models import build_model, count_params
from tlmsearch.models.build import weight_decay_split
from tlmsearch.models.parametrization import lr_scales, width_multipliers
from tlmsearch.profiles import profile
from tlmsearch.training.trainer import make_optimizer, train

P4 = dataclasses.replace(preset("tiny"), n_layers=4)  # d_model 32, base width 64
COSINE = profile("cosine", P4.budget())  # 1.5x -> 0.5x: (96, 80, 48, 32)
UNIFORM = P4.uniform_widths()
PYDOC = DataConfig(corpus="pydoc")
CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.set_num_threads(1)
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)


def quick(**kw: Any) -> TrainConfig:
    base: dict[str, Any] = dict(steps=20, batch_size=4, eval_interval=10, eval_windows=4, warmup_steps=3, threads=1)
    return TrainConfig(**{**base, **kw})


def mcfg(widths: tuple[int, ...], arch: str = "transformer", **kw: Any) -> ModelConfig:
    return dataclasses.replace(P4.model_config(arch, widths), **kw)


# ----------------------------------------------------------------------------- coordinate check


def mlp_output_change(widths: tuple[int, ...], parametrization: str, base_width: int, steps: int = 3) -> list[float]:
    """RMS of the change of each layer's MLP output on a fixed batch after `steps` Adam steps
    (lr 1e-3, constant, no decay or clipping) on that batch: the coordinate check of muP."""
    cfg = ModelConfig(
        arch="transformer", d_model=32, n_layers=4, n_heads=2, mlp_widths=widths, seq_len=32, vocab_size=64
    )
    model = build_model(cfg, seed=0, parametrization=parametrization, base_width=base_width)
    tc = TrainConfig(lr=1e-3, weight_decay=0.0, grad_clip=0.0, parametrization=parametrization)
    opt = make_optimizer(model, tc, CPU)
    for group in opt.param_groups:  # as the trainer's loop sets them
        group["lr"] = tc.lr * group.get("lr_scale", 1.0)
    x = torch.randint(0, 64, (8, 33), generator=torch.Generator().manual_seed(1))
    outs: dict[int, torch.Tensor] = {}
    for i, block in enumerate(model.blocks):  # type: ignore[arg-type]
        block.mlp.register_forward_hook(lambda m, a, out, i=i: outs.__setitem__(i, out.detach().clone()))
    with torch.no_grad():
        model(x[:, :-1])
    before = dict(outs)
    for _ in range(steps):
        logits = model(x[:, :-1])
        nn.functional.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten()).backward()
        opt.step()
        opt.zero_grad()
    with torch.no_grad():
        model(x[:, :-1])
    return [float((outs[i] - before[i]).pow(2).mean().sqrt()) for i in range(4)]


@pytest.mark.slow
def test_coordinate_check_width_keeps_each_layers_update_size_standard_drifts() -> None:
    """Widths x1, x2, x4 of the uniform and of the cosine 1.5 -> 0.5 profile (base width fixed
    at 64): under "width" the RMS change of every layer's MLP output stays within 1.4x of its
    size at x1 (measured: 0.91-1.24); under "standard" it grows with the width, by >= 2x at x4
    (measured: 2.6-3.4)."""
    for widths in (UNIFORM, COSINE):
        change = {
            (par, k): mlp_output_change(tuple(k * w for w in widths), par, base_width=64)
            for par in ("standard", "width")
            for k in (1, 2, 4)
        }
        for layer in range(4):
            std = [change["standard", k][layer] for k in (1, 2, 4)]
            mup = [change["width", k][layer] for k in (1, 2, 4)]
            assert std[2] / std[0] >= 2.0, (widths, layer, std)
            assert std[0] < std[1] < std[2], (widths, layer, std)
            assert max(mup) / min(mup) <= 1.4, (widths, layer, mup)


def test_coordinate_check_tapered_layers_move_like_the_uniform_models() -> None:
    """Within one budget: under "width" each layer of the cosine profile moves within 15% of the
    same layer of the uniform model (measured: 0.97-1.07); under "standard" by its width (the
    widest layer over the narrowest, relative to uniform, >= 1.6x; measured 2.2x)."""
    ratio = {}
    for par in ("standard", "width"):
        cosine, uniform = mlp_output_change(COSINE, par, 64), mlp_output_change(UNIFORM, par, 64)
        ratio[par] = [c / u for c, u in zip(cosine, uniform, strict=True)]
    assert all(0.85 <= r <= 1.15 for r in ratio["width"]), ratio
    assert ratio["standard"][0] / ratio["standard"][-1] >= 1.6, ratio


# ----------------------------------------------------------------------------- the rules


def test_width_scales_only_the_down_projections_init_by_sqrt_of_the_multiplier() -> None:
    std = dict(build_model(mcfg(COSINE), seed=3).named_parameters())
    wid = build_model(mcfg(COSINE), seed=3, parametrization="width")
    scales = lr_scales(wid)
    assert scales == {f"blocks.{i}.mlp.w_down.weight": 64 / w for i, w in enumerate(COSINE)}
    for name, p in wid.named_parameters():
        expected = std[name] * math.sqrt(scales[name]) if name in scales else std[name]
        assert torch.equal(p.detach(), expected.detach()), name  # same keyed draw, rescaled


def test_optimizer_groups_carry_the_lr_multiplier_and_the_loop_applies_it() -> None:
    model = build_model(mcfg(COSINE), seed=0, parametrization="width")
    opt = make_optimizer(model, TrainConfig(parametrization="width"), CPU)
    names = {id(p): n for n, p in model.named_parameters()}
    scaled = {names[id(p)]: g["lr_scale"] for g in opt.param_groups if "lr_scale" in g for p in g["params"]}
    assert scaled == lr_scales(model)
    assert all(g["weight_decay"] == 0.1 for g in opt.param_groups if "lr_scale" in g)
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))
    seen: list[dict[str, float]] = []
    real_step = torch.optim.AdamW.step

    def spy(self: torch.optim.AdamW, *a: Any, **kw: Any) -> Any:
        seen.append({g.get("lr_scale", 1.0): g["lr"] for g in self.param_groups})
        return real_step(self, *a, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch.optim.AdamW, "step", spy)
        train(mcfg(COSINE), quick(steps=4, parametrization="width", schedule="constant", warmup_steps=0), PYDOC)
    assert all(lr == pytest.approx(2e-3 * m, rel=1e-15) for step in seen for m, lr in step.items())
    assert len(seen) == 4 and 1.0 in seen[0] and len(seen[0]) == 1 + len(set(lr_scales(model).values()))


def _old_make_optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """`trainer.make_optimizer` as it was before the parametrisation option (verbatim)."""
    params = dict(model.named_parameters())
    decay, keep = weight_decay_split(model)
    groups = [
        {"params": [params[n] for n in decay], "weight_decay": cfg.weight_decay},
        {"params": [params[n] for n in keep], "weight_decay": 0.0},
    ]
    kwargs: dict[str, Any] = {"lr": cfg.lr, "betas": cfg.betas, "eps": cfg.eps}
    if device.type in ("cpu", "cuda"):
        kwargs["fused"] = True
    return torch.optim.AdamW(groups, **kwargs)


@pytest.mark.slow
def test_standard_reproduces_the_trainer_before_the_option_bit_for_bit() -> None:
    model = build_model(mcfg(COSINE), seed=0)
    new, old = make_optimizer(model, quick(), CPU), _old_make_optimizer(model, quick(), CPU)
    assert new.state_dict()["param_groups"] == old.state_dict()["param_groups"]  # no lr_scale, same order
    now = train(mcfg(COSINE), quick(parametrization="standard"), PYDOC)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("tlmsearch.training.trainer.make_optimizer", _old_make_optimizer)
        before = train(mcfg(COSINE), quick(), PYDOC)
    assert [c["val_loss"] for c in now.curve] == [c["val_loss"] for c in before.curve]
    assert now.metrics["train_loss"] == before.metrics["train_loss"]


@pytest.mark.slow
def test_uniform_profile_trains_identically_under_both() -> None:
    """base_width = the mean width, so the uniform model has every multiplier 1: nothing changes."""
    assert lr_scales(build_model(mcfg(UNIFORM), seed=0, parametrization="width")) == {}
    a = train(mcfg(UNIFORM), quick(), PYDOC)
    b = train(mcfg(UNIFORM), quick(parametrization="width"), PYDOC)
    c = train(mcfg(COSINE), quick(parametrization="width"), PYDOC)
    d = train(mcfg(COSINE), quick(), PYDOC)
    assert a.metrics["val_loss"] == b.metrics["val_loss"] and a.metrics["train_loss"] == b.metrics["train_loss"]
    assert c.metrics["val_loss"] != d.metrics["val_loss"]


def test_exact_budget_is_unaffected() -> None:
    """The parametrisation changes no width and no parameter: counts and FLOPs stay the budget's,
    and the base width is the budget's uniform width exactly."""
    budget = P4.budget()
    assert sum(COSINE) == budget.n_layers * budget.base_width
    model = build_model(mcfg(COSINE), seed=0, parametrization="width")
    assert sum(p.numel() for p in model.parameters()) == count_params(mcfg(COSINE)).total
    assert count_params(mcfg(COSINE)).total == count_params(mcfg(UNIFORM)).total
    m = width_multipliers(model)
    assert [64 / v for v in m.values()] == list(COSINE)
    assert model.cfg.mlp_widths == COSINE  # type: ignore[union-attr]


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_every_family_builds_and_trains_with_it(arch: str) -> None:
    cfg = mcfg(COSINE, arch=arch)
    model = build_model(cfg, seed=0, parametrization="width")
    scales = lr_scales(model)
    assert scales and all(n.endswith("w_down.weight") for n in scales)
    widths = {n: dict(model.named_parameters())[n].shape[1] for n in scales}
    per_layer = {int(n.split(".")[1]) for n in scales}
    assert per_layer == set(range(4)) and all(scales[n] == 64 / COSINE[int(n.split(".")[1])] for n in scales)
    assert sum(widths.values()) == sum(COSINE)  # Hope: every CMS level of every layer is covered
    out = train(cfg, quick(steps=4, eval_interval=4, parametrization="width"), PYDOC)
    assert math.isfinite(out.metrics["val_loss"])


def test_bad_value_is_one_line_listing_the_allowed_ones() -> None:
    with pytest.raises(ConfigError) as err:
        TrainConfig(parametrization="mup")
    assert str(err.value) == "parametrization='mup' is not allowed; choose one of: standard, width"
    with pytest.raises(ConfigError, match="choose one of: standard, width"):
        build_model(mcfg(UNIFORM), parametrization="muP")
    with pytest.raises(ConfigError, match="parametrization"):
        TrainConfig.from_dict({"parametrization": 1})


def test_optimizer_refuses_a_model_built_the_other_way() -> None:
    with pytest.raises(ValueError, match="parametrization='width'"):
        make_optimizer(build_model(mcfg(COSINE), seed=0), TrainConfig(parametrization="width"), CPU)
    with pytest.raises(ValueError, match="parametrization='standard'"):
        make_optimizer(build_model(mcfg(COSINE), seed=0, parametrization="width"), TrainConfig(), CPU)


def test_float64_is_deterministic() -> None:
    def run() -> list[torch.Tensor]:
        model = build_model(mcfg(COSINE), seed=5, parametrization="width").double()
        opt = make_optimizer(model, TrainConfig(parametrization="width"), CPU)
        for group in opt.param_groups:
            group["lr"] = 2e-3 * group.get("lr_scale", 1.0)
        x = torch.randint(0, 256, (4, 33), generator=torch.Generator().manual_seed(0))
        for _ in range(3):
            nn.functional.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten()).backward()
            opt.step()
            opt.zero_grad()
        return [p.detach().clone() for p in model.parameters()]

    a, b = run(), run()
    assert all(p.dtype == torch.float64 for p in a)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


# ----------------------------------------------------------------------------- checkpoints


class _Stop(Exception):
    pass


def _stop_at_10(step: int, metrics: dict[str, float]) -> None:
    if step == 10:
        raise _Stop


@pytest.mark.slow
def test_resume_under_width_gives_the_uninterrupted_result(tmp_path: Path) -> None:
    cfg = quick(parametrization="width")
    full = train(mcfg(COSINE), cfg, PYDOC)
    with pytest.raises(_Stop):
        train(mcfg(COSINE), cfg, PYDOC, _stop_at_10, checkpoint_dir=tmp_path)
    resumed = train(mcfg(COSINE), cfg, PYDOC, checkpoint_dir=tmp_path)
    assert [c["val_loss"] for c in resumed.curve] == [c["val_loss"] for c in full.curve]
    assert resumed.metrics["train_loss"] == full.metrics["train_loss"]
    with pytest.raises(ConfigError, match=r"train\.parametrization"):
        train(mcfg(COSINE), quick(), PYDOC, checkpoint_dir=tmp_path)
