"""A search with 2 data-parallel workers per trial on a real two-node Ray cluster started as users
start one: two `ray start` processes on this machine (a head and a worker node, one CPU each, their
own temporary folder and ports), joined by `tlmsearch search --address`. Each trial's two workers
hold both CPUs of the cluster, so one ran on each node: gloo across two raylets, the records
complete, said to be trained by two workers, with the numbers of the run trained alone.

The cluster is this test's own: started with its own temp dir and free ports, and torn down in a
finalizer by killing the two `ray start` sessions it started (never `ray stop`, which would end
every Ray on the machine)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runs import end_session, read_lines
from ray.util import get_node_ip_address

from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.training.trainer import train

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def node_ports(ports: list[int]) -> list[str]:
    names = ["--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
             "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port"]  # fmt: skip
    return [f"{name}={port}" for name, port in zip(names, ports, strict=True)]


def ray_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env["RAY_AUTH_MODE"] = "disabled"  # `ray start`'s token authentication: a driver here would need the token
    env["OMP_NUM_THREADS"] = "1"
    return env


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """The head's address; both nodes' sessions killed at the end, whatever happened."""
    temp = Path(tempfile.mkdtemp(prefix="tlm2n-", dir="/tmp"))  # short: Ray's socket paths have a length limit
    ports = free_ports(16)
    head_port = ports[0]
    # this machine's address as Ray sees it: the driver must find a raylet of the cluster on its own address
    ip = get_node_ip_address()
    common = ["--num-cpus=1", "--num-gpus=0", "--object-store-memory=80000000", "--disable-usage-stats",
              "--block"]  # fmt: skip
    started: list[subprocess.Popen] = []
    logs = [(temp / f"node{i}.log").open("w") for i in range(2)]  # `ray start`'s own output, read on a failure
    ray = [sys.executable, "-m", "ray.scripts.scripts", "start"]
    try:
        started.append(subprocess.Popen(
            [*ray, "--head", f"--node-ip-address={ip}", f"--port={head_port}",
             f"--temp-dir={temp}", "--include-dashboard=false", "--min-worker-port=20000",
             "--max-worker-port=20999", *node_ports(ports[2:8]), *common],
            env=ray_env(), start_new_session=True, stdout=logs[0], stderr=subprocess.STDOUT,
        ))  # fmt: skip
        started[-1].stdout_path = logs[0].name  # type: ignore[attr-defined]
        address = f"{ip}:{head_port}"
        wait_for_nodes(address, 1, started)
        started.append(subprocess.Popen(
            [*ray, f"--address={address}", f"--node-ip-address={ip}", "--min-worker-port=21000",
             "--max-worker-port=21999", *node_ports(ports[8:14]), *common],
            env=ray_env(), start_new_session=True, stdout=logs[1], stderr=subprocess.STDOUT,
        ))  # fmt: skip
        started[-1].stdout_path = logs[1].name  # type: ignore[attr-defined]
        wait_for_nodes(address, 2, started)
        yield address
    finally:
        for proc in reversed(started):
            end_session(proc.pid)  # the `ray start` session: its raylet, GCS and workers
            proc.wait(timeout=60)
        for log in logs:
            log.close()
        shutil.rmtree(temp, ignore_errors=True)


def wait_for_nodes(address: str, n: int, started: list[subprocess.Popen], timeout: float = 180) -> None:
    """Until the cluster at `address` has `n` alive nodes (asked from a child process, so that
    this process never joins it)."""
    probe = (
        "import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
        "print(sum(1 for x in ray.nodes() if x['Alive']))"
    )
    deadline = time.time() + timeout
    while time.time() < deadline:
        for proc in started:
            assert proc.poll() is None, Path(proc.stdout_path).read_text()[-2000:]  # type: ignore[attr-defined]
        try:
            got = subprocess.run(
                [sys.executable, "-c", probe, address], env=ray_env(), capture_output=True, text=True, timeout=60
            )
        except subprocess.TimeoutExpired:
            continue
        if got.returncode == 0 and got.stdout.strip().splitlines()[-1:] == [str(n)]:
            return
        time.sleep(1.0)
    raise AssertionError(f"the cluster at {address} did not reach {n} nodes")


def test_a_search_with_two_workers_per_trial_trains_across_the_two_nodes(cluster: str, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "tlmsearch", "search", "--address", cluster, "--name", "two-nodes",
            "--runs-dir", str(tmp_path), "--preset", "tiny", "--corpus", "pydoc", "--trials", "2",
            "--noise-seeds", "0", "--steps", "6", "--eval-interval", "3", "--batch-size", "4",
            "--cpus-per-trial", "1", "--gpus-per-trial", "0", "--workers-per-trial", "2", "--threads", "1",
            "--yes", "--quiet"]  # fmt: skip
    done = subprocess.run(argv, env=ray_env(), capture_output=True, text=True, timeout=900, start_new_session=True)
    assert done.returncode == 0, done.stderr[-3000:]
    records = [TrialRecord.from_dict(r) for r in read_lines(tmp_path / "two-nodes" / "trials.jsonl")]
    assert len(records) == 2 and all(r.status == "complete" for r in records), [r.reason for r in records]
    for record in records:
        assert record.workers == 2 and record.devices == ("cpu", "cpu") and record.resources == {"CPU": 2.0}
        model = record.model_config
        assert model is not None
        alone = train(model, TrainConfig.from_dict(record.train), DataConfig(corpus="pydoc"))
        for mine, one in zip(record.curve, alone.curve, strict=True):
            assert mine["step"] == one["step"] and abs(mine["val_loss"] - one["val_loss"]) < 1e-4
