"""`tlmsearch train` and `tlmsearch data` end to end on tiny configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tlmsearch.cli import main

QUICK = ["--preset", "tiny", "--corpus", "pydoc", "--steps", "10", "--eval-interval", "5", "--threads", "1"]


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)


def _train(tmp_path: Path, *extra: str) -> int:
    return main(["train", *QUICK, "--runs-dir", str(tmp_path / "runs"), *extra])


def test_train_writes_run_dir_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = _train(tmp_path, "--name", "r1", "--family", "cosine:start=1.5,end=0.5", "--json", "--seed", "3")
    assert rc == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    run = tmp_path / "runs" / "r1"
    for name in ("config.yaml", "environment.json", "metrics.jsonl", "summary.json"):
        assert (run / name).is_file(), name
    assert summary["status"] == "completed" and summary["name"] == "r1"
    assert summary["metrics"]["steps"] == 10
    assert json.loads((run / "summary.json").read_text())["metrics"] == summary["metrics"]
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [5, 10]
    assert "step 10/10" in err  # progress goes to stderr with --json; plain lines off a TTY
    env = json.loads((run / "environment.json").read_text())
    assert env["seeds"] == {"seed": 3} and env["versions"]["torch"] and env["host"]["cpu_count"]
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["model"]["mlp_widths"] == [96, 32] and config["meta"]["family"] == "cosine:start=1.5,end=0.5"


def test_resolved_config_reproduces_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _train(tmp_path, "--name", "a", "--json") == 0
    first = json.loads(capsys.readouterr().out)
    config = tmp_path / "runs" / "a" / "config.yaml"
    assert main(["train", "--config", str(config), "--runs-dir", str(tmp_path / "runs"), "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["metrics"]["val_loss"] == first["metrics"]["val_loss"]
    assert second["model_config"] == first["model_config"]


def test_native_export_is_a_valid_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.configs.presets import preset
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.export.schedule import export

    model = preset("tiny").model_config("transformer", (80, 48))
    exp = export(
        model, "native", train=TrainConfig(steps=6, eval_interval=3, threads=1).to_dict(),
        data=DataConfig(corpus="pydoc").to_dict(),
    )  # fmt: skip
    path = tmp_path / exp.filename
    path.write_text(exp.text)
    assert main(["train", "--config", str(path), "--runs-dir", str(tmp_path / "runs"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["model_config"]["mlp_widths"] == [80, 48] and summary["metrics"]["steps"] == 6


def test_config_with_preset_spec_and_flag_overrides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(
        "model: {preset: tiny, arch: transformer, family: 'linear:start=1.5,end=0.5'}\n"
        "train: {steps: 4, eval_interval: 2, threads: 1}\ndata: {corpus: pydoc}\n"
    )
    rc = main(["train", "--config", str(path), "--steps", "6", "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["metrics"]["steps"] == 6
    widths = summary["model_config"]["mlp_widths"]
    assert sum(widths) == 128 and widths[0] > widths[1]


def test_resume_flag_continues_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _train(tmp_path, "--name", "r", "--json", "--keep-checkpoint") == 0
    done = json.loads(capsys.readouterr().out)
    assert main(["train", "--name", "r", "--resume", "--runs-dir", str(tmp_path / "runs"), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["metrics"]["val_loss"] == done["metrics"]["val_loss"]


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--corpus", "no-such-corpus"], "unknown corpus"),
        (["--corpus", "text:/no/such/file.txt"], "no such file"),
        (["--tokenizer", "wordpiece"], "tokenizer 'wordpiece' is not allowed"),
        (["--preset", "huge"], "preset='huge' is unknown"),
        (["--config", "/no/such/run.yaml"], "run.yaml does not exist"),
        (["--lr", "-1"], "lr=-1.0 must be > 0"),
    ],
)
def test_user_errors_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert _train(tmp_path, *extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_malformed_bin_and_unreadable_text_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokens = tmp_path / "tok"
    tokens.mkdir()
    (tokens / "train.bin").write_bytes(b"\x00" * 101)
    (tokens / "val.bin").write_bytes(b"\x00" * 100)
    assert _train(tmp_path, "--corpus", f"tokens:{tokens}") == 2
    assert "malformed token file" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff" * 5000)
    assert _train(tmp_path, "--corpus", f"text:{bad}") == 2
    err = capsys.readouterr().err.strip()
    assert "not UTF-8" in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_data_list_and_prepare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    names = {c["name"]: c for c in listing["corpora"]}
    assert {"shakespeare", "bible-web", "pydoc"} <= set(names) and names["pydoc"]["available"]
    assert main(["data", "prepare", "pydoc", "--tokenizer", "bpe:300", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["vocab_size"] == 300 and Path(info["path"]).is_relative_to(tmp_path / "cache")
    assert main(["data", "prepare", "nope"]) == 2
    assert main(["data"]) == 0
    assert "shakespeare" in capsys.readouterr().out


def test_a_second_run_of_a_shape_is_estimated_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run of a shape is priced from its FLOPs before its first step (nothing trains to
    price it); a finished run records its seconds per step, and the next run of the same shape
    (any profile of the budget) states that estimate in the plan line instead (on a quiet
    machine: under load its slow end widens, tests/unit/test_stated_ranges.py)."""
    monkeypatch.setattr("tlmsearch.costs.calibrate.current_load", lambda cores: 0.0)
    assert _train(tmp_path, "--name", "a") == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("train: transformer") and ", cpu; into " in first, first
    assert "; estimate " in first and "FLOPs at 40% of this CPU's measured matmul peak" in first, first
    assert _train(tmp_path, "--name", "b", "--family", "cosine:start=1.5,end=0.5") == 0
    second = capsys.readouterr().out.splitlines()[0]
    assert "; estimate about " in second and "s/step" in second, second
    assert second.endswith("measured in 1 earlier run of this shape)"), second


def test_resume_of_a_finished_run_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A finished run whose checkpoint was kept: --resume says so and keeps the checkpoint (it
    used to train 'steps 11-10' and then delete the checkpoint the user had asked to keep)."""
    assert _train(tmp_path, "--name", "r", "--keep-checkpoint") == 0
    run = tmp_path / "runs" / "r"
    before = {p.name: p.stat().st_mtime_ns for p in run.rglob("*")}
    capsys.readouterr()
    assert main(["train", "--name", "r", "--resume", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert "already finished (step 10 of 10)" in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in run.rglob("*")} == before


def test_a_damaged_checkpoint_is_one_line_without_unsafe_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _train(tmp_path, "--name", "g", "--steps", "10", "--keep-checkpoint") == 0
    run = tmp_path / "runs" / "g"
    (run / "checkpoint" / "checkpoint.pt").write_text("garbage\n")
    (run / "summary.json").unlink()
    capsys.readouterr()
    assert main(["train", "--name", "g", "--resume", "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "cannot read checkpoint" in err and "damaged" in err and len(err.strip().splitlines()) == 1, err
    assert "weights_only" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("cuda", [False, True])
def test_device_auto_trains_on_cuda_where_torch_sees_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cuda: bool
) -> None:
    """`--device auto`, train's default: CUDA where torch reports a device (mocked here: the
    trainer is handed the config and stops), the CPU otherwise; the plan line says which, and
    prices the run on that device before its first step."""
    import torch

    from tlmsearch.training import trainer
    from tlmsearch.training.hardware import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: int(cuda))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "NVIDIA H200")
    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", lambda device, dtype, cache_dir=None: 9e10)
    seen: list[str] = []

    def stop(model_cfg, train_cfg, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen.append(str(resolve_device(train_cfg.device)))
        raise trainer.TrainingInterrupted(0, None)

    monkeypatch.setattr(trainer, "train", stop)
    assert main(["train", "--preset", "tiny", "--steps", "20", "--corpus", "pydoc", "--runs-dir", str(tmp_path)]) != 0
    assert seen == ["cuda" if cuda else "cpu"]
    plan = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("train: "))
    assert (", cuda; into " if cuda else ", cpu; into ") in plan, plan
    assert ("the NVIDIA H200 dense BF16 peak" if cuda else "this CPU's measured matmul peak") in plan, plan
