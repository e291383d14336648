"""verify's options, checked once (`configs.verify.VerifyOptions`): the command line and Python
refuse the same values in one line each, named as each caller wrote them, before anything is
read or trained; `SequentialOptions` carries a sequential verify's numbers. Pure, no Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import search_records, write_run

from tlmsearch.cli import main
from tlmsearch.configs.verify import MAX_LOOKS, SequentialOptions, VerifyOptions
from tlmsearch.core.validate import MAX_SEEDS, MIN_BOOTSTRAP_SEEDS
from tlmsearch.errors import ConfigError
from tlmsearch.tuning.verify import verify

# (Python keywords, the flags that say the same, what the one line says in Python, on the command line)
BAD: list[tuple[dict[str, Any], list[str], str, str]] = [
    ({"top_k": 0}, ["--top-k", "0"], "top_k=0 must be a positive integer", "--top-k=0 must be a positive integer"),
    ({"seeds": 1}, ["--seeds", "1"], "seeds=1 must be 'auto' or an integer", "--seeds=1 must be 'auto' or an integer"),
    ({"pilot_seeds": 1}, ["--pilot-seeds", "1"], "--pilot-seeds=1 must be >= 2", "--pilot-seeds=1 must be >= 2"),
    ({"max_seeds": 4}, ["--max-seeds", "4"], "--max-seeds=4 leaves fewer than 2", "--max-seeds=4 leaves fewer than 2"),
    (
        {"seeds": 5, "method": "bootstrap"},
        ["--seeds", "5", "--interval", "bootstrap"],
        f"at least {MIN_BOOTSTRAP_SEEDS} seeds (got 5)",
        f"at least {MIN_BOOTSTRAP_SEEDS} seeds (got 5)",
    ),
    (
        {"looks": 1},
        ["--looks", "1"],
        "looks=1 must be an integer in [2, 20]",
        "--looks=1 must be an integer in [2, 20]",
    ),
    (
        {"looks": 3, "spending": "nominal"},
        ["--looks", "3", "--spending", "nominal"],
        "spending='nominal' is not allowed; choose one of: obf, pocock",
        "argument --spending: invalid choice: 'nominal'",  # argparse offers the same two
    ),
    (
        {"looks": 3, "seeds": 20, "method": "bootstrap"},
        ["--looks", "3", "--seeds", "20", "--interval", "bootstrap"],
        "looks needs the t tests",
        "--looks needs the t tests",
    ),
    ({"rate_check": 1}, ["--rate-check", "1"], "rate_check=1 is not allowed", "--rate-check=1 is not allowed"),
    ({"pack": "sometimes"}, ["--pack", "sometimes"], "pack='sometimes' is not allowed", "--pack='sometimes' is not"),
]


@pytest.mark.parametrize(("given", "flags", "python", "cli"), BAD)
def test_one_check_names_each_option_as_its_caller_wrote_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: dict[str, Any], flags: list[str], python: str, cli: str
) -> None:
    with pytest.raises(ConfigError) as by_keyword:
        VerifyOptions.of(**given)
    assert python in str(by_keyword.value)
    with pytest.raises(ConfigError, match=python.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        verify(tmp_path / "no-such-run", **given)  # refused before the run directory is read
    run = write_run(tmp_path / "run", search_records())
    try:
        status = main(["verify", str(run), *flags, "--no-report"])
    except SystemExit as exc:  # a choice argparse itself refuses
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert cli in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_values_come_back_normalised() -> None:
    o = VerifyOptions.of(flags=True, seeds=" 6 ", rate_check="off", pack=" Auto ")
    assert (o.seeds, o.rate_check, o.pack, o.auto) == (6, 0, "auto", False)
    assert VerifyOptions.of(rate_check="4").rate_check == 4 and VerifyOptions().auto
    assert VerifyOptions.of(seeds="auto", looks=MAX_LOOKS, max_seeds=MAX_SEEDS).looks == MAX_LOOKS
    with pytest.raises(TypeError, match="unexpected keyword top; allowed: top_k"):
        VerifyOptions.of(top=3)
    with pytest.raises(ConfigError, match="top_k=0"):  # a direct construction is checked too
        VerifyOptions(top_k=0)


def test_the_sequential_options_are_built_once_from_verifys() -> None:
    options = VerifyOptions.of(seeds=12, looks=3, spending="pocock", power=0.9, max_seeds=30)
    design = SequentialOptions.of(options, [4, 5], margin=0.02, alpha=0.1, arch="titans")
    assert design.first == (4, 5) and design.n_seeds == 12 and design.looks == 3
    assert (design.spending, design.power, design.max_seeds, design.margin, design.alpha) == (
        "pocock",
        0.9,
        30,
        0.02,
        0.1,
    )
    assert SequentialOptions.of(VerifyOptions.of(looks=2), [1, 2, 3], margin=0.01, alpha=0.05, arch="x").n_seeds is None
    with pytest.raises(ConfigError, match="needs looks"):
        SequentialOptions.of(VerifyOptions(), [1], margin=0.01, alpha=0.05, arch="transformer")
    with pytest.raises(ConfigError, match="needs its first seeds"):
        SequentialOptions.of(options, [], margin=0.01, alpha=0.05, arch="transformer")


def test_the_edges_of_the_seed_and_look_checks() -> None:
    """Worked by hand: K looks need K + 1 deciding seeds (2 at the first look, one more at each next);
    a pilot needs 2 seeds and the cap 2 fresh ones after it; the defaults are verify's."""
    assert VerifyOptions().power == 0.8 and VerifyOptions().pilot_seeds == 3
    assert VerifyOptions.of(pilot_seeds=2, max_seeds=4).pilot_seeds == 2  # the smallest pilot, 2 fresh seeds
    assert VerifyOptions.of(seeds=4, looks=3).looks == 3  # exactly the 4 seeds 3 looks need
    with pytest.raises(ConfigError) as err:
        VerifyOptions.of(seeds=3, looks=3)
    assert str(err.value) == (
        "looks=3 with seeds=3 would take only 2 look(s): 3 looks need at least 4 seeds (2 at the first look, one "
        "more at each next); allowed: seeds >= 4, or looks 2 to 2"
    )
    with pytest.raises(ConfigError) as err:
        VerifyOptions.of(seeds=2, looks=2)
    assert str(err.value).endswith("allowed: seeds >= 3, or no looks (a fixed plan)"), err.value
    assert VerifyOptions.of(seeds="auto", pilot_seeds=2, max_seeds=6, looks=3).looks == 3  # 4 deciding seeds left
    with pytest.raises(ConfigError, match=r"looks=3 needs at least 4 deciding seeds.*allowed: max_seeds >= 6"):
        VerifyOptions.of(seeds="auto", pilot_seeds=2, max_seeds=5, looks=3)  # 3 left
    assert VerifyOptions.of(seeds="auto", looks=MAX_LOOKS, pilot_seeds=2, max_seeds=2 + MAX_LOOKS + 1).looks == 20
