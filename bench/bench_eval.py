"""The final evaluation's batching: whole-split validation at the training batch against
`training.trainer.eval_batch` (forwards of at least `EVAL_TOKENS` tokens), side by side.

Each case builds one model and times `val_nats` over the whole validation split (every
non-overlapping window, the final evaluation a search trial runs by default) at both batch
sizes, interleaved (train batch, eval batch, train batch, ...) so that machine noise hits
both alike. Printed: the median seconds of each, their ratio, and the largest relative
difference of the summed nats (float rounding only).

    python -m bench.bench_eval                                    # tiny, 3 families, batch 2 and 8
    python -m bench.bench_eval --presets tiny cpu-xs --repeats 5 --out bench/data/eval-batch.json
    python -m bench.bench_eval --dry                              # smoke test: 64 windows, 1 repeat
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench._common import median, print_header, save_result, table

FAMILIES = ("transformer", "titans", "hope_attention")


def time_case(preset_name: str, arch: str, batch: int, repeats: int, windows: int | None) -> dict[str, Any]:
    """Seconds of whole-split `val_nats` at the training batch and at `eval_batch`, interleaved."""
    import torch

    from tlmsearch.configs.resolve import resolve_model
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.data import prepare
    from tlmsearch.models import build_model
    from tlmsearch.profiles import ProfileSpec
    from tlmsearch.training.trainer import eval_batch, resolve_vocab, val_nats, val_sets

    data_cfg = DataConfig(corpus="pydoc")
    model_cfg = resolve_vocab(resolve_model(preset_name, arch, {}, ProfileSpec.parse("uniform"))[2], data_cfg)
    data = prepare(data_cfg)
    model = build_model(model_cfg, seed=0)
    train = TrainConfig(batch_size=batch, final_eval_windows=-1)
    _, (split, _) = val_sets(data, model_cfg.seq_len, train, torch.device("cpu"))
    split = split[:windows] if windows else split
    sizes = {"train": batch, "eval": eval_batch(train, model_cfg.seq_len)}
    seconds: dict[str, list[float]] = {k: [] for k in sizes}
    nats: dict[str, float] = {}
    for _ in range(repeats):
        for key, size in sizes.items():
            t0 = time.perf_counter()
            nats[key] = val_nats(model, split, size)
            seconds[key].append(time.perf_counter() - t0)
    return {
        "preset": preset_name,
        "arch": arch,
        "seq_len": model_cfg.seq_len,
        "windows": int(split.shape[0]),
        "train_batch": batch,
        "eval_batch": sizes["eval"],
        "train_s": median(seconds["train"]),
        "eval_s": median(seconds["eval"]),
        "speedup": median(seconds["train"]) / median(seconds["eval"]),
        "rel_diff": abs(nats["eval"] - nats["train"]) / abs(nats["train"]),
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", nargs="+", default=["tiny"])
    ap.add_argument("--archs", nargs="+", default=list(FAMILIES))
    ap.add_argument("--batches", nargs="+", type=int, default=[2, 8], help="training batch sizes")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dry", action="store_true", help="64 windows, 1 repeat: a smoke test, not a measurement")
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    info = print_header("bench_eval: whole-split evaluation, training batch vs eval_batch")
    repeats, windows = (1, 64) if args.dry else (args.repeats, None)
    rows = [time_case(p, a, b, repeats, windows) for p in args.presets for a in args.archs for b in args.batches]
    print(
        table(
            [
                [
                    r["preset"],
                    r["arch"],
                    r["windows"],
                    r["train_batch"],
                    r["eval_batch"],
                    r["train_s"],
                    r["eval_s"],
                    r["speedup"],
                    f"{r['rel_diff']:.1e}",
                ]
                for r in rows
            ],  # fmt: skip
            ["preset", "arch", "windows", "batch", "eval batch", "s, batch", "s, eval", "speedup", "rel diff"],
        )
    )
    if not args.dry or args.out:
        path = save_result("eval", {"machine": info, "threads": args.threads, "rows": rows}, args.out)
        print(f"figures written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
