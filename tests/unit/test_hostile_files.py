# ruff: noqa: E501  (the case tables read best one case per line)
"""Hostile file systems (issue 31): a read-only run directory, a symbolic link loop, a FIFO, a
folder where a file belongs, a link to nothing, given to every command that takes a path.

Each case ends with exit status 2 and one line naming the path (no traceback, never a wait on a
FIFO, Ray never started, no run directory left behind), or, for a command that only reads a
read-only run directory (status, report --out elsewhere, export --stdout), with its answer.
Nothing here trains or starts Ray: every case is refused (or answered) before that.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, SimpleNamespace

import pytest
from analysis_fakes import search_records, write_run
from covering import covering
from fs_shapes import dangling, fifo, folder, loop, read_only

from tlmsearch.cli import main
from tlmsearch.errors import file_system_message

SMALL = ["--preset", "tiny", "--steps", "2", "--eval-windows", "2", "--batch-size", "2"]
SEARCH = ["--trials", "2", "--noise-seeds", "0", "--quiet", *SMALL]


class _Started(BaseException):
    """Training (or Ray) was reached: the case was not refused before it."""


@pytest.fixture
def nothing_trains(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise _Started("Ray was started")

    for target in ("tlmsearch.tuning.runner.start_ray", "tlmsearch.tuning.fixed.start_ray"):
        monkeypatch.setattr(target, refuse)


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A FIFO opened for reading waits for a writer forever: fail the case instead."""

    def timeout(signum: int, frame: FrameType | None) -> None:
        raise _Started("the command waited more than 20 s (a FIFO read?)")

    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def place(tmp_path: Path) -> SimpleNamespace:
    """A runs folder, a good search run in it, and one path of each hostile shape."""
    runs = tmp_path / "runs"
    runs.mkdir()
    run = write_run(runs / "good", search_records())
    return SimpleNamespace(
        tmp=tmp_path,
        runs=str(runs),
        runs_path=runs,
        run=str(run),
        run_path=run,
        loop=str(loop(tmp_path / "loop")),
        fifo=str(fifo(tmp_path / "fifo.yaml")),
        dangling=str(dangling(tmp_path / "dangling")),
        folder=str(folder(tmp_path / "folder.yaml")),
        below_loop=str(tmp_path / "loop" / "x"),
        ro=str(folder(tmp_path / "ro")),
    )


def run_cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code: int, err: str, *words: str) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# (case, argv builder, a word the line must hold: mostly the hostile path itself)
Build = Callable[[SimpleNamespace], list[str]]
PATH_CASES: list[tuple[str, Build, Callable[[SimpleNamespace], str]]] = []
for _shape in ("loop", "fifo", "dangling", "folder", "below_loop"):
    _p: Callable[[SimpleNamespace], str] = lambda p, s=_shape: getattr(p, s)  # noqa: E731
    PATH_CASES += [
        (
            f"train --config {_shape}",
            lambda p, s=_shape: ["train", "--config", getattr(p, s), "--runs-dir", p.runs],
            _p,
        ),
        (
            f"search --config {_shape}",
            lambda p, s=_shape: ["search", "--config", getattr(p, s), "--runs-dir", p.runs, *SEARCH],
            _p,
        ),
        (
            f"study --config {_shape}",
            lambda p, s=_shape: ["study", "--config", getattr(p, s), "--runs-dir", p.runs],
            _p,
        ),
        (
            f"search --space {_shape}",
            lambda p, s=_shape: ["search", "--space", getattr(p, s) + ".py", "--runs-dir", p.runs, *SEARCH],
            _p,
        ),
        (f"status {_shape}", lambda p, s=_shape: ["status", getattr(p, s)], _p),
        (f"report {_shape}", lambda p, s=_shape: ["report", getattr(p, s)], _p),
        (f"export {_shape}", lambda p, s=_shape: ["export", getattr(p, s)], _p),
        (f"verify {_shape}", lambda p, s=_shape: ["verify", getattr(p, s), "--seeds", "2"], _p),
        (f"resume {_shape}", lambda p, s=_shape: ["resume", getattr(p, s)], _p),
    ]
    if _shape != "folder":  # a folder is the right shape for these
        PATH_CASES += [
            (f"train --runs-dir {_shape}", lambda p, s=_shape: ["train", "--runs-dir", getattr(p, s), *SMALL], _p),
            (f"search --runs-dir {_shape}", lambda p, s=_shape: ["search", "--runs-dir", getattr(p, s), *SEARCH], _p),
            (
                f"compare --runs-dir {_shape}",
                lambda p, s=_shape: [
                    "compare",
                    "--families",
                    "uniform",
                    "--seeds",
                    "2",
                    "--runs-dir",
                    getattr(p, s),
                    "--name",
                    "c",
                    *SMALL,
                ],
                _p,
            ),
            (
                f"study --runs-dir {_shape}",
                lambda p, s=_shape: ["study", "--runs-dir", getattr(p, s), "--archs", "transformer"],
                _p,
            ),
            (
                f"train --cache-dir {_shape}",
                lambda p, s=_shape: ["train", "--cache-dir", getattr(p, s), "--runs-dir", p.runs, *SMALL],
                _p,
            ),
            (
                f"data --cache-dir {_shape}",
                lambda p, s=_shape: ["data", "prepare", "pydoc", "--cache-dir", getattr(p, s)],
                _p,
            ),
            (f"report --out {_shape}", lambda p, s=_shape: ["report", p.run, "--out", getattr(p, s)], _p),
            (f"export --out {_shape}", lambda p, s=_shape: ["export", p.run, "--out", getattr(p, s)], _p),
            (
                f"profiles --plot {_shape}",
                lambda p, s=_shape: [
                    "profiles",
                    "--layers",
                    "4",
                    "--base-width",
                    "64",
                    "--family",
                    "cosine",
                    "--plot",
                    getattr(p, s),
                ],
                _p,
            ),
        ]


@pytest.mark.parametrize(
    "case", covering([c[0] for c in PATH_CASES], lambda c: c.rsplit(" ", 1)[0], lambda c: c.rsplit(" ", 1)[1])
)
def test_a_hostile_path_is_one_line_naming_it(
    case: str, place: SimpleNamespace, capsys: pytest.CaptureFixture[str], nothing_trains: None, no_hang: None
) -> None:
    _, build, word = next(c for c in PATH_CASES if c[0] == case)
    code, _, err = run_cli(capsys, build(place))
    path = word(place)
    one_line(code, err)
    assert Path(path).name.removesuffix(".py") in err, err
    assert [p.name for p in place.runs_path.iterdir()] == ["good"], "a refused command left a run directory behind"


# ----------------------------------------------------------------------------- the files of a run directory

RUN_FILES: list[tuple[str, str]] = [
    ("search.yaml", "loop"), ("search.yaml", "fifo"), ("search.yaml", "folder"),
    ("trials.jsonl", "loop"), ("trials.jsonl", "fifo"), ("trials.jsonl", "folder"),
    ("locations.json", "loop"), ("locations.json", "fifo"), ("locations.json", "folder"),
    ("verify.json", "loop"), ("verify.json", "fifo"), ("verify.json", "folder"),
    ("noise_floor.json", "loop"), ("noise_floor.json", "fifo"), ("noise_floor.json", "folder"),
]  # fmt: skip
SHAPES = {"loop": loop, "fifo": fifo, "folder": folder, "dangling": dangling}


RUN_FILE_CASES = [(c, n, s) for n, s in RUN_FILES for c in ("status", "report", "export", "verify", "resume")]


@pytest.mark.parametrize(("command", "name", "shape"), covering(RUN_FILE_CASES, 0, 1, 2, ids="-".join))
def test_a_run_file_of_a_hostile_shape_is_named_or_warned_about(
    command: str,
    name: str,
    shape: str,
    place: SimpleNamespace,
    capsys: pytest.CaptureFixture[str],
    nothing_trains: None,
    no_hang: None,
) -> None:
    target = place.run_path / name
    target.unlink(missing_ok=True)
    SHAPES[shape](target)
    argv = {"verify": ["verify", place.run, "--seeds", "2"], "export": ["export", place.run, "--stdout"]}
    code, _, err = run_cli(capsys, argv.get(command, [command, place.run]))
    if code == 0:  # answered: then it says, on stderr, that the file is not one (never silently)
        assert name in err and "not a" in err, err
    else:
        one_line(code, err, name)


# ----------------------------------------------------------------------------- read-only run directories


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "{run}"],
        ["status", "{run}", "--json"],
        ["report", "{run}", "--out", "{out}"],
        ["report", "{run}", "--out", "{out}", "--json"],
        ["export", "{run}", "--stdout"],
        ["export", "{run}", "--out", "{out}"],
    ],
    ids=" ".join,
)
def test_a_read_only_run_is_readable_by_every_command_that_only_reads(
    argv: list[str], place: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    out = place.tmp / "elsewhere"
    with read_only(place.run_path):
        code, _, err = run_cli(capsys, [a.format(run=place.run, out=out) for a in argv])
    assert code == 0, err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["report", "{run}"], ["read-only", "--out DIR"]),
        (["export", "{run}"], ["read-only", "--stdout or --out DIR"]),
        (["report", "{run}", "--out", "{ro}"], ["--out", "{ro}"]),
        (["export", "{run}", "--out", "{ro}/x"], ["--out", "{ro}"]),
        (["verify", "{run}", "--seeds", "2"], ["{run}"]),
        (["resume", "{run}"], ["{run}"]),
        (["train", "--runs-dir", "{ro}", *SMALL], ["{ro}"]),
        (["search", "--runs-dir", "{ro}", *SEARCH], ["{ro}"]),
        (["compare", "--families", "uniform", "--seeds", "2", "--runs-dir", "{ro}", *SMALL], ["{ro}"]),
        (["study", "--runs-dir", "{ro}", "--archs", "transformer"], ["{ro}"]),
        (["data", "prepare", "pydoc", "--cache-dir", "{ro}"], ["{ro}"]),
        (["profiles", "--layers", "4", "--base-width", "64", "--family", "cosine", "--plot", "{ro}/p.html"], ["{ro}"]),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) and v and v[0][0] != "{" and "-" not in v[0][:1] else "",
)
def test_writing_into_a_read_only_place_is_one_line_naming_it(
    argv: list[str],
    words: list[str],
    place: SimpleNamespace,
    capsys: pytest.CaptureFixture[str],
    nothing_trains: None,
) -> None:
    fill = {"run": place.run, "ro": place.ro}
    before = sorted(p.name for p in place.run_path.iterdir())
    with read_only(place.run_path, Path(place.ro)):
        code, _, err = run_cli(capsys, [a.format(**fill) for a in argv])
    one_line(code, err, *(w.format(**fill) for w in words))
    assert sorted(p.name for p in place.run_path.iterdir()) == before


# ----------------------------------------------------------------------------- a full disk, and the one place


def test_a_full_disk_while_writing_a_run_file_is_one_line_naming_it(
    place: SimpleNamespace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Path.write_text

    def full(self: Path, *args: object, **kwargs: object) -> int:
        if self.parent == place.run_path:
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", full)
    code, _, err = run_cli(capsys, ["report", place.run])
    line = one_line(code, err, "no space left on the device", "free some space")
    assert f"{place.run}/summary" in line or f"{place.run}/report" in line, line
    assert ".tmp" not in line  # the file meant, not its temporary twin
    assert not [p for p in place.run_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["status", "{run}"], ["export", "{run}", "--stdout"], ["report", "{run}", "--json"]])
def test_output_to_a_full_device_is_one_line(place: SimpleNamespace, argv: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "tlmsearch", *(a.format(run=place.run) for a in argv)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"tlmsearch {argv[0]}: error: cannot write the output: no space left on the device; "
        "free some space or choose another place"
    ]


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.EACCES, "permission denied"),
        (errno.EROFS, "read-only"),
        (errno.ELOOP, "symbolic link loop"),
        (errno.ENOSPC, "no space left"),
        (errno.EDQUOT, "quota"),
        (errno.EISDIR, "a folder where a file belongs"),
        (errno.ENOTDIR, "a file where a folder belongs"),
        (errno.ENXIO, "FIFO"),
    ],
)
def test_file_system_errors_become_one_line_naming_the_path(code: int, words: str) -> None:
    line = file_system_message(OSError(code, os.strerror(code), "/some/where"))
    assert line is not None and line.startswith("/some/where: ") and words in line and "\n" not in line


def test_anything_else_keeps_its_traceback() -> None:
    assert file_system_message(OSError(errno.ENOENT, "No such file or directory", "/x")) is None
    assert file_system_message(OSError(errno.EACCES, "Permission denied")) is None  # no path to name
    assert file_system_message(RuntimeError("something else")) is None
    assert file_system_message(ValueError("a bug")) is None
    loop = file_system_message(RuntimeError("Symlink loop from '/a/b'"))  # Python 3.11's pathlib
    assert loop == "/a/b: a symbolic link loop; fix or remove the link"


# ----------------------------------------------------------------------------- the files of a study

REFERENCE_STUDY = Path(__file__).resolve().parents[2] / "runs" / "reference" / "study"


STUDY_FILE_CASES = [
    (c, n, s)
    for c in ("status", "report", "resume")
    for n in ("study.yaml", "study_state.json")
    for s in ("folder", "loop", "fifo")
]


@pytest.mark.skipif(not (REFERENCE_STUDY / "study.yaml").is_file(), reason="the reference study is not committed")
@pytest.mark.parametrize(("command", "name", "shape"), covering(STUDY_FILE_CASES, 0, 1, 2, ids="-".join))
def test_a_study_file_of_a_hostile_shape_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nothing_trains: None, no_hang: None,
    command: str, name: str, shape: str,
) -> None:  # fmt: skip
    import shutil

    study = tmp_path / "study"
    shutil.copytree(REFERENCE_STUDY, study)
    (study / name).unlink()
    SHAPES[shape](study / name)
    code, _, err = run_cli(capsys, [command, str(study)])
    one_line(code, err, f"{study / name}", "not a regular file")
