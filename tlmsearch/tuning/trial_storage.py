"""The trial storage of a run (`configs.storage`: the run directory, or the run's folder below
`SearchConfig.storage`), checked before any trial starts: `check_writable` writes and deletes a
marker there; on a Ray cluster `check_shared` proves every alive node sees the same place (the
driver writes a marker, a task pinned to each node reads it and writes its own, the driver reads
those back, with a timeout), naming in one line a node that cannot. The per-node part
(`probe_marker`) runs through a `NodeRunner`: Ray tasks in `ray_node_runner`, anything in tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.storage import join, local_path, trial_root
from tlmsearch.core.validate import writable_dir
from tlmsearch.errors import ConfigError
from tlmsearch.tuning.store_dir import StoreDir, open_filesystem

MARKERS = ".tlmsearch-markers"  # folder of the marker files, inside the run's trial storage
SHARED_TIMEOUT_S = 60.0
_HINT = (
    "give --storage a filesystem path every node mounts at the same place (NFS, Lustre, ...) "
    "or an object-store URI (s3://, gs://)"
)
# runs `probe(*args, node_id)` on every alive node; returns node label -> the probe's answer
# ("" = fine, else what went wrong), or None when the node did not answer within the timeout
NodeRunner = Callable[[Callable[..., str], tuple[Any, ...], float], Mapping[str, str | None]]


def run_root(cfg: SearchConfig, run_dir: Path) -> str:
    """Where the run's Tune folders go: the run's folder below `cfg.storage`, else the run directory."""
    return trial_root(cfg.storage, cfg.name) if cfg.storage else str(run_dir)


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def check_writable(root: str) -> None:
    """Create `root` and write and delete a marker file in it; a one-line ConfigError if not."""
    path = local_path(root)
    if path is not None:
        writable_dir(path, f"storage {root}", create=True)
    fs, fs_path = open_filesystem(root)
    marker = f"{fs_path.rstrip('/')}/.tlmsearch-write-{uuid.uuid4().hex[:12]}"
    try:
        fs.create_dir(fs_path, recursive=True)
        with fs.open_output_stream(marker) as fh:
            fh.write(b"tlmsearch write check\n")
        fs.delete_file(marker)
    except Exception as exc:  # noqa: BLE001 - permission, quota, no such bucket, no network ...
        raise ConfigError(f"storage {root} is not writable ({_first_line(exc)})") from None


def check_unused(root: str, name: str) -> None:
    """A new search must not write into the Tune folder another run left at `root`."""
    tune = StoreDir.of(root) / "tune"
    if tune.exists():
        raise ConfigError(
            f"storage already holds a search named {name!r} ({tune}); choose another --name, or resume that run"
        )


def probe_marker(marker_dir: str, driver_file: str, token: str, node_id: str) -> str:
    """On one node: read the driver's marker and write this node's; "" when both worked."""
    try:
        fs, path = open_filesystem(marker_dir)
    except ConfigError as exc:
        return str(exc)
    try:
        with fs.open_input_stream(f"{path}/{driver_file}") as fh:
            seen = bytes(fh.read()).decode(errors="replace").strip()
    except FileNotFoundError:
        return "it cannot read the marker file the driver wrote (no such file there: another filesystem)"
    except Exception as exc:  # noqa: BLE001 - permission, ...
        return f"it cannot read the marker file the driver wrote ({_first_line(exc)})"
    if seen != token:
        return "it sees another file at that path than the driver wrote (a different filesystem there)"
    try:
        with fs.open_output_stream(f"{path}/{token}-{node_id}") as fh:
            fh.write(token.encode())
    except Exception as exc:  # noqa: BLE001
        return f"it cannot write there ({_first_line(exc)})"
    return ""


def check_shared(root: str, run_on_nodes: NodeRunner, timeout_s: float = SHARED_TIMEOUT_S) -> None:
    """Every node reads what the driver wrote at `root` and the driver reads what each node
    wrote (see the module docstring); a one-line ConfigError naming the first node that fails."""
    token = uuid.uuid4().hex
    marker_dir = join(root, MARKERS)
    fs, path = open_filesystem(marker_dir)
    driver_file = f"{token}-driver"
    try:
        fs.create_dir(path, recursive=True)
        with fs.open_output_stream(f"{path}/{driver_file}") as fh:
            fh.write(token.encode())
        answers = run_on_nodes(probe_marker, (marker_dir, driver_file, token), timeout_s)
        problems = []
        for node, answer in answers.items():
            if answer is None:
                problems.append(f"node {node} did not answer within {timeout_s:g} s")
            elif answer:
                problems.append(f"node {node} cannot see it: {answer}")
            elif not _reads(fs, f"{path}/{token}-{node.split()[0]}", token):
                problems.append(f"the driver cannot see the marker file node {node} wrote there")
    finally:
        _remove_markers(fs, path, token)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(f"storage {root} is not shared by the cluster: {problems[0]}{more}; {_HINT}")


def _reads(fs: Any, path: str, token: str) -> bool:
    try:
        with fs.open_input_stream(path) as fh:
            return bool(bytes(fh.read()).decode(errors="replace").strip() == token)
    except Exception:  # noqa: BLE001
        return False


def _remove_markers(fs: Any, path: str, token: str) -> None:
    import pyarrow.fs

    try:
        for info in fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True)):
            if info.base_name.startswith(token):
                fs.delete_file(info.path)
        if not fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True)):
            fs.delete_dir(path)
    except Exception:  # noqa: BLE001 - markers are tiny; never fail a search over them
        pass


def ray_node_runner(probe: Callable[..., str], args: tuple[Any, ...], timeout_s: float) -> dict[str, str | None]:
    """Run `probe(*args, node_id)` in a task pinned to every alive node of the connected Ray
    cluster (no CPU reserved, so busy nodes answer too); labels are "NODE_ID (IP)"."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(probe)
    refs = {}
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        node_id = node["NodeID"]
        strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
        refs[f"{node_id} ({node.get('NodeManagerAddress', '?')})"] = task.options(scheduling_strategy=strategy).remote(
            *args, node_id
        )
    ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
    done = set(ready)
    out: dict[str, str | None] = {}
    for label, ref in refs.items():
        if ref not in done:
            ray.cancel(ref, force=True)
            out[label] = None
            continue
        try:
            out[label] = ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - the task itself failed on that node
            out[label] = f"the check failed there ({type(exc).__name__}: {_first_line(exc)})"
    return out
