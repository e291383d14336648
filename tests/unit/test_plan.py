"""`tlmsearch plan`: the figures against the analytic FLOPs and plain arithmetic, and bad input."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tlmsearch.cli import main
from tlmsearch.configs.presets import preset
from tlmsearch.costs.plan import PlanConfig, allreduce_seconds, plan, slots_for, steps_for
from tlmsearch.costs.plan_text import format_plan
from tlmsearch.errors import ConfigError
from tlmsearch.models import count_params, flops_per_token


def test_figures_match_analytic_flops_and_arithmetic() -> None:
    cfg = PlanConfig(
        preset="170m", archs=("transformer", "titans"), trials=10, noise_seeds=0, steps=1000, verify_profiles=4,
        seeds=3, verify_steps=3000, batch_size=32, grad_accum=2, eval_interval=100, eval_windows=8,
        gpu="a100-80gb", mfu=0.35, gpus=3, gpus_per_trial=0.5,
    )  # fmt: skip
    p = plan(cfg)
    seq = preset("170m").seq_len
    assert p.tokens_per_step == 32 * 2 * seq
    assert p.slots == 6  # two trials on each of three GPUs
    peak = 312e12
    assert p.sustained_flops == pytest.approx(peak * 0.35)
    for a in p.archs:
        model = preset("170m").model_config(a.arch)
        fpt = flops_per_token(model)
        assert a.flops_per_token == fpt
        assert a.params_total == count_params(model).total
        assert a.static_gb == pytest.approx(16 * count_params(model).total / 1e9)
        search, verify = a.phases
        for ph, runs, steps in ((search, 10, 1000), (verify, 12, 3000)):
            assert (ph.runs, ph.steps) == (runs, steps)
            assert ph.tokens_per_run == steps * 32 * 2 * seq
            evals = steps // 100  # both step counts are multiples of the interval
            eval_flops = evals * 8 * seq * fpt / 3
            assert ph.flops_per_run == pytest.approx(ph.tokens_per_run * fpt + eval_flops, rel=1e-12)
            gpu_s = ph.flops_per_run / (peak * 0.35)
            assert ph.gpu_hours_per_run == pytest.approx(gpu_s / 3600)
            assert ph.run_hours == pytest.approx(gpu_s / 0.5 / 3600)  # half a GPU: twice as long
            assert ph.waves == math.ceil(runs / 6)
            assert ph.wall_hours == pytest.approx(ph.waves * ph.run_hours)
            assert ph.gpu_hours == pytest.approx(runs * gpu_s / 3600)
            assert ph.tokens == runs * ph.tokens_per_run
        assert a.gpu_hours == pytest.approx(search.gpu_hours + verify.gpu_hours)
        assert a.wall_hours == pytest.approx(search.wall_hours + verify.wall_hours)
    assert p.gpu_hours == pytest.approx(sum(a.gpu_hours for a in p.archs))
    assert p.flops == pytest.approx(sum(a.flops for a in p.archs))
    # 10 runs in 2 waves of 6 slots, 12 runs in 2 waves: used slot-time / offered slot-time
    used = sum(ph.runs * ph.run_hours for a in p.archs for ph in a.phases)
    offered = sum(ph.waves * 6 * ph.run_hours for a in p.archs for ph in a.phases)
    assert p.packing == pytest.approx(used / offered)
    # the GPU-hours do not depend on packing; the wall time does
    whole = plan(cfg.replace(gpus_per_trial=1.0))
    assert whole.gpu_hours == pytest.approx(p.gpu_hours)
    assert whole.slots == 3


def test_tokens_set_steps_and_overrides_change_the_shape() -> None:
    cfg = PlanConfig(
        preset="340m", model={"n_layers": 32}, trials=0, verify_profiles=5, seeds=3,
        verify_tokens=30_000_000_000, batch_size=64, grad_accum=8, gpus=16,
    )  # fmt: skip
    p = plan(cfg)
    (a,) = p.archs
    (ph,) = a.phases
    assert p.shape["n_layers"] == 32 and p.shape["d_model"] == 1024
    assert ph.steps == steps_for(30_000_000_000, 64 * 8 * 1024) == 57221
    assert ph.tokens_per_run >= 30_000_000_000 > ph.tokens_per_run - 64 * 8 * 1024
    model = preset("340m").replace(n_layers=32).model_config("transformer")
    assert a.params_total == count_params(model).total
    assert ph.runs == 15 and ph.waves == 1


def test_slots() -> None:
    assert slots_for(8, 0.25) == 32
    assert slots_for(8, 0.3) == 24  # three trials fit on a GPU, not 3.33
    assert slots_for(8, 1.0) == 8
    assert slots_for(8, 2.0) == 4
    assert slots_for(3, 2.0) == 1


def test_warnings() -> None:
    big = plan(PlanConfig(preset="1.3b", gpu="a100-80gb", gpus_per_trial=0.125))
    assert any("AdamW" in w for w in big.warnings)
    assert not plan(PlanConfig(preset="1.3b", gpu="a100-80gb")).warnings
    assert any(
        "trains data-parallel on 2 GPUs" in w and "50 GB/s" in w for w in plan(PlanConfig(gpus_per_trial=2)).warnings
    )


def test_a_trial_on_several_gpus_pays_its_gradient_all_reduce() -> None:
    """Ring all-reduce of fp32 gradients, not overlapped: 2 (g-1)/g x 4 bytes x params over the
    link. 1e9 parameters over 50 GB/s: 0.08 s a step on 2 GPUs, 0.12 s on 4, nothing on one."""
    assert allreduce_seconds(10**9, 2, 50.0) == pytest.approx(0.08)
    assert allreduce_seconds(10**9, 4, 50.0) == pytest.approx(0.12)
    assert allreduce_seconds(10**9, 1, 50.0) == 0.0
    one = plan(PlanConfig(gpus=8, gpus_per_trial=1, step_ms=0)).archs[0]
    for link in (50.0, 450.0):
        two = plan(PlanConfig(gpus=8, gpus_per_trial=2, step_ms=0, link_gb_s=link)).archs[0]
        for a, b in zip(one.phases, two.phases, strict=True):
            comm_h = b.steps * allreduce_seconds(two.params_total, 2, link) / 3600
            assert b.comm_hours_per_run == pytest.approx(comm_h)
            assert b.run_hours == pytest.approx(a.run_hours / 2 + comm_h)  # half the FLOPs each, then the wait
            assert b.gpu_hours_per_run == pytest.approx(a.gpu_hours_per_run + 2 * comm_h)  # both GPUs wait
            assert a.comm_hours_per_run == 0.0
    slow, fast = (plan(PlanConfig(gpus_per_trial=2, link_gb_s=x)).wall_hours for x in (50.0, 450.0))
    assert slow > fast


def test_a_small_model_is_priced_by_its_steps_not_its_flops() -> None:
    """A 0.1 M-parameter model's FLOPs take microseconds a step; the floor of `step_ms` a step
    (kernel launches) prices it, says so, and never prints a bare 0.0 for work that costs."""
    cfg = PlanConfig(
        preset="cpu-xs", model={"n_layers": 2}, trials=0, verify_profiles=4, seeds=219, verify_steps=1124,
        gpu="h200", gpus=1, gpus_per_trial=0.25,
    )  # fmt: skip
    p = plan(cfg)
    (verify,) = p.archs[0].phases
    assert verify.step_bound and verify.flops_per_run / p.sustained_flops < 1124 * 0.010 / 100
    assert verify.gpu_hours_per_run == pytest.approx(1124 * 0.010 / 3600)
    assert verify.run_hours == pytest.approx(1124 * 0.010 / 0.25 / 3600)  # time-sliced: a quarter of the GPU
    assert verify.gpu_hours == pytest.approx(876 * 1124 * 0.010 / 3600)
    assert any("step-ms" in w and "verify" in w for w in p.warnings)
    text = format_plan(p)
    assert "(step-bound)" in text and "2.7 GPU-h" in text and "0.0 GPU" not in text
    flops_only = plan(cfg.replace(step_ms=0.0))
    assert not flops_only.archs[0].phases[0].step_bound and not flops_only.warnings
    assert flops_only.gpu_hours == pytest.approx(flops_only.flops / p.sustained_flops / 3600)
    assert "GPU-s" in format_plan(flops_only)  # seconds, not "0.0 GPU-h"
    big = plan(PlanConfig(preset="170m", trials=4, steps=100))  # FLOPs bind: 32 ms a step at the default batch
    assert not any(ph.step_bound for ph in big.archs[0].phases)
    assert big.gpu_hours == pytest.approx(big.flops / big.sustained_flops / 3600)


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"preset": "2b"}, "preset='2b' is unknown"),
        ({"archs": ("mamba",)}, "arch='mamba' is not allowed"),
        ({"gpu": "v100"}, "gpu='v100' is not allowed"),
        ({"mfu": 1.5}, "mfu=1.5 must lie in (0, 1]"),
        ({"gpus_per_trial": 1.5}, "must be a whole number"),
        ({"gpus": 2, "gpus_per_trial": 4.0}, "exceeds gpus=2"),
        ({"trials": 0, "verify_profiles": 0}, "runs nothing"),
        ({"model": {"n_experts": 4}}, "model override='n_experts' is not allowed"),
        ({"steps": 0, "tokens_per_param": 0.0}, "a search trial has no length"),
        ({"step_ms": -1.0}, "step_ms=-1.0 must be >= 0"),
    ],
)
def test_bad_config(changes: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=None) as err:
        PlanConfig(**changes)
    assert needle in str(err.value)


def test_config_round_trip() -> None:
    cfg = PlanConfig(preset="760m", archs=("transformer", "titans"), model={"n_layers": 20}, mfu=0.3)
    assert PlanConfig.from_dict(json.loads(cfg.to_json())) == cfg


def test_cli_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--preset", "170m", "--arch", "transformer,gated_attention", "--trials", "8", "--steps", "2e3"]
    assert main([*argv, "--gpus", "2", "--gpus-per-trial", "0.25", "--gpu", "h200"]) == 0
    text = capsys.readouterr().out
    assert "transformer:" in text and "gated_attention:" in text and "8 trials at once" in text
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = plan(PlanConfig(preset="170m", archs=("transformer", "gated_attention"), trials=8, steps=2000))
    assert data["gpu_hours"] == pytest.approx(expected.gpu_hours)
    assert [a["arch"] for a in data["archs"]] == ["transformer", "gated_attention"]
    assert data["archs"][0]["phases"][0]["steps"] == 2000


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--gpu", "v100"], "argument --gpu: invalid choice: 'v100' (choose from 'h100-sxm'"),
        (["--mfu", "0"], "mfu=0.0 must lie in (0, 1]"),
        (["--steps", "1.5"], "is not a whole number"),
        (["--arch", "rwkv"], "arch='rwkv' is not allowed"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    try:
        rc = main(["plan", *argv])
    except SystemExit as exc:  # argparse refuses a flag's value itself
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1] and "Traceback" not in "\n".join(err)


def test_plan_imports_no_torch() -> None:
    code = "import sys, tlmsearch; tlmsearch.plan(tlmsearch.PlanConfig()); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_plan_field_with_help_is_a_flag_with_that_help(capsys: pytest.CaptureFixture[str]) -> None:
    """plan's flags come from PlanConfig's fields (help and default written once, beside the field);
    the fields held in other forms (--arch a,b, the shape flags, --untied) keep their own flags."""
    import dataclasses

    from tlmsearch.cli import build_parser

    top = build_parser()
    sub = next(a for a in top._actions if a.__class__.__name__ == "_SubParsersAction")
    flags = {o: a for a in sub.choices["plan"]._actions for o in a.option_strings}
    with_help = [f for f in dataclasses.fields(PlanConfig) if f.metadata.get("help")]
    assert len(with_help) >= 15
    for field in with_help:
        action = flags["--" + field.name.replace("_", "-")]
        assert action.help.startswith(field.metadata["help"].replace("%", "%%"))
        assert f"(default: {field.default})" in action.help
    assert {"--arch", "--layers", "--untied"} <= set(flags) and "--archs" not in flags
    assert main(["plan", "--trials", "0", "--verify-profiles", "2", "--verify-tokens", "3e9", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["config"]["verify_tokens"] == 3_000_000_000
