"""The small public API: every name in `tlmsearch.__all__` resolves lazily."""

from __future__ import annotations

import tlmsearch


def test_every_public_name_resolves() -> None:
    for name in tlmsearch.__all__:
        assert getattr(tlmsearch, name) is not None, name


def test_public_functions_are_functions_not_modules() -> None:
    for name in ("train", "search", "load", "profile", "verify", "compare", "build_model", "preset"):
        assert callable(getattr(tlmsearch, name)), name


def test_compare_options_live_in_one_place_and_keywords_still_work(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import dataclasses
    import inspect

    import pytest

    import tlmsearch
    from tlmsearch.errors import UserError
    from tlmsearch.tuning.compare import compare as train_and_compare

    o = tlmsearch.CompareOptions.of(arch="titans", seeds=2)
    assert (o.arch, o.seeds, o.preset) == ("titans", 2, "cpu-s")
    assert tlmsearch.CompareOptions.of(o, seeds=5) == dataclasses.replace(o, seeds=5)  # keywords win
    fields = {f.name for f in dataclasses.fields(tlmsearch.CompareOptions)}
    for fn in (tlmsearch.compare, train_and_compare):  # neither repeats the fields in its signature
        assert not fields & set(inspect.signature(fn).parameters)
    with pytest.raises(TypeError, match="unexpected keyword sedes; allowed: arch, preset"):
        tlmsearch.compare(["uniform"], sedes=3)
    # the old keyword calls reach the same checks (refused before anything trains or is written)
    with pytest.raises(UserError, match="seeds=0 must be an integer from 2 to 1000"):
        tlmsearch.compare(["uniform", "cosine"], arch="transformer", preset="tiny", seeds=0, runs_dir=str(tmp_path))
    with pytest.raises(UserError, match="at least one profile"):
        tlmsearch.compare([], options=o, runs_dir=str(tmp_path))
    assert not any(tmp_path.iterdir())
