"""`--keep-checkpoints` reaches the config each training command runs with (search, verify,
compare, study, quickstart); without it, ended trials' checkpoints are deleted. Parsing only."""

from __future__ import annotations

import pytest

from tlmsearch.cli import build_parser


@pytest.mark.parametrize("given", [False, True])
def test_search_study_compare_and_quickstart_carry_the_flag(given: bool) -> None:
    from tlmsearch.cli.compare import compare_arguments
    from tlmsearch.cli.quickstart import quickstart_config
    from tlmsearch.cli.search import build_config as search_config
    from tlmsearch.cli.study import build_config as study_config
    from tlmsearch.configs.compare import CompareOptions

    flag = ["--keep-checkpoints"] if given else []
    parser = build_parser()
    assert search_config(parser.parse_args(["search", "--preset", "tiny", *flag])).keep_checkpoints is given
    study = study_config(parser.parse_args(["study", "--preset", "tiny", *flag]))
    assert study.search.keep_checkpoints is given and study.search_config("transformer").keep_checkpoints is given
    kw = compare_arguments(parser.parse_args(["compare", "--families", "uniform", *flag]))
    assert CompareOptions.of(**kw).keep_checkpoints is given
    assert quickstart_config(parser.parse_args(["quickstart", "--name", "q", *flag])).keep_checkpoints is given


def test_verify_keeps_the_searchs_setting_unless_given() -> None:
    parser = build_parser()
    assert parser.parse_args(["verify", "runs/x"]).keep_checkpoints is None  # the search's setting
    assert parser.parse_args(["verify", "runs/x", "--keep-checkpoints"]).keep_checkpoints is True
