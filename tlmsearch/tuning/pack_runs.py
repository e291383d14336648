"""Fixed trials trained as packs (`--pack auto|on` of verify and its rate check, compare, the
noise floor, a study's transfer; issue 29): the trials of one shape (profiles x seeds of one
budget) side by side in one process, one Ray task per pack.

`pack_groups` groups the Tune configs of fixed trials (`runner.fixed_config`) by shape and rate
and asks `pack.auto.choose` per group which packs they form on the slots Ray runs trials at once
(`on`: all of them, at least one pack a slot; `auto`: packs of a size measured faster, where that
beats separate trials); `run_packs` trains them as Ray tasks holding one trial's resources each
(`cpus_per_trial`, `gpus_per_trial`); `runner.fit_configs` trains the rest as separate trials.

Each member is a `TrialSpec` resolved on the driver (`specs.spec_of`, as a separate trial's is);
a pack's task (`train_members`) trains exactly them and returns each member's `TrialOutcome`
(curve, final metrics with parameter counts, placement), the one a Ray trial reports. Each
member becomes one record, `recorder.record_of(spec, outcome)` as for a separate trial, so a
packed record has exactly the fields of an unpacked one; its numbers are those of the trial
trained alone, up to summation order (float64: ~1e-15; float32: see tests/unit/pack). Its
throughput metrics are its own tokens over the pack's training time and its `wall_s` the pack's.
The driver appends each member's record as soon as its pack returns: a driver killed midway
leaves the members recorded so far, and `verify` run again packs only those not recorded.
Packs keep no checkpoint.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tlmsearch.configs.resolve import trial_shape
from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.trial import SPEC, TrialOutcome, TrialSpec
from tlmsearch.configs.verify import check_pack
from tlmsearch.errors import failure_reason
from tlmsearch.models import count_params
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.records import RecordLog, TrialRecord
from tlmsearch.training.pack.auto import PackChoice, choose
from tlmsearch.tuning.announce import slots as trial_slots
from tlmsearch.tuning.resources import trial_device_kind
from tlmsearch.tuning.specs import spec_of
from tlmsearch.tuning.trainable import _placement as ray_placement
from tlmsearch.tuning.trainable import param_counts, speed_metrics, trial_train_config, use_assigned_gpu


def pack_choice(
    cfg: SearchConfig, mode: str, members: int, base_width: int | None = None, slots: int = 1
) -> PackChoice:
    """`pack.auto.choose` for `members` trials of `cfg` at `base_width` on `slots` parallel slots: its
    device kind, threads, dtype and non-embedding parameters (every profile of a budget has the same count)."""
    train = trial_train_config(cfg, cfg.seed)
    model = trial_shape(cfg, ProfileSpec.parse("uniform"), base_width)[2]
    return choose(
        mode,
        device=trial_device_kind(cfg),
        threads=train.threads,
        dtype=train.dtype,
        non_embedding=count_params(model).non_embedding,
        members=members,
        slots=slots,
    )


def pack_groups(
    cfg: SearchConfig, configs: Sequence[Mapping[str, Any]], pack: str
) -> tuple[list[tuple[list[int], PackChoice]], list[int]]:
    """Which of the fixed trials `configs` (Tune configs, `runner.fixed_config`) train as packs
    under `pack`: per group of one model and training (`pack_key`: all but the MLP widths and the
    seed, what a pack lets its members differ in), the members `pack_choice` packs (their indices
    in `configs`, with the choice: the first sum(sizes) of the group) and the indices of the
    rest, trained separately (among them every trial whose spec could not be resolved: it is
    recorded failed with its own reason)."""
    pack = check_pack(pack)
    slots = _slots(cfg)
    groups: dict[str, list[int]] = {}
    separate: list[int] = []
    for i, c in enumerate(configs):
        key = pack_key(spec_of(cfg, {k: v for k, v in c.items() if k != SPEC}))
        if key is None:
            separate.append(i)
        else:
            groups.setdefault(key, []).append(i)
    packed: list[tuple[list[int], PackChoice]] = []
    for index in groups.values():
        choice = pack_choice(cfg, pack, len(index), configs[index[0]].get("base_width"), slots)
        n = sum(choice.sizes)
        if n:
            packed.append((index[:n], choice))
        separate.extend(index[n:])
    return packed, separate


def pack_key(spec: TrialSpec) -> str | None:
    """What the members of one pack share (`training.pack.engine.check_members`): the whole model
    but its MLP widths, the whole training but its seed, and the data; None for a spec that
    cannot train (its error is its record's reason)."""
    if spec.model is None or spec.error:
        return None
    model = {k: v for k, v in spec.model.to_dict().items() if k != "mlp_widths"}
    train = {k: v for k, v in spec.train.to_dict().items() if k != "seed"}
    return json.dumps({"model": model, "train": train, "data": spec.data.to_dict()}, sort_keys=True, default=str)


def _slots(cfg: SearchConfig) -> int:
    """How many trials of `cfg` Ray runs at once: on the running Ray, else on this machine's CPUs
    (a local Ray takes them all); max_concurrent caps it."""
    import ray

    if not ray.is_initialized():
        return trial_slots(cfg)
    have = ray.cluster_resources()
    return trial_slots(cfg, have.get("CPU", 1.0), have.get("GPU", 0.0))


def run_packs(
    run_dir: Path,
    cfg: SearchConfig,
    configs: Sequence[Mapping[str, Any]],
    groups: list[tuple[list[int], PackChoice]],
    kind: str,
    progress: bool,
    say: Callable[[str], None] | None,
) -> dict[int, TrialRecord]:
    """Train `groups` of `configs` (`pack_groups`'s packed groups) as packs, one Ray task each, at
    most as many at once as Ray runs trials; each member's record appended as its pack returns.
    Returns the records written, by their index in `configs`. Ray must be running."""
    import ray

    from tlmsearch.tuning.recorder import record_of  # lazy: imports ray.tune

    slots = _slots(cfg)
    task = ray.remote(train_members).options(num_cpus=cfg.cpus_per_trial, num_gpus=cfg.gpu_share or None)
    queue: list[list[int]] = []
    for index, choice in groups:
        start = 0
        sizes = choice.sizes
        for size in sizes:
            queue.append(index[start : start + size])
            start += size
        if progress:
            (say or _print)(f"{kind}: {len(index)} trials as {len(sizes)} packs ({choice.reason})")
    specs = {i: spec_of(cfg, dict(configs[i])) for index, _ in groups for i in index}  # resolved once
    log = RecordLog(run_dir)
    out: dict[int, TrialRecord] = {}
    stamp = uuid.uuid4().hex[:5]
    pending: dict[Any, list[int]] = {}
    try:
        while queue or pending:
            while queue and len(pending) < slots:  # as many packs at once as trials would run (max_concurrent)
                members = queue.pop(0)
                pending[task.remote([specs[i].to_dict() for i in members])] = members
            done, _ = ray.wait(list(pending), num_returns=1)
            members = pending.pop(done[0])
            for i, got in zip(members, ray.get(done[0]), strict=True):  # member by member: a kill keeps these
                record = record_of(
                    specs[i],
                    TrialOutcome.from_dict(got["outcome"]),
                    trial_id=f"{stamp}_{i:05d}",
                    started=got["started"],
                    ended=got["ended"],
                )
                if log.append(record):
                    out[i] = record
            if progress:
                (say or _print)(f"{kind}: a pack of {len(members)} ended ({len(out)} of {_total(groups)} recorded)")
    finally:  # a Ctrl-C: the packs still training end with the driver's session
        for ref in pending:
            ray.cancel(ref, force=True)
    return out


def _total(groups: Sequence[tuple[list[int], PackChoice]]) -> int:
    return sum(len(index) for index, _ in groups)


def _print(text: str) -> None:
    print(text, flush=True)


def _placement(asked: dict[str, float], device: str) -> dict[str, Any]:
    """Where the pack trains: as a Ray trial records it (`trainable`), or this process outside Ray
    (`asked`: the resources its specs ask for)."""
    import ray

    if ray.is_initialized():
        return ray_placement(asked, device)
    return {"node": None, "devices": ["cpu"] if device != "cuda" else ["cuda"], "resources": dict(asked)}


def train_members(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Train the fixed trials `specs` (`TrialSpec` dicts, resolved on the driver by
    `specs.with_spec`) as one pack; per member {"outcome": its `TrialOutcome` dict, what its Ray
    trial would have reported last, "started", "ended"} (a Ray task of `run_packs`; callable
    directly outside Ray). Nothing is resolved here: each member trains its spec's model and
    TrainConfig on its spec's data."""
    import torch

    from tlmsearch.training.pack import Member, train_pack  # lazy: heavy (torch)

    trials = [TrialSpec.from_dict(s) for s in specs]
    first = trials[0].train
    torch.set_num_threads(first.threads)
    use_assigned_gpu(first.device)
    where = _placement(trials[0].resources, first.device)
    started = time.time()
    curves: list[list[dict[str, Any]]] = [[] for _ in trials]
    failed: dict[int, str] = {i: t.error for i, t in enumerate(trials) if t.error}
    ready = [i for i, t in enumerate(trials) if t.model is not None]

    def report(k: int, step: int, metrics: dict[str, float]) -> None:
        spec = trials[ready[k]]
        if step >= spec.train.steps and spec.model is not None:
            metrics = {**metrics, **speed_metrics(spec.train, spec.model, spec.reference)}
        curves[ready[k]].append(dict(metrics))

    try:
        if ready:
            members = [Member(model=trials[i].model, train=trials[i].train) for i in ready]  # type: ignore[arg-type]
            for k, outcome in enumerate(train_pack(members, trials[ready[0]].data, report=report)):
                if outcome.diverged is not None:
                    failed[ready[k]] = f"TrainingDiverged: {outcome.diverged}"
    except Exception as exc:  # every member fails with the pack's reason, as a Ray trial records one
        failed.update({i: failure_reason(exc) for i in ready})
    ended = time.time()
    out = []
    for i, spec in enumerate(trials):
        curve = curves[i]
        metrics = dict(curve[-1]) if curve else {}
        if i not in failed and spec.model is not None:
            metrics.update(param_counts(spec.model))
        ending = TrialOutcome(
            status="failed" if i in failed else "ended",
            reason=failed.get(i),
            steps=int(curve[-1]["step"]) if curve else 0,
            curve=tuple(curve),
            metrics=metrics,
            **where,
        )
        out.append({"outcome": ending.to_dict(), "started": started, "ended": ended})
    return out
