"""`tlmsearch data`: list the corpora, or prepare (extract, tokenize, cache) one ahead of time."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from tlmsearch.cli._config_args import parse_tokenizer
from tlmsearch.configs.base import DataConfig
from tlmsearch.configs.validate import writable_dir
from tlmsearch.errors import ConfigError

HELP = "list the training corpora, or prepare one ahead of time"
DESCRIPTION = """\
List the built-in corpora (name, size, source, whether available here), or prepare one:
extract its text, tokenize it and cache the token streams, so that trials start at once.

examples:
  tlmsearch data
  tlmsearch data prepare shakespeare
  tlmsearch data prepare bible-web --tokenizer bpe:4096
  tlmsearch data prepare text:notes/ --json

Besides the built-in names, a corpus may be text:PATH (a .txt/.md file or a folder of them),
tokens:PATH (nanoGPT-style uint16 train.bin/val.bin) or hf:NAME[:CONFIG] (needs `datasets`).
Caches live in $TLMSEARCH_CACHE (default ~/.cache/tlmsearch).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("list", "prepare"), default="list", help="list (default) or prepare")
    p.add_argument("corpus", nargs="?", help="the corpus to prepare")
    p.add_argument("--tokenizer", default="byte", metavar="KIND", help="byte (default), bpe or bpe:VOCAB")
    p.add_argument("--cache-dir", help="cache folder (default $TLMSEARCH_CACHE or ~/.cache/tlmsearch)")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        if args.corpus:
            raise ConfigError("`tlmsearch data` lists corpora; to prepare one: tlmsearch data prepare NAME")
        return _list(args)
    if not args.corpus:
        raise ConfigError("tlmsearch data prepare needs a corpus name, e.g. shakespeare")
    return _prepare(args)


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
