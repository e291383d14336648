"""`tools/mutate.py`: the operators, the seeded sample and one real run on a small module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import mutate

SOURCE = '''"""A docstring the operators leave alone."""
from math import floor

__all__ = ["f"]


def f(x: int, flag: bool = True) -> int:
    """Also left alone."""
    if x < 3 and flag:
        x += 2
    return floor(x * 2) - 1
'''


def test_every_operator_on_a_small_module() -> None:
    found = {(m.line, m.operator, m.before, m.after) for m in mutate.mutants(SOURCE)}
    assert found == {
        (7, "negate", "True", "False"),
        (9, "negate", "x < 3 and flag", "not (x < 3 and flag)"),
        (9, "negate", "x < 3 and flag", "x < 3 or flag"),
        (9, "compare", "x < 3", "x <= 3"),
        (9, "constant", "3", "2"),
        (9, "constant", "3", "4"),
        (10, "arithmetic", "x += 2", "x -= 2"),
        (10, "remove", "x += 2", "pass"),
        (10, "constant", "2", "1"),
        (10, "constant", "2", "3"),
        (11, "return", "return floor(x * 2) - 1", "return None"),
        (11, "arithmetic", "floor(x * 2) - 1", "floor(x * 2) + 1"),
        (11, "arithmetic", "x * 2", "x / 2"),
        (11, "constant", "2", "1"),
        (11, "constant", "2", "3"),
        (11, "constant", "1", "0"),
        (11, "constant", "1", "2"),
    }
    for m in mutate.mutants(SOURCE):
        compile(m.source, "m.py", "exec")  # every mutant is valid Python
        assert m.source != SOURCE


def test_the_sample_is_uniform_seeded_and_in_source_order() -> None:
    every = mutate.mutants(SOURCE)
    a, b = mutate.sample(every, 5, seed=7), mutate.sample(every, 5, seed=7)
    assert a == b and len(a) == 5 and a == sorted(a, key=every.index)
    assert mutate.sample(every, 5, seed=8) != a
    assert mutate.sample(every, 100, seed=7) == every
    # uniform: over many seeds each mutant is drawn about 5/17 of the time
    counts = dict.fromkeys(range(len(every)), 0)
    for seed in range(2000):
        for m in mutate.sample(every, 5, seed):
            counts[every.index(m)] += 1
    assert all(abs(c / 2000 - 5 / len(every)) < 0.04 for c in counts.values())


@pytest.mark.slow
def test_every_module_list_names_existing_tests_and_reasons() -> None:
    lists = sorted(mutate.LISTS.glob("*.toml"))
    assert lists
    for path in lists:
        tests, equivalent = mutate.load_list(path.stem)
        assert tests and all((mutate.ROOT / t).is_file() for t in tests), path
        assert all(reason.strip() for reason in equivalent.values()), path
        module = mutate.ROOT / (path.stem.replace(".", "/") + ".py")
        keys = {m.key for m in mutate.mutants(module.read_text())}
        assert set(equivalent) <= keys, f"{path.name} lists mutants the module no longer has"


@pytest.mark.slow
def test_a_run_kills_what_its_tests_see(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tiny_mod.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "test_tiny_mod.py").write_text(
        "from tiny_mod import double\n\ndef test_it():\n    assert double(3) == 6\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    path, tests = tmp_path / "tiny_mod.py", [str(tmp_path / "test_tiny_mod.py")]
    assert mutate.run_tests("tiny_mod", path, path.read_text(), tests, "", 60)[0] == "passed"
    assert mutate.run_tests("tiny_mod", path, "def double(x):\n    return 3 * x\n", tests, "", 60)[0] == "failed"
    endless = "def double(x):\n    while True:\n        pass\n"
    assert mutate.run_tests("tiny_mod", path, endless, tests, "", 3)[0] == "timeout"
    assert path.read_text() == "def double(x):\n    return 2 * x\n"  # the file on disk never changes


def test_bad_arguments_are_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in (
        # missing files named outside tests/ and tlmsearch/, whose named paths must exist (test_references)
        (["tools/nope.py"], "is not a Python file"),
        (["tlmsearch/errors.py"], "no tests named"),
        (["tlmsearch/errors.py", "--tests", "tools/test_none.py"], "no such test file"),
        (["tlmsearch/errors.py", "--tests", "tests/unit/test_api.py", "-n", "0"], "give at least 1 mutant"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            mutate.main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_list_prints_the_sample(capsys: pytest.CaptureFixture[str]) -> None:
    assert mutate.main(["tlmsearch/profiles/budget.py", "-n", "3", "--seed", "1", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("tlmsearch.profiles.budget: ") and "3 sampled with seed 1" in out[0]
    assert len(out) == 4 and all(line.startswith("  line ") for line in out[1:])
