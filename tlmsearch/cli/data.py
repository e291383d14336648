"""`tlmsearch data`: list the corpora, or prepare (extract, tokenize, cache) one ahead of time."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from tlmsearch.cli._config_args import parse_tokenizer
from tlmsearch.core.base import DataConfig
from tlmsearch.core.validate import writable_dir
from tlmsearch.errors import ConfigError

HELP = "list the training corpora, or prepare one ahead of time (a large one streamed into token files)"
DESCRIPTION = """\
List the built-in corpora (name, size, source, whether available here), or prepare one:
extract its text, tokenize it and cache the token streams, so that trials start at once.

examples (the cost measured on a 2-core machine beside each):
  tlmsearch data                                              # instant
  tlmsearch data prepare shakespeare                          # ~1 s
  tlmsearch data prepare bible-web --tokenizer bpe:4096       # ~6 s
  tlmsearch data prepare corpus.jsonl --out tokens/corpus     # ~15 s per GB (byte tokenizer)
  tlmsearch data prepare shards/ --tokenizer bpe:32000 --out tokens/c   # ~2.4 MB/s with a BPE
  tlmsearch train --corpus tokens:tokens/corpus ...

A built-in name, text:PATH and tokens:PATH prepare the trainer's own cache (the text is held
in memory while it is tokenized). Any other SOURCE is streamed, with bounded memory, into
token files that `--corpus tokens:OUT` trains on: a file or a folder of .txt/.md (blocks of
lines), .jsonl (one record a line, its --text-field) and .parquet files (its --text-field
column; needs pyarrow), a path prefixed jsonl:, parquet: or text: to name its format, or
hf:NAME[:CONFIG] / hf:PATH (a Hugging Face dataset in the local cache, or a folder written by
save_to_disk; needs `datasets`). Documents 0, 10, 20, ... (--val-fraction 0.1) are held out
until the validation part holds --max-val-tokens. Interrupted, the same command continues
from its last checkpoint (every 128 MB of text).
Caches live in $TLMSEARCH_CACHE (default ~/.cache/tlmsearch).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("list", "prepare"), default="list", help="list (default) or prepare")
    p.add_argument("corpus", nargs="?", metavar="SOURCE", help="the corpus to prepare: a built-in name or a SOURCE")
    p.add_argument(
        "--tokenizer", default="byte", metavar="KIND",
        help="byte (default), bpe or bpe:VOCAB; for a streamed SOURCE also the path of a tokenizer.json",
    )  # fmt: skip
    p.add_argument("--cache-dir", help="cache folder (default $TLMSEARCH_CACHE or ~/.cache/tlmsearch)")
    p.add_argument("--out", metavar="DIR", help="where a streamed SOURCE's token files go (default: in the cache)")
    p.add_argument("--text-field", default="text", help="the JSONL field or Parquet/dataset column (default text)")
    p.add_argument("--split", default="train", help="a Hugging Face dataset's split (default train)")
    p.add_argument("--val-fraction", type=float, default=0.1, help="held-out share of documents (default 0.1)")
    p.add_argument(
        "--max-val-tokens", type=int, default=10_000_000, metavar="N",
        help="stop holding documents out once the validation part has N tokens (default 10,000,000; 0: no cap)",
    )  # fmt: skip
    p.add_argument(
        "--bpe-sample-mb", type=int, default=64, metavar="MB",
        help="a bpe:VOCAB tokenizer is trained on the first MB of training text (default 64)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        if args.corpus:
            raise ConfigError("`tlmsearch data` lists corpora; to prepare one: tlmsearch data prepare NAME")
        return _list(args)
    if not args.corpus:
        raise ConfigError("tlmsearch data prepare needs a corpus name, e.g. shakespeare, or a SOURCE to stream")
    if _streamed(args):
        return _stream(args)
    return _prepare(args)


def _streamed(args: argparse.Namespace) -> bool:
    """A SOURCE streamed into token files: anything but a built-in name, text:PATH (unless
    --out is given) and tokens:PATH."""
    from tlmsearch.data.corpora import BUILTIN

    corpus = str(args.corpus)
    if corpus in BUILTIN or corpus.startswith("tokens:"):
        return False
    return not corpus.startswith("text:") or bool(args.out)


def _stream(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from tlmsearch.data.progress_bar import ProgressBar
    from tlmsearch.data.shards import PrepareConfig, describe, prepare_tokens, source_slug, tokenizer_kind

    if args.out:
        out = Path(args.out).expanduser()
    else:  # in the cache, named by the source and the tokenizer
        kind, vocab = tokenizer_kind(args.tokenizer)
        tok_slug = {"byte": "byte", "bpe": f"bpe{vocab}"}.get(kind, "file")
        cache = DataConfig(**({"cache_dir": args.cache_dir} if args.cache_dir else {})).cache_path()
        out = cache / "tokens" / f"{source_slug(args.corpus)}-{tok_slug}"
    cfg = PrepareConfig(
        source=args.corpus, out=str(out), tokenizer=args.tokenizer, text_field=args.text_field, split=args.split,
        val_fraction=args.val_fraction, max_val_tokens=args.max_val_tokens, bpe_sample_mb=args.bpe_sample_mb,
    )  # fmt: skip
    bar: list[ProgressBar] = []
    start = time.perf_counter()
    try:
        meta = prepare_tokens(
            cfg,
            total=lambda source: bar.append(ProgressBar(source.total, source.unit)),
            progress=lambda done, tokens, final: bar[0].update(done, tokens, final=final) if bar else None,
        )
    except KeyboardInterrupt:
        _ = bar and bar[0].close()
        print(f"stopped; the same command continues from the last checkpoint in {out}", file=sys.stderr)
        raise
    except BaseException:
        _ = bar and bar[0].close()
        raise
    info = {k: v for k, v in meta.items() if k not in ("token_bytes", "prepared_from")}
    info.update(path=str(out), corpus=f"tokens:{out}", seconds=round(time.perf_counter() - start, 3))
    print(json.dumps(info, indent=2) if args.json else describe(meta, out))
    return 0


def _list(args: argparse.Namespace) -> int:
    from tlmsearch.data.corpora import BUILTIN, KINDS  # numpy: kept off the --help path

    rows: list[dict[str, Any]] = [
        {
            "name": c.name,
            "size_mb": c.approx_mb,
            "available": bool(c.available()),
            "source": c.source,
            "description": c.description,
        }
        for c in BUILTIN.values()
    ]
    if args.json:
        print(json.dumps({"corpora": rows, "user_corpora": list(KINDS)}, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    print(f"{'name':<{width}}  {'size':>7}  {'available':<9}  source")
    for r in rows:
        avail = "yes" if r["available"] else "no"
        print(f"{r['name']:<{width}}  {r['size_mb']:>5.1f}MB  {avail:<9}  {r['source']}")
        print(f"{'':<{width}}  {'':>7}  {'':<9}  {r['description']}")
    print(f"\nalso: {', '.join(KINDS)}")
    return 0


def _prepare(args: argparse.Namespace) -> int:
    from tlmsearch.data import prepare  # numpy: kept off the --help path

    fields: dict[str, Any] = {"corpus": args.corpus, **parse_tokenizer(args.tokenizer)}
    if args.cache_dir:
        fields["cache_dir"] = args.cache_dir
    cfg = DataConfig(**fields)
    if not cfg.corpus.startswith("tokens:"):  # token files are used in place, nothing is cached
        writable_dir(cfg.cache_path(), "cache_dir")  # a file or unwritable place: one line, as in train
    start = time.perf_counter()
    data = prepare(cfg, verbose=not args.json)
    info = {**data.meta(), "seconds": round(time.perf_counter() - start, 3)}
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(
            f"{info['corpus']} ({info['tokenizer']}, vocab {info['vocab_size']}): "
            f"{info['train_tokens']:,} training and {info['val_tokens']:,} validation tokens\n"
            f"  sha256 {info['sha256']}\n  cached in {info['path']}"
        )
    return 0
