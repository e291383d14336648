"""Does a trial fit? The CPUs and GPUs one trial asks for, against this machine or the cluster.

Ray queues a trial whose resources no node has for ever (with a warning every few seconds in
its log), so a search asking for `--gpus-per-trial 1` on a cluster without a GPU, or more CPUs
than any node has, would hang without a word. `check_resources` refuses it in one line before
any trial starts. A trial runs on one node: it fits when a single node has both the CPUs and
the GPUs it asks for (a fraction of a GPU needs a node with at least that fraction of one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tlmsearch.configs.search import SearchConfig
from tlmsearch.errors import ConfigError


def local_gpus() -> int:
    """CUDA devices torch sees on this machine (0 without torch's CUDA)."""
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001
        return 0


def trial_device_kind(cfg: SearchConfig) -> str:
    """The kind of device ("cpu" or "cuda") a trial of `cfg` trains on: "cuda" when asked for
    by name, or with device "auto" and a share of a GPU per trial (Ray hides GPUs from a trial
    that asked for none)."""
    gpu = cfg.train.device == "cuda" or (cfg.train.device == "auto" and cfg.gpu_share > 0)
    return "cuda" if gpu else "cpu"


def check_device(cfg: SearchConfig, address: str | None = None) -> None:
    """Refuse a trial device this machine cannot give, with `train`'s own check
    (`training.hardware.resolve_device`: device cuda without a CUDA device) before anything is
    written or trained. On a cluster (`address`) the nodes' GPUs decide, not the driver's."""
    if address or cfg.train.device != "cuda":
        return
    from tlmsearch.training.hardware import resolve_device  # lazy: heavy (torch)

    resolve_device(cfg.train.device)


def fit_problem(nodes: Sequence[Mapping[str, float]], cpus: float, gpus: float, where: str) -> str | None:
    """Why a trial asking for `cpus` CPUs and `gpus` GPUs fits on none of `nodes` (their Ray
    resources, e.g. {"CPU": 8, "GPU": 1}); None when one node has both."""
    if any(n.get("CPU", 0.0) >= cpus and n.get("GPU", 0.0) >= gpus for n in nodes):
        return None
    most_cpus = max((n.get("CPU", 0.0) for n in nodes), default=0.0)
    most_gpus = max((n.get("GPU", 0.0) for n in nodes), default=0.0)
    if cpus > most_cpus:
        return f"cpus_per_trial={cpus:g} but {where} {most_cpus:g} CPUs"
    if gpus > most_gpus:
        return f"gpus_per_trial={gpus:g} but {where} {most_gpus:g} GPUs" + ("" if most_gpus else " (no CUDA device)")
    sizes = ", ".join(f"{n.get('CPU', 0.0):g} CPUs + {n.get('GPU', 0.0):g} GPUs" for n in nodes)
    return f"cpus_per_trial={cpus:g} with gpus_per_trial={gpus:g}: no single node has both (nodes: {sizes})"


def check_resources(cfg: SearchConfig, address: str | None = None) -> None:
    """A trial must fit on one node: this machine, or one alive node of the joined cluster."""
    check_device(cfg, address)
    if address:
        nodes, where = ray_nodes(), "the largest Ray node has"
    else:
        from tlmsearch.training.hardware import cpu_count  # lazy: heavy (torch)

        nodes, where = [{"CPU": float(cpu_count()), "GPU": float(local_gpus())}], "this machine has"
    problem = fit_problem(nodes, cfg.cpus_per_trial, cfg.gpu_share, where)
    if problem and cfg.workers_per_trial > 1:  # the figures are one worker's: say what the trial asks
        n = cfg.workers_per_trial
        problem += (
            f" (per worker: a trial of {n} workers asks for {n * cfg.gpu_share:g} GPUs and "
            f"{n * cfg.cpus_per_trial:g} CPUs)"
        )
    problem = problem or workers_problem(nodes, cfg.workers_per_trial, cfg.cpus_per_trial, cfg.gpu_share)
    if problem:
        raise ConfigError(problem)


def ray_nodes() -> list[dict[str, float]]:
    """The resources of every alive node of the Ray this process is connected to."""
    import ray

    return [dict(n.get("Resources", {})) for n in ray.nodes() if n.get("Alive")]


def workers_problem(nodes: Sequence[Mapping[str, float]], workers: int, cpus: float, gpus: float) -> str | None:
    """Why the `workers` of one trial (each `cpus` CPUs and `gpus` GPUs, each on some node) do
    not fit on `nodes` together (Ray Train starts a trial's workers all at once); None when they do."""
    if workers == 1:
        return None
    fits = sum(int(min(n.get("CPU", 0.0) // cpus, n.get("GPU", 0.0) // gpus if gpus else 1e9)) for n in nodes)
    if fits >= workers:
        return None
    return (
        f"workers_per_trial={workers} with cpus_per_trial={cpus:g} and gpus_per_trial={gpus:g} per worker, but the "
        f"nodes hold only {fits} such workers at once"
    )
