"""Searches on a real multi-node Ray cluster on this machine (no mocks).

`ray.cluster_utils.Cluster` starts a head node and a worker node as separate Ray nodes (each
its own raylet, object store and worker processes; one GCS on the head), with one CPU each; the
worker also declares one (fake) GPU. The driver joins through the public API,
`tlmsearch.search(cfg, address=cluster.address)`, exactly as on a real cluster.

Where each trial ran is read from its record (the Ray node id, the devices and the retries the
worker reported); Tune's own `node_ip` cannot tell two nodes on one host apart. What a trial
asked for comes from Tune's saved experiment state, and what Ray reserved from its placement
groups.

Trial storage: one search puts its checkpoints in a separate folder every node sees
(`storage=`, as a shared filesystem would be); another is refused, before any trial, because a
third node started in a mount namespace of its own (`unshare -m`, a tmpfs over the storage
folder) cannot see the marker file the driver wrote there: a real unshared filesystem.

Everything started here is stopped at the end, and the last test checks that no process of
this cluster (found by its private temp directory) and no child of the test process is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find processes"),
]

OBJECT_STORE = 80 * 1024**2


# ----------------------------------------------------------------------------- processes


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[1])


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "?"


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid in _all_pids():
        children.setdefault(_ppid(pid), []).append(pid)
    out: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out and _state(child) != "Z":
                out.add(child)
                todo.append(child)
    return out


def _processes_of(temp_dir: str) -> list[str]:
    me = os.getpid()
    return [f"{pid} {_cmdline(pid)[:160]}" for pid in _all_pids() if pid != me and temp_dir in _cmdline(pid)]


# ----------------------------------------------------------------------------- the cluster


def _ray_address_file() -> Path:
    from ray._common.utils import get_ray_address_file

    return Path(get_ray_address_file(None))


class LocalCluster:
    """A head node (1 CPU) and a worker node (1 CPU, 1 fake GPU) on this machine."""

    def __init__(self) -> None:
        import ray
        from ray.cluster_utils import Cluster

        if ray.is_initialized():  # the integration tests' shared local Ray: this driver joins the cluster instead
            ray.shutdown()
        self.children_before = _descendants(os.getpid())
        self.temp_dir = tempfile.mkdtemp(prefix="tlmk")  # short: Ray's socket paths must fit 107 bytes
        self._env = {k: os.environ.get(k) for k in ("RAY_USAGE_STATS_ENABLED",)}
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        common = {"object_store_memory": OBJECT_STORE, "temp_dir": self.temp_dir}
        self._address_file = _ray_address_file()
        self._previous_address = self._address_file.read_text() if self._address_file.exists() else None
        self.cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False, **common}
        )
        # Cluster advertises its head in Ray's machine-wide "current cluster" file, so any other
        # `ray.init()` on this machine (another test run, a local search) would join it and fail
        # ("num_cpus ... must not be provided"); the driver here passes the address explicitly
        self._restore_address_file()
        self.worker = self.cluster.add_node(num_cpus=1, num_gpus=1, **common)
        self.cluster.wait_for_nodes()
        self.gcs_address = self.address
        self.head_id = self.cluster.head_node.node_id
        self.worker_id = self.worker.node_id
        self.stopped = False

    def _restore_address_file(self) -> None:
        f = self._address_file
        current = f.read_text().strip() if f.exists() else None
        if current == self.address or (current is None and self._previous_address is not None):
            if self._previous_address is None:
                f.unlink(missing_ok=True)
            else:
                f.write_text(self._previous_address)

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def stop(self) -> None:
        if self.stopped:
            return
        import ray

        self.stopped = True
        ray.shutdown()
        self.cluster.shutdown()  # deletes the "current cluster" file: put back what was there
        self._restore_address_file()
        for key, value in self._env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    c = LocalCluster()
    try:
        yield c
    finally:
        c.stop()
        shutil.rmtree(c.temp_dir, ignore_errors=True)


def _config(name: str, runs_dir: Path, **changes: Any) -> Any:
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.tuning import SearchConfig

    # 40 steps: where trials ran and where their checkpoints went need whole trials, not long ones
    # (the node-kill test asks for its own, long enough to be caught mid-trial)
    train = TrainConfig(steps=changes.pop("steps", 40), eval_interval=changes.pop("eval_interval", 20), eval_windows=4)
    fields: dict[str, Any] = {"trials": 4, "noise_seeds": 0, **changes}
    return SearchConfig(
        name=name, runs_dir=str(runs_dir), preset="tiny", sampler="random", scheduler="none", space="knots",
        train=train, data=DataConfig(corpus="pydoc"), **fields,
    )  # fmt: skip


def _actors() -> list[dict[str, Any]]:
    """Every actor the GCS knows, alive or dead: pid, node id, state (Ray's state API needs the
    dashboard, which `ray[tune]` does not install, so this reads the GCS actor table)."""
    from ray._private.state import actors

    return [
        {"pid": a["Pid"], "node_id": a["Address"]["NodeID"], "state": a["State"], "class": a["ActorClassName"]}
        for a in actors().values()
    ]


def _placements(run_dir: Path, tune_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """trial id -> where it ran (node id, devices, resources and retries, from its record), what
    it asked for and how far its last run got (from Tune's saved experiment state)."""
    from ray import tune

    from tlmsearch.rundir.records import read_records

    analysis = tune.ExperimentAnalysis(str(tune_dir or run_dir / "tune"))
    records = {r.trial_id: r for r in read_records(run_dir)}
    out = {}
    for trial in analysis.trials:
        result = trial.last_result or {}
        record = records[trial.trial_id]
        out[trial.trial_id] = {
            "node_id": record.node,
            "devices": record.devices,
            "resources": record.resources,
            "num_failures": record.retries,
            "requested": trial.placement_group_factory.bundles,
            "iteration": result.get("training_iteration"),
            "since_restore": result.get("iterations_since_restore"),
        }
    return out


def _gpu_groups() -> list[dict[str, Any]]:
    """The placement groups (one per trial) that reserved a GPU: their bundles and nodes."""
    from ray.util import placement_group_table

    return [pg for pg in placement_group_table().values() if any("GPU" in b for b in pg["bundles"].values())]


# ----------------------------------------------------------------------------- tests


def test_gpu_trials_only_on_the_gpu_node_with_their_fraction(cluster: LocalCluster, tmp_path: Path) -> None:
    import tlmsearch

    cfg = _config("gpu", tmp_path, cpus_per_trial=0.5, gpus_per_trial=0.5)
    free_gpu: set[float] = set()  # the cluster's unreserved GPU, sampled while the search runs
    done = threading.Event()

    def sample() -> None:
        import ray

        while not done.is_set():
            if ray.is_initialized():
                free_gpu.add(round(ray.available_resources().get("GPU", 0.0), 3))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        study = tlmsearch.search(cfg, address=cluster.address, progress=False)
    finally:
        done.set()
        sampler.join(timeout=10)
    # reservations come in halves of the one GPU, and two trials did hold it together
    assert free_gpu <= {1.0, 0.5, 0.0} and 0.0 in free_gpu, free_gpu
    records = study.records
    assert len(records) == 4 and len({r.trial_id for r in records}) == 4
    where = _placements(study.run_dir)
    for trial_id, w in where.items():
        assert w["node_id"] == cluster.worker_id, (trial_id, w)
        assert w["requested"] == [{"CPU": 0.5, "GPU": 0.5}], (trial_id, w)
        assert w["resources"] == {"CPU": 0.5, "GPU": 0.5}, (trial_id, w)  # recorded: half of the GPU
        assert w["devices"] == ("GPU 0",), (trial_id, w)  # the worker's one (fake) GPU
    groups = _gpu_groups()  # what Ray actually reserved, and where
    assert len(groups) >= 4, groups
    for pg in groups:
        assert list(pg["bundles"].values()) == [{"CPU": 0.5, "GPU": 0.5}], pg
        assert set(pg["bundles_to_node_id"].values()) <= {cluster.worker_id, "", "ff" * 28}, pg
    print("gpu placement groups:", [(pg["state"], pg["bundles_to_node_id"]) for pg in groups])
    # the GPU is fake: a trial given one asks torch for CUDA, which this CPU build lacks, and the
    # trial is recorded as failed with that reason (placement, not training, is under test here)
    for r in records:
        assert r.status == "failed" and "no CUDA device is available" in (r.reason or ""), r.reason


def test_trials_run_on_both_nodes_and_checkpoint_to_the_shared_storage(cluster: LocalCluster, tmp_path: Path) -> None:
    """The driver joins on the head and its trials run on both nodes, one CPU each. `storage=` a
    folder both nodes see: Tune's state and every trial's checkpoint land there, the run
    directory keeps the records and the journal, and every trial is recorded once."""
    import ray

    import tlmsearch

    shared = tmp_path / "shared"
    study = tlmsearch.search(_config("stored", tmp_path / "runs", storage=str(shared)), address=cluster.address,
                             progress=False)  # fmt: skip
    assert ray.get_runtime_context().get_node_id() == cluster.head_id  # the driver sits on the head
    records = study.records
    assert len(records) == 4 and len({r.trial_id for r in records}) == 4
    assert all(r.status == "complete" and r.full_fidelity for r in records), [(r.status, r.reason) for r in records]
    tune_dir = shared / "stored" / "tune"
    assert not (study.run_dir / "tune").exists() and (study.run_dir / "optuna.log").is_file()
    assert {p.name for p in tune_dir.glob("trial_*")} == {f"trial_{r.trial_id}" for r in records}
    for r in records:  # each trial's checkpoints were in the storage, dropped once it was recorded
        assert not list((tune_dir / f"trial_{r.trial_id}").glob("checkpoint_*")), r.trial_id
    locations = json.loads((study.run_dir / "locations.json").read_text())
    assert locations["tune"] == str(tune_dir) and locations["journal"] == "optuna.log"
    assert not any((shared / "stored" / ".tlmsearch-markers").glob("*"))  # the shared check cleaned up
    where = _placements(study.run_dir, tune_dir)
    assert set(where) == {r.trial_id for r in records}
    assert {w["node_id"] for w in where.values()} == {cluster.head_id, cluster.worker_id}, where
    for w in where.values():
        assert w["requested"] == [{"CPU": 1.0}] and w["resources"] == {"CPU": 1.0}, w
        assert w["devices"] == ("cpu",) and w["num_failures"] == 0, w


def test_worker_node_killed_mid_search_every_trial_recorded_once(cluster: LocalCluster, tmp_path: Path) -> None:
    """Remove the worker node while a trial runs there after its first checkpoint: that trial is
    retried (max_failures) on the head from its checkpoint, and the search still records every
    trial exactly once."""
    import tlmsearch

    cfg = _config("faults", tmp_path, trials=5, steps=600, eval_interval=60, max_failures=2)
    tune_dir = tmp_path / "faults" / "tune"
    killed: dict[str, Any] = {}

    def kill_when_checkpointed() -> None:
        deadline = time.time() + 300
        while time.time() < deadline and not killed:
            try:
                alive = [a for a in _actors() if a["state"] == "ALIVE" and a["node_id"] == cluster.worker_id]
            except Exception:  # noqa: BLE001 - the driver may not be connected yet
                alive = []
            for actor in alive:
                try:  # Tune runs each trial in its own working directory, named trial_<id>
                    trial_dir = Path(os.readlink(f"/proc/{actor['pid']}/cwd")).name
                except OSError:
                    continue
                if trial_dir.startswith("trial_") and any((tune_dir / trial_dir).glob("checkpoint_*")):
                    killed["trial_id"] = trial_dir.removeprefix("trial_")
                    killed["at"] = time.time()
                    cluster.cluster.remove_node(cluster.worker, allow_graceful=False)
                    return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_when_checkpointed, daemon=True)
    killer.start()
    study = tlmsearch.search(cfg, address=cluster.address, progress=False)
    killer.join(timeout=30)
    assert killed, "the worker node never ran a checkpointed trial"
    records = study.records
    ids = [r.trial_id for r in records]
    assert len(ids) == 5 and len(set(ids)) == 5, ids
    assert all(r.status == "complete" and r.full_fidelity for r in records), [(r.status, r.reason) for r in records]
    where = _placements(study.run_dir)
    victim = where[killed["trial_id"]]
    print("killed the worker during trial", killed["trial_id"], "->", victim)
    assert victim["num_failures"] >= 1, victim  # it was retried ...
    assert victim["node_id"] == cluster.head_id, victim  # ... on the remaining node ...
    assert victim["since_restore"] < victim["iteration"], victim  # ... from its checkpoint, not from step 0
    assert {w["node_id"] for w in where.values()} <= {cluster.head_id, cluster.worker_id}, where


def _start_node_with_private_mount(cluster: LocalCluster, hidden: Path) -> subprocess.Popen[bytes]:
    """A third Ray node in a mount namespace of its own where `hidden` is an empty tmpfs: its
    processes see another filesystem at that path than the driver does."""
    ray_cli = Path(sys.executable).parent / "ray"
    start = (
        f"mount -t tmpfs none {hidden} && exec {ray_cli} start --address={cluster.gcs_address} --num-cpus=1 "
        f"--object-store-memory={OBJECT_STORE} --temp-dir={cluster.temp_dir} --disable-usage-stats --block"
    )
    return subprocess.Popen(
        ["unshare", "-m", "sh", "-c", start],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


def _alive_nodes() -> set[str]:
    import ray

    return {n["NodeID"] for n in ray.nodes() if n["Alive"]}


@pytest.mark.skipif(
    shutil.which("unshare") is None or not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs unshare and root (a mount namespace)",
)
def test_storage_a_node_cannot_see_is_refused_naming_the_node(cluster: LocalCluster, tmp_path: Path) -> None:
    import ray

    import tlmsearch
    from tlmsearch.errors import ConfigError

    storage = tmp_path / "head-only"
    storage.mkdir()
    if not ray.is_initialized():
        ray.init(address=cluster.address, log_to_driver=False)
    before = _alive_nodes()
    node = _start_node_with_private_mount(cluster, storage)
    try:
        deadline = time.time() + 120
        while not _alive_nodes() - before:
            assert node.poll() is None, node.communicate()[1].decode()[-2000:]
            assert time.time() < deadline, "the third node did not join"
            time.sleep(0.5)
        (extra,) = _alive_nodes() - before
        cfg = _config("unshared", tmp_path / "runs", storage=str(storage))
        with pytest.raises(ConfigError) as info:
            tlmsearch.search(cfg, address=cluster.address, progress=False)
        text = str(info.value)
        print("refused:", text)
        assert f"is not shared by the cluster: node {extra} " in text and "\n" not in text
        assert "cannot read the marker file the driver wrote" in text
        assert not (tmp_path / "runs" / "unshared").exists()  # refused before the run directory or any trial
        # the command line: one line, exit status 2
        argv = ["search", "--preset", "tiny", "--corpus", "pydoc", "--trials", "2", "--steps", "20",
                "--runs-dir", str(tmp_path / "runs"), "--name", "cli", "--storage", str(storage),
                "--address", cluster.gcs_address, "--quiet"]  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "tlmsearch", *argv], capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, done.stderr[-3000:]
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"node {extra} " in done.stderr and "is not shared by the cluster" in done.stderr
    finally:
        os.killpg(node.pid, signal.SIGTERM)
        try:
            node.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(node.pid, signal.SIGKILL)
            node.wait()
        deadline = time.time() + 90  # the other tests must not see it as a live node
        while ray.is_initialized() and time.time() < deadline and len(_alive_nodes() - before):
            time.sleep(0.5)


def test_nothing_left_running(cluster: LocalCluster) -> None:
    cluster.stop()
    deadline = time.time() + 30
    while time.time() < deadline and (
        _processes_of(cluster.temp_dir) or _descendants(os.getpid()) - cluster.children_before
    ):
        time.sleep(0.5)
    assert _processes_of(cluster.temp_dir) == []
    f = _ray_address_file()  # no later `ray.init()` on this machine is pointed at the dead cluster
    assert not f.exists() or f.read_text().strip() != cluster.gcs_address
    left = _descendants(os.getpid()) - cluster.children_before
    assert not left, [f"{p} {_cmdline(p)[:160]}" for p in left]
