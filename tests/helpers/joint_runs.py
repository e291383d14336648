"""A search run directory whose records are joint architectures, without training: the uniform
baseline, a query-head taper and a block-width bowtie on preset tiny at 4 layers (records built
by `build_record`, so each carries the exact model the resolver gives its profile); and the same
run verified (`joint_verified`: each of them and cosine re-trained on two seeds)."""

from __future__ import annotations

from pathlib import Path

from record_fakes import build_record

from tlmsearch.configs.resolve import resolve_model
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.records import RecordLog
from tlmsearch.tuning import SearchConfig

ATTENTION = "joint:mode=attention,heads_start=1.5,heads_end=0.5"
BOWTIE = "joint:mode=block,ratio=0.3,position=0.5"  # at 4 layers the bottleneck of 0.75 rounds away
PROFILES = ("uniform", ATTENTION, BOWTIE)
LOSSES = (3.0, 2.9, 2.8)  # the bowtie is the best, then the head taper
CFG = SearchConfig(
    name="j", preset="tiny", model={"n_layers": 4}, trials=3, space="joint", scheduler="none", noise_seeds=0,
    baselines=PROFILES,
    train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5), data=DataConfig(corpus="pydoc"),
)  # fmt: skip


def joint_run(run_dir: Path) -> Path:
    """`run_dir` holding search.yaml and one complete record per profile: t0 uniform, t1 the head
    taper, t2 the bowtie."""
    run_dir.mkdir(parents=True, exist_ok=True)
    CFG.save(run_dir / "search.yaml")
    log = RecordLog(run_dir)
    for i, (profile, loss) in enumerate(zip(PROFILES, LOSSES, strict=True)):
        config = {"profile": profile, "baseline": profile, "kind": "baseline", "number": -1}
        log.append(build_record(CFG, f"t{i}", config, {"step": 30, "curve": [{"step": 30.0, "val_loss": loss}]}))
    return run_dir


def joint_model(text: str) -> ModelConfig:
    """The architecture the resolver builds for profile `text` on the run's budget (what trained)."""
    return resolve_model("tiny", "transformer", {"n_layers": 4}, ProfileSpec.parse(text))[2]


VERIFIED = {"uniform": 3.0, "cosine:start=1.5,end=0.5": 2.95, ATTENTION: 2.9, BOWTIE: 2.85}  # mean verified loss


def joint_verified(run_dir: Path) -> Path:
    """`joint_run(run_dir)` plus verify records at full fidelity: uniform, cosine, the head taper
    and the bowtie on seeds 1 and 2 (losses `VERIFIED` -/+ 0.01), ids v0..v7."""
    joint_run(run_dir)
    log = RecordLog(run_dir)
    for i, (seed, (profile, loss)) in enumerate((s, item) for s in (1, 2) for item in VERIFIED.items()):
        config = {"profile": profile, "kind": "verify", "seed": seed, "number": -1}
        curve = [{"step": 30.0, "val_loss": loss + (0.01 if seed == 2 else -0.01)}]
        log.append(build_record(CFG, f"v{i}", config, {"step": 30, "curve": curve}))
    return run_dir
