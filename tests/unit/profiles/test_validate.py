"""The shared input checks of tlmsearch.core.validate: each refuses bad input in one named line."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from tlmsearch.core.base import ModelConfig
from tlmsearch.core.validate import (
    MAX_SEED,
    available_memory_bytes,
    check_finite,
    check_fits,
    check_int,
    check_name,
    check_training_fits,
    confined,
    estimate_eval_bytes,
    estimate_training_bytes,
    load_yaml,
    read_text,
    writable_dir,
    writable_file,
)
from tlmsearch.errors import ConfigError


def one_line(exc: pytest.ExceptionInfo[ConfigError]) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 10**400, "1", None, True])
def test_check_finite_refuses_non_finite_and_non_numbers(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"^lr=.* must be a finite number in \(0, inf\)$") as exc:
        check_finite("lr", bad, 0.0, low_open=True)
    one_line(exc)


def test_check_finite_bounds() -> None:
    assert check_finite("x", 3, 0, 10) == 3.0
    assert check_finite("x", 0.0, 0.0) == 0.0
    with pytest.raises(ConfigError, match=r"x=0.0 must lie in \(0, 1\]"):
        check_finite("x", 0.0, 0.0, 1.0, low_open=True)
    with pytest.raises(ConfigError, match=r"x=2 must lie in \[0, 1\]"):
        check_finite("x", 2, 0, 1)


@pytest.mark.parametrize(
    ("value", "low", "high", "message"),
    [
        (10**23, 0, MAX_SEED, "seed=1e+23 must be an integer in [0, 4294967295]"),
        (0, 1, 8, "seed=0 must be a positive integer, at most 8"),
        (2.0, 1, 8, "seed=2.0 must be a positive integer"),
        (True, 0, 8, "seed=True must be an integer in [0, 8]"),
        ("3", 0, 8, "seed='3' must be"),
    ],
)
def test_check_int(value: object, low: int, high: int, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        check_int("seed", value, low, high)
    assert one_line(exc).startswith(message)
    assert check_int("seed", 5, 0, 8) == 5


@pytest.mark.parametrize("name", ["run1", "a.b_c-d", "X", "9lives"])
def test_safe_names_pass(name: str) -> None:
    assert check_name("--name", name) == name


@pytest.mark.parametrize("name", ["x\n", "", ".", "..", "-rf", "a/b", "a b", "tab\t", "é", "a\x00", "x" * 101, 3])
def test_unsafe_names_are_refused(name: object) -> None:
    with pytest.raises(ConfigError, match="is not a safe name") as exc:
        check_name("--name", name)
    one_line(exc)  # the control character is shown escaped, not printed


def test_writable_file(tmp_path: Path) -> None:
    assert writable_file(tmp_path / "p.html", "--plot") == tmp_path / "p.html"
    with pytest.raises(ConfigError, match="is a directory; give a file name"):
        writable_file(tmp_path, "--plot")
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        writable_file(tmp_path / "f" / "p.html", "--plot")
    with pytest.raises(ConfigError, match="does not exist .* create it first"):
        writable_file(tmp_path / "no" / "p.html", "--plot")
    assert writable_file(tmp_path / "no" / "p.html", "--out", create_parents=True)
    with pytest.raises(ConfigError, match="not a usable path"):
        writable_file("a\x00b", "--out")


def test_unwritable_places_are_named() -> None:
    # /proc refuses new files even to root, to whom os.access would say yes
    with pytest.raises(ConfigError, match=r"^--plot: cannot write into /proc .*choose a writable place$"):
        writable_file("/proc/p.html", "--plot")
    with pytest.raises(ConfigError, match="--runs-dir: cannot write into /proc"):
        writable_dir("/proc/runs", "--runs-dir")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_is_refused(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="cannot write into"):
            writable_file(ro / "x.html", "--plot")
    finally:
        ro.chmod(0o700)


def test_writable_dir(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a directory"):
        writable_dir(tmp_path / "f", "--cache-dir")
    with pytest.raises(ConfigError, match="is a file, so .* cannot be created below it"):
        writable_dir(tmp_path / "f" / "sub", "--cache-dir")
    target = tmp_path / "a" / "b"
    assert writable_dir(target, "--runs-dir") == target and not target.exists()
    writable_dir(target, "--runs-dir", create=True)
    assert target.is_dir()
    assert not any(p.name.startswith(".tlmsearch-probe") for p in tmp_path.rglob("*"))


def test_read_text(tmp_path: Path) -> None:
    good = tmp_path / "c.yaml"
    good.write_text("name: é\n", encoding="utf-8")
    assert read_text(good, "--config") == "name: é\n"
    with pytest.raises(ConfigError, match="is a directory, expected a text file"):
        read_text(tmp_path, "trials.jsonl")
    with pytest.raises(ConfigError, match="does not exist"):
        read_text(tmp_path / "none", "--config")
    (tmp_path / "bin").write_bytes(b"ab\x00cd")
    with pytest.raises(ConfigError, match=r"is binary, not text \(NUL byte at offset 2\)"):
        read_text(tmp_path / "bin", "trials.jsonl")
    (tmp_path / "latin").write_bytes(b"ok\nna\xefve\n")
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xef at offset 5, line 2\)") as exc:
        read_text(tmp_path / "latin", "--config")
    one_line(exc)
    with pytest.raises(ConfigError, match="more than the 4 a text file"):
        read_text(good, "--config", max_bytes=4)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1, 2", "invalid YAML at line 1, column 9"),
        ("a: b: c", "invalid YAML at line 1"),
        # nested lists take the parser about a second to reach the same RecursionError as the
        # nested mappings below (a fiftieth of that): the development loop checks the mappings
        pytest.param("[" * 5000 + "]" * 5000, "nested too deeply", marks=pytest.mark.slow),
        ("{a: " * 5000 + "1" + "}" * 5000, "nested too deeply"),
        ("\t- x", "invalid YAML"),
    ],
)
def test_load_yaml_errors_are_one_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as exc:
        load_yaml(text, "--model")
    assert one_line(exc).startswith("--model: ")


def test_load_yaml_reads_values() -> None:
    assert load_yaml("a: 1\nb: [x, 2.5]\n", "x") == {"a": 1, "b": ["x", 2.5]}
    assert load_yaml("", "x") is None


def test_confined(tmp_path: Path) -> None:
    root = tmp_path / "run"
    root.mkdir()
    assert confined(root, "trials", "t_1") == (root / "trials" / "t_1").resolve()
    for parts in (("../../..",), ("a", "../../b"), ("/etc/passwd",), ("",), ("a\x00",), (None,)):
        with pytest.raises(ConfigError, match="refusing it") as exc:
            confined(root, *parts)
        one_line(exc)
    (root / "link").symlink_to(tmp_path)  # a link inside the root that points out of it
    with pytest.raises(ConfigError, match="leads outside"):
        confined(root, "link", "x")


def tiny_model(**kw: object) -> ModelConfig:
    base: dict[str, object] = dict(
        arch="transformer", d_model=32, n_layers=2, n_heads=4, mlp_widths=(64, 64), seq_len=16
    )
    base.update(kw)
    return ModelConfig(**base)  # type: ignore[arg-type]


def test_estimate_training_bytes_counts_params_and_activations() -> None:
    m = tiny_model()
    params = 256 * 32 + 2 * (4 * 32 * 32 + 3 * 32 * 64 + 2 * 32) + 32
    assert estimate_training_bytes(m, 0, 16) == 16 * params  # no tokens: weights, grads, AdamW
    one = estimate_training_bytes(m, 1, 16) - 16 * params
    assert estimate_training_bytes(m, 8, 16) - 16 * params == 8 * one  # linear in the batch
    assert estimate_training_bytes(m, 1, 16, "bfloat16") < estimate_training_bytes(m, 1, 16)
    untied = estimate_training_bytes(tiny_model(tie_embeddings=False), 0, 16)
    assert untied - 16 * params == 16 * 256 * 32
    assert estimate_eval_bytes(10, 15) == 10 * 16 * 8


def test_a_huge_model_is_refused_with_its_estimate() -> None:
    m = tiny_model(n_layers=2, mlp_widths=(10**9, 10**9), d_model=1024, n_heads=8)
    need = estimate_training_bytes(m, 16, 16)
    assert need > 100 * 2**30  # 2e9 hidden units x 3 x 1024 weights x 16 bytes
    message = r"training needs about [0-9.]+ TiB of memory but only 8.0 GiB is available; use a smaller"
    with pytest.raises(ConfigError, match=message) as exc:
        check_fits(need, 8 * 2**30)
    one_line(exc)
    check_fits(need, None)  # unknown memory: no refusal
    check_fits(estimate_training_bytes(tiny_model(), 16, 16), 8 * 2**30)


def test_available_memory_is_positive_here() -> None:
    avail = available_memory_bytes()
    assert avail is None or avail > 0


def test_check_training_fits_counts_the_evaluation_windows() -> None:
    from tlmsearch.core.base import TrainConfig

    m = tiny_model()
    small = TrainConfig(batch_size=4, eval_windows=8)
    need = check_training_fits(m, small, available=2**30)
    assert need == estimate_training_bytes(m, 4, 16) + estimate_eval_bytes(8, 16)
    many = TrainConfig(batch_size=4, eval_windows=2**20)
    with pytest.raises(ConfigError, match="this trial needs about 136.8 MiB of memory but only 64.0 MiB"):
        check_training_fits(m, many, available=64 * 2**20)
