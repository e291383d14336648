"""quickstart's flags come from QuickstartConfig (help and defaults written once, beside the
field), and its checks are the config's: the same one line from the CLI and from Python."""

from __future__ import annotations

import dataclasses

import pytest

from tlmsearch.cli import build_parser
from tlmsearch.cli.quickstart import quickstart_options, search_config
from tlmsearch.configs.quickstart import QuickstartConfig
from tlmsearch.errors import ConfigError


def _flags() -> dict:
    top = build_parser()
    sub = next(a for a in top._actions if a.__class__.__name__ == "_SubParsersAction")
    return {o: a for a in sub.choices["quickstart"]._actions for o in a.option_strings}


def test_every_field_is_a_flag_with_its_help_and_default() -> None:
    flags = _flags()
    for field in dataclasses.fields(QuickstartConfig):
        action = flags["--" + field.name.replace("_", "-")]
        assert action.help.startswith(field.metadata["help"])
        assert "(default: " in action.help
    assert "--quiet" in flags


def test_the_flags_give_the_config_and_the_search() -> None:
    args = build_parser().parse_args(["quickstart", "--trials", "6", "--steps", "30", "--seeds", "3", "--name", "q"])
    q = quickstart_options(args)
    assert q == QuickstartConfig(trials=6, steps=30, seeds=3, name="q")
    cfg = search_config(q)
    assert (cfg.trials, cfg.train.steps, cfg.train.eval_interval, cfg.grace_steps, cfg.name) == (6, 30, 10, 10, "q")
    assert search_config(QuickstartConfig()).train.steps == QuickstartConfig().steps


def test_python_gets_the_same_one_line_refusal() -> None:
    with pytest.raises(ConfigError, match=r"^--trials=2 must be >= 4 \(the 4 baselines run first\); --seeds=1 must"):
        QuickstartConfig(trials=2, seeds=1)
    QuickstartConfig(steps=1, tokens_per_param=5.0)  # the steps are derived, not given: no minimum on them
