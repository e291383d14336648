"""The short-trial trainer: determinism, resume, learning, metrics, divergence."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.data import prepare, val_windows
from tlmsearch.errors import ConfigError
from tlmsearch.training.trainer import TrainingDiverged, TrainResult, lr_at, resolve_vocab, train

REPORT_KEYS = {"val_loss", "val_ppl", "val_bpb", "train_loss", "tokens_per_s", "lr", "step", "tokens", "elapsed_s"}
FINAL_KEYS = {
    "val_loss", "val_ppl", "val_bpb", "train_loss", "tokens_per_s", "mfu", "wall_s", "steps", "tokens",
    "params_total", "params_non_embedding", "params_mlp", "flops_per_token",
}  # fmt: skip


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    # the measured matmul peak is tested on its own; keep these tests quick
    monkeypatch.setattr("tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)


def tiny(widths: tuple[int, ...] = (96, 32)) -> ModelConfig:
    return preset("tiny").model_config("transformer", widths)


def quick(**kw: object) -> TrainConfig:
    base: dict[str, object] = dict(steps=30, batch_size=8, eval_interval=10, eval_windows=8, warmup_steps=5, threads=1)
    base.update(kw)
    return TrainConfig(**base)  # type: ignore[arg-type]


PYDOC = DataConfig(corpus="pydoc")


def test_reports_and_result_shape() -> None:
    seen: list[tuple[int, dict[str, float]]] = []
    result = train(tiny(), quick(), PYDOC, report=lambda s, m: seen.append((s, m)))
    assert isinstance(result, TrainResult)
    assert [s for s, _ in seen] == [10, 20, 30]
    assert all(REPORT_KEYS <= set(m) for _, m in seen)
    assert FINAL_KEYS <= set(result.metrics)
    assert len(result.curve) == 3 and result.curve[-1]["val_loss"] == result.metrics["val_loss"]
    assert result.metrics["tokens"] == 30 * 8 * 32 and result.metrics["steps"] == 30
    assert result.metrics["params_mlp"] == 3 * 32 * (96 + 32)
    assert result.model_config == tiny()


@pytest.mark.slow
def test_same_seed_same_losses_other_seed_differs() -> None:
    a = train(tiny(), quick(seed=7), PYDOC)
    b = train(tiny(), quick(seed=7), PYDOC)
    c = train(tiny(), quick(seed=8), PYDOC)
    assert [x["val_loss"] for x in a.curve] == [x["val_loss"] for x in b.curve]
    assert [x["train_loss"] for x in a.curve] == [x["train_loss"] for x in b.curve]
    assert a.metrics["val_loss"] != c.metrics["val_loss"]


@pytest.mark.slow
def test_loss_falls_on_real_text() -> None:
    result = train(tiny(), quick(steps=60, eval_interval=20, lr=3e-3), PYDOC)
    first, last = result.curve[0]["val_loss"], result.curve[-1]["val_loss"]
    assert result.curve[0]["train_loss"] < math.log(256) + 0.5
    assert last < first and last < 3.8  # uniform over bytes would be 5.55


class _Stop(Exception):
    pass


def stop_at_20(step: int, metrics: dict[str, float]) -> None:
    """A report callback that ends a run at step 20, after its checkpoint there is written."""
    if step == 20:
        raise _Stop


@pytest.mark.parametrize("dtype,accum", [("float32", 1), ("bfloat16", 2)])
@pytest.mark.slow
def test_resume_gives_the_uninterrupted_result(tmp_path: Path, dtype: str, accum: int) -> None:
    cfg = quick(dtype=dtype, grad_accum=accum, batch_size=4)
    full = train(tiny(), cfg, PYDOC)

    ckpt = tmp_path / "ckpt"
    with pytest.raises(_Stop):
        train(tiny(), cfg, PYDOC, stop_at_20, checkpoint_dir=ckpt)
    assert (ckpt / "checkpoint.pt").is_file()
    steps_after: list[int] = []
    resumed = train(tiny(), cfg, PYDOC, lambda s, m: steps_after.append(s), checkpoint_dir=ckpt)
    assert steps_after == [30]  # it really resumed from step 20
    assert resumed.metrics["val_loss"] == full.metrics["val_loss"]
    assert resumed.metrics["train_loss"] == full.metrics["train_loss"]
    assert [c["val_loss"] for c in resumed.curve] == [c["val_loss"] for c in full.curve]


@pytest.mark.slow
def test_checkpoint_interval_between_evaluations(tmp_path: Path) -> None:
    cfg = quick(checkpoint_interval=7)
    full = train(tiny(), cfg, PYDOC)
    progress: list[int] = []

    def stop_at_15(step: int) -> None:
        progress.append(step)
        if step == 15:
            raise _Stop

    with pytest.raises(_Stop):
        train(tiny(), cfg, PYDOC, checkpoint_dir=tmp_path, progress=stop_at_15)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert state["step"] == 14
    assert train(tiny(), cfg, PYDOC, checkpoint_dir=tmp_path).metrics["val_loss"] == full.metrics["val_loss"]


def test_resume_with_another_config_is_refused(tmp_path: Path) -> None:
    train(tiny(), quick(steps=10), PYDOC, checkpoint_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"train\.lr"):
        train(tiny(), quick(steps=10, lr=1e-2), PYDOC, checkpoint_dir=tmp_path)


def test_bits_per_byte_agree_with_loss_bytes() -> None:
    result = train(tiny(), quick(steps=10), PYDOC)
    m = result.metrics
    assert m["val_bpb"] == pytest.approx(m["val_loss"] / math.log(2), rel=1e-9)
    assert m["val_ppl"] == pytest.approx(math.exp(m["val_loss"]))


@pytest.mark.slow
def test_bits_per_byte_with_bpe_counts_bytes() -> None:
    data_cfg = DataConfig(corpus="pydoc", tokenizer="bpe", bpe_vocab=512)
    model_cfg = resolve_vocab(tiny(), data_cfg)
    assert model_cfg.vocab_size == 512
    cfg = quick(steps=10)
    m = train(tiny(), cfg, data_cfg).metrics
    data = prepare(data_cfg)
    starts = val_windows(data.val.shape[0], 32, cfg.eval_windows)
    assert data.token_bytes is not None
    n_bytes = sum(int(data.token_bytes[data.val[s + 1 : s + 33]].sum()) for s in starts)
    n_tokens = len(starts) * 32
    assert n_bytes > 1.5 * n_tokens
    assert m["val_bpb"] == pytest.approx(m["val_loss"] * n_tokens / (math.log(2) * n_bytes), rel=1e-9)


def test_injected_nan_raises_divergence(monkeypatch: pytest.MonkeyPatch) -> None:
    import tlmsearch.training.trainer as trainer

    real_build = trainer.build_model

    def poisoned(cfg: ModelConfig, **kw: object) -> torch.nn.Module:
        model = real_build(cfg, **kw)  # type: ignore[arg-type]
        with torch.no_grad():
            next(model.parameters()).fill_(float("nan"))
        return model

    monkeypatch.setattr(trainer, "build_model", poisoned)
    with pytest.raises(TrainingDiverged, match=r"step 1: loss = nan") as info:
        train(tiny(), quick(), PYDOC)
    assert info.value.step == 1 and math.isnan(info.value.value)


def test_divergence_mid_run_names_the_step() -> None:
    with pytest.raises(TrainingDiverged) as info:
        train(tiny(), quick(lr=1e6, grad_clip=0.0, warmup_steps=0, steps=40), PYDOC)
    assert 1 <= info.value.step <= 40


def test_lr_schedules() -> None:
    cos = TrainConfig(steps=100, warmup_steps=10, lr=1.0, min_lr_ratio=0.1, schedule="cosine")
    assert lr_at(0, cos) == pytest.approx(0.1) and lr_at(9, cos) == pytest.approx(1.0)
    assert lr_at(99, cos) == pytest.approx(0.1, abs=1e-3)
    assert all(lr_at(i, cos) >= lr_at(i + 1, cos) for i in range(10, 99))
    wsd = cos.replace(schedule="wsd", decay_fraction=0.2)
    assert lr_at(50, wsd) == 1.0 and lr_at(79, wsd) == 1.0
    assert lr_at(99, wsd) == pytest.approx(0.1) and 0.1 < lr_at(90, wsd) < 1.0
    const = cos.replace(schedule="constant")
    assert lr_at(99, const) == 1.0


@pytest.mark.slow
def test_grad_accum_matches_a_larger_batch() -> None:
    a = train(tiny(), quick(steps=10, batch_size=8, grad_accum=2), PYDOC)
    b = train(tiny(), quick(steps=10, batch_size=16, grad_accum=1), PYDOC)
    # same windows per step (a step draws accum x batch starts from one generator): same training
    assert a.metrics["tokens"] == b.metrics["tokens"]
    assert a.metrics["val_loss"] == pytest.approx(b.metrics["val_loss"], rel=1e-4)
    assert a.metrics["val_loss"] != pytest.approx(train(tiny(), quick(steps=10), PYDOC).metrics["val_loss"], rel=1e-4)


def test_threads_are_set_and_restored() -> None:
    before = torch.get_num_threads()
    seen: list[int] = []
    train(tiny(), quick(steps=10, threads=1), PYDOC, lambda s, m: seen.append(torch.get_num_threads()))
    assert seen == [1] and torch.get_num_threads() == before


@pytest.mark.slow
def test_bfloat16_autocast_trains() -> None:
    result = train(tiny(), quick(dtype="bfloat16"), PYDOC)
    assert math.isfinite(result.metrics["val_loss"]) and result.metrics["val_loss"] < math.log(256)


def test_cuda_requested_without_cuda_is_config_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    with pytest.raises(ConfigError, match="no CUDA device"):
        train(tiny(), quick(device="cuda"), PYDOC)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_bf16_run() -> None:
    result = train(tiny(), quick(device="cuda", dtype="bfloat16"), PYDOC)
    assert math.isfinite(result.metrics["val_loss"])


@pytest.mark.slow
def test_measured_peak_is_cached(tmp_path: Path) -> None:
    from tlmsearch.training import hardware

    dev = torch.device("cpu")
    with hardware.thread_count(1):
        peak = hardware.matmul_peak(dev, "float32", tmp_path)
        assert peak > 1e8
        assert (tmp_path / "hardware.json").is_file()
        assert hardware.matmul_peak(dev, "float32", tmp_path) == peak


def test_batched_finiteness_check_finds_the_first_bad_step() -> None:
    # the check used on accelerators, where reading every step's loss would synchronise
    from types import SimpleNamespace

    from tlmsearch.training.trainer import _Run

    run = SimpleNamespace(losses=torch.tensor([2.0, 1.5, float("inf"), float("nan")]))
    _Run._check_finite(run, 0, 2)  # type: ignore[arg-type]
    with pytest.raises(TrainingDiverged, match="step 3: loss = inf"):
        _Run._check_finite(run, 1, 4)  # type: ignore[arg-type]


@pytest.mark.slow
def test_init_mode_draws_other_weights_from_the_same_seed() -> None:
    keyed = train(tiny(), quick(steps=10), PYDOC)
    stream = train(tiny(), quick(steps=10, init="stream"), PYDOC)
    again = train(tiny(), quick(steps=10, init="stream"), PYDOC)
    assert stream.metrics["val_loss"] == again.metrics["val_loss"]
    assert stream.metrics["val_loss"] != keyed.metrics["val_loss"]


@pytest.mark.slow
def test_a_checkpoint_of_an_older_release_is_refused_in_one_line(tmp_path: Path) -> None:
    """A checkpoint whose configs lack a field (written before it existed) is another config: one
    line naming the field and what to do, never a resume at a guessed value."""
    cfg = quick()
    with pytest.raises(_Stop):
        train(tiny(), cfg, PYDOC, stop_at_20, checkpoint_dir=tmp_path)
    path = tmp_path / "checkpoint.pt"
    state = torch.load(path, weights_only=True)
    del state["configs"]["train"]["init"]  # as older releases wrote it
    torch.save(state, path)
    with pytest.raises(ConfigError, match=r"train\.init: None -> 'keyed'\); use a new checkpoint folder$"):
        train(tiny(), cfg, PYDOC, checkpoint_dir=tmp_path)


def test_regime_metrics_count_tokens_per_non_embedding_parameter_and_epochs() -> None:
    result = train(tiny(), quick(steps=10), PYDOC)
    m = result.metrics
    assert m["tokens_per_param"] == pytest.approx(m["tokens"] / m["params_non_embedding"])
    n_train = prepare(PYDOC).train.shape[0]
    assert m["epochs"] == pytest.approx(m["tokens"] / n_train)
    assert m["val_tokens"] == 8 * 32  # eval_windows x seq_len


@pytest.mark.slow
def test_final_evaluation_reads_more_windows_than_the_ones_on_the_way() -> None:
    seen: list[float] = []
    result = train(tiny(), quick(final_eval_windows=40), PYDOC, report=lambda s, m: seen.append(m["val_tokens"]))
    assert seen == [8 * 32, 8 * 32, 40 * 32]
    whole = train(tiny(), quick(final_eval_windows=-1), PYDOC)
    n_val = prepare(PYDOC).val.shape[0]
    assert whole.metrics["val_tokens"] == ((n_val - 1) // 32) * 32
    # the same weights as the run with 40 final windows: only what the last evaluation reads differs
    assert whole.curve[0]["val_loss"] == result.curve[0]["val_loss"]
    assert whole.metrics["val_loss"] != result.metrics["val_loss"]


@pytest.mark.parametrize("bad", [-2, 2**21])
def test_final_eval_windows_out_of_range_is_refused(bad: int) -> None:
    with pytest.raises(ConfigError, match="final_eval_windows"):
        quick(final_eval_windows=bad)


@pytest.mark.parametrize("bad", [1.0, -0.1, float("nan")])
def test_ema_decay_out_of_range_is_refused(bad: float) -> None:
    with pytest.raises(ConfigError, match=r"ema_decay.*\[0, 1\)"):
        quick(ema_decay=bad)


@pytest.mark.slow
def test_ema_is_the_result_and_the_last_weights_are_reported_beside_it() -> None:
    plain = train(tiny(), quick(), PYDOC)
    ema = train(tiny(), quick(ema_decay=0.9), PYDOC)
    # training itself is untouched: the last weights score exactly as a run without the average
    assert [c["val_loss_last"] for c in ema.curve] == [c["val_loss"] for c in plain.curve]
    assert ema.metrics["val_loss"] != plain.metrics["val_loss"]
    assert ema.metrics["train_loss"] == plain.metrics["train_loss"]
    assert "val_loss_last" not in plain.metrics


def test_ema_by_hand_matches_the_trainers_average(monkeypatch: pytest.MonkeyPatch) -> None:
    """After optimizer step t (0-based) the average becomes d_t * ema + (1 - d_t) * weights with
    d_t = min(ema_decay, (1 + t) / (10 + t)); before the first step it is the initial weights."""
    from tlmsearch.training import trainer as trainer_mod

    checked: list[int] = []
    expected: list[torch.Tensor] = []
    original = trainer_mod._Run._update_ema

    def by_hand(run: trainer_mod._Run) -> None:
        assert run.ema is not None
        nonlocal expected
        if not expected:
            expected = [t.clone() for t in run.ema]
            assert all(torch.equal(e, p) for e, p in zip(expected, run.initial, strict=True))
        d = min(0.8, (1 + run.step) / (10 + run.step))
        expected = [d * e + (1 - d) * p.detach() for e, p in zip(expected, run.model.parameters(), strict=True)]
        original(run)
        for e, got in zip(expected, run.ema, strict=True):
            torch.testing.assert_close(got, e, rtol=1e-6, atol=1e-7)
        checked.append(run.step)

    original_init = trainer_mod._Run.__init__

    def keep_initial(run: trainer_mod._Run, *args: object) -> None:
        original_init(run, *args)  # type: ignore[arg-type]
        run.initial = [p.detach().clone() for p in run.model.parameters()]  # type: ignore[attr-defined]

    monkeypatch.setattr(trainer_mod._Run, "__init__", keep_initial)
    monkeypatch.setattr(trainer_mod._Run, "_update_ema", by_hand)
    train(tiny(), quick(steps=12, ema_decay=0.8), PYDOC)
    assert checked == list(range(12))


@pytest.mark.parametrize("final_windows", [0, -1])
@pytest.mark.slow
def test_resume_with_ema_gives_the_uninterrupted_result(tmp_path: Path, final_windows: int) -> None:
    cfg = quick(ema_decay=0.95, final_eval_windows=final_windows)
    full = train(tiny(), cfg, PYDOC)

    with pytest.raises(_Stop):
        train(tiny(), cfg, PYDOC, stop_at_20, checkpoint_dir=tmp_path)
    resumed = train(tiny(), cfg, PYDOC, checkpoint_dir=tmp_path)
    assert resumed.metrics["val_loss"] == full.metrics["val_loss"]
    assert resumed.metrics["val_loss_last"] == full.metrics["val_loss_last"]
