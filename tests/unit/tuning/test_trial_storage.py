"""The trial storage: writable and shared checks (a fake node runner: no Ray), `StoreDir` on a
local and an in-memory pyarrow filesystem, `locations.json`, and whether a trial fits a node."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tlmsearch.errors import ConfigError
from tlmsearch.rundir.locations import folder, read_locations, record_folder
from tlmsearch.tuning.checkpoints import interrupted_trials
from tlmsearch.tuning.resources import fit_problem
from tlmsearch.tuning.store_dir import StoreDir
from tlmsearch.tuning.trial_storage import MARKERS, check_shared, check_unused, check_writable, probe_marker

# ----------------------------------------------------------------------------- writable


def test_check_writable_creates_the_folder_and_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "shared" / "run"
    check_writable(str(root))
    assert root.is_dir() and list(root.iterdir()) == []
    check_writable(f"file://{tmp_path}/uri/run")  # the same through a file:// URI
    assert (tmp_path / "uri" / "run").is_dir()


def test_check_writable_refuses_a_path_below_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for root in (str(tmp_path / "file" / "run"), f"file://{tmp_path}/file/run"):
        with pytest.raises(ConfigError, match="is a file|not writable") as info:
            check_writable(root)
        assert "\n" not in str(info.value)


def test_check_unused_refuses_a_storage_that_holds_the_run_already(tmp_path: Path) -> None:
    check_unused(str(tmp_path / "run"), "run")
    (tmp_path / "run" / "tune").mkdir(parents=True)
    with pytest.raises(ConfigError, match="storage already holds a search named 'run'"):
        check_unused(str(tmp_path / "run"), "run")


# ----------------------------------------------------------------------------- shared


def fake_runner(views: Mapping[str, Callable[[str], str] | None], answer_without_writing: tuple[str, ...] = ()) -> Any:
    """A NodeRunner for nodes with their own view of the filesystem: `views[node]` maps the marker
    folder's location to the one that node sees (None: the node never answers)."""

    def run(probe: Callable[..., str], args: tuple[Any, ...], timeout_s: float) -> dict[str, str | None]:
        marker_dir, driver_file, token = args
        out: dict[str, str | None] = {}
        for node, view in views.items():
            if view is None:
                out[node] = None
            elif node.split()[0] in answer_without_writing:
                out[node] = ""
            else:
                out[node] = probe(view(marker_dir), driver_file, token, node.split()[0])
        return out

    return run


def same(location: str) -> str:
    return location


def test_shared_storage_passes_and_the_markers_are_removed(tmp_path: Path) -> None:
    check_shared(str(tmp_path), fake_runner({"head (10.0.0.1)": same, "worker (10.0.0.2)": same}), timeout_s=5)
    assert not (tmp_path / MARKERS).exists()


def test_a_node_with_another_filesystem_is_named(tmp_path: Path) -> None:
    shared, elsewhere = tmp_path / "shared", tmp_path / "worker-local-disk"
    shared.mkdir()
    elsewhere.mkdir()
    views = {"head (10.0.0.1)": same, "w2 (10.0.0.2)": lambda loc: loc.replace(str(shared), str(elsewhere))}
    with pytest.raises(ConfigError) as info:
        check_shared(str(shared), fake_runner(views), timeout_s=5)
    text = str(info.value)
    assert text.startswith(f"storage {shared} is not shared by the cluster: node w2 (10.0.0.2) cannot see it")
    assert "cannot read the marker file the driver wrote" in text and "--storage" in text and "\n" not in text
    assert not any((shared / MARKERS).glob("*"))  # the driver's marker is removed on failure too


def test_a_node_that_sees_another_file_at_the_same_path(tmp_path: Path) -> None:
    """Both mount *something* at the path, but not the same thing: the node reads another token."""
    shared, other = tmp_path / "a", tmp_path / "b"

    def view(loc: str) -> str:
        target = Path(loc.replace(str(shared), str(other)))
        target.mkdir(parents=True, exist_ok=True)
        for f in (shared / MARKERS).glob("*-driver"):
            (target / f.name).write_text("another run's token")
        return str(target)

    with pytest.raises(ConfigError, match="node w2 cannot see it: it sees another file at that path"):
        check_shared(str(shared), fake_runner({"head": same, "w2": view}), timeout_s=5)


def test_a_node_that_does_not_answer_and_a_file_the_driver_cannot_see(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"node w3 \(10.0.0.3\) did not answer within 5 s"):
        check_shared(str(tmp_path), fake_runner({"head": same, "w3 (10.0.0.3)": None}), timeout_s=5)
    with pytest.raises(ConfigError, match="the driver cannot see the marker file node w4 wrote there"):
        check_shared(str(tmp_path), fake_runner({"head": same, "w4": same}, answer_without_writing=("w4",)), 5)
    with pytest.raises(ConfigError, match=r"node w5 did not answer .* \(and 1 more\)"):
        check_shared(str(tmp_path), fake_runner({"w5": None, "w6": None}), timeout_s=5)


def test_probe_marker_on_its_own(tmp_path: Path) -> None:
    (tmp_path / "tok-driver").write_text("tok")
    assert probe_marker(str(tmp_path), "tok-driver", "tok", "n1") == ""
    assert (tmp_path / "tok-n1").read_text() == "tok"
    assert "cannot read the marker file" in probe_marker(str(tmp_path / "nope"), "tok-driver", "tok", "n1")


# ----------------------------------------------------------------------------- StoreDir


def _tune_dir(d: StoreDir) -> None:
    """A Tune experiment folder with two unrecorded trials: one with checkpoints 0..2 of trial
    number 4 (the last cut short: no trial.json), one without any."""
    d.fs.create_dir(d.path, recursive=True)
    for i in range(3):
        checkpoint = d / "trial_a" / f"checkpoint_{i:06d}"
        checkpoint.fs.create_dir(checkpoint.path)
        (checkpoint / "checkpoint.pt").write_bytes(b"w")
        (checkpoint / "curve.json").write_bytes(json.dumps([{"step": 10 * (k + 1)} for k in range(i + 1)]).encode())
        if i < 2:
            (checkpoint / "trial.json").write_bytes(b'{"profile": "uniform", "number": 4}')
    (d / "trial_b").fs.create_dir((d / "trial_b").path)


@pytest.mark.parametrize("where", ["local", "file-uri", "in-memory"])
def test_store_dir_serves_the_resume_on_any_filesystem(tmp_path: Path, where: str) -> None:
    import pyarrow.fs

    if where == "in-memory":  # an object-store-like filesystem: no local path behind it
        d = StoreDir("mock://bucket/run/tune", pyarrow.fs._MockFileSystem(), "bucket/run/tune")
    else:
        d = StoreDir.of(str(tmp_path / "tune") if where == "local" else f"file://{tmp_path}/tune")
    assert not d.exists()
    _tune_dir(d)
    assert d.name == "tune" and d.is_dir()
    assert [c.name for c in d.glob("trial_*")] == ["trial_a", "trial_b"]
    if where == "in-memory":  # `interrupted_trials` opens a location; the mock filesystem has none
        return
    found = interrupted_trials(d.location, [])
    assert [(i.config["number"], i.step) for i in found] == [(4, 20)]
    assert found[0].checkpoint == (d / "trial_a" / "checkpoint_000001").location
    assert [c.name for c in d.glob("trial_*")] == ["trial_a"]  # nothing could resume from trial_b
    d.rmtree()
    assert not d.exists()


def test_store_dir_refuses_an_unusable_location() -> None:
    with pytest.raises(ConfigError, match="storage 'nosuch://x' cannot be opened"):
        StoreDir.of("nosuch://x")


# ----------------------------------------------------------------------------- locations


def test_locations_record_where_the_tune_folders_lie(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    assert read_locations(run) == {} and folder(run, "tune") == str(run / "tune")  # older runs
    record_folder(run, "tune", "s3://bucket/tlm/run")
    record_folder(run, "fixed", None)
    data = read_locations(run)
    assert data["tune"] == "s3://bucket/tlm/run/tune" and data["fixed"] == "fixed"
    assert data["journal"] == "optuna.log" and data["records"] == "trials.jsonl" and data["run_dir"] == str(run)
    moved = tmp_path / "moved"
    run.rename(moved)  # relative entries follow the run directory; the storage URI stays
    assert folder(moved, "fixed") == str(moved / "fixed") and folder(moved, "tune") == "s3://bucket/tlm/run/tune"
    (moved / "locations.json").write_text("{not json")
    with pytest.raises(ConfigError, match="locations.json is damaged"):
        folder(moved, "tune")


# ----------------------------------------------------------------------------- resources


@pytest.mark.parametrize(
    ("nodes", "cpus", "gpus", "message"),
    [
        ([{"CPU": 16.0}], 1, 0, None),
        ([{"CPU": 16.0, "GPU": 1.0}], 1, 0.25, None),  # a quarter of a GPU: four trials share one
        ([{"CPU": 2.0}, {"CPU": 8.0, "GPU": 8.0}], 4, 1, None),
        ([{"CPU": 16.0}, {"CPU": 16.0}], 1, 1, r"gpus_per_trial=1 but W 0 GPUs \(no CUDA device\)"),
        ([{"CPU": 16.0}], 1, 0.25, r"gpus_per_trial=0.25 but W 0 GPUs"),
        ([{"CPU": 16.0}, {"CPU": 32.0}], 64, 0, "cpus_per_trial=64 but W 32 CPUs"),
        ([{"CPU": 32.0}, {"CPU": 2.0, "GPU": 1.0}], 8, 1, "no single node has both .*32 CPUs \\+ 0 GPUs"),
        ([], 1, 0, "cpus_per_trial=1 but W 0 CPUs"),
    ],
)
def test_a_trial_must_fit_one_node(nodes: list[dict[str, float]], cpus: float, gpus: float, message: str) -> None:
    problem = fit_problem(nodes, cpus, gpus, "W")
    if message is None:
        assert problem is None
    else:
        import re

        assert problem is not None and re.search(message, problem), problem
