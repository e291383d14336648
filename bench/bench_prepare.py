"""Peak memory of `tlmsearch data prepare SOURCE` on a generated JSONL corpus.

Generates a JSONL corpus of the asked sizes in a temporary folder (records of 50-400 random
words from a 5,000-word vocabulary, each with an id and a `text` field), runs
`python -m tlmsearch data prepare CORPUS --out OUT` on it as a subprocess and reads the child's
peak resident memory (`os.wait4`'s `ru_maxrss`). Several sizes show whether memory grows with
the corpus (it should not: documents are tokenized in batches of a few MB and appended). The
token files are checked: their token count equals the UTF-8 bytes of the documents plus their
separators (byte tokenizer).

    python -m bench.bench_prepare                          # 100 MB and 1,000 MB, byte tokenizer
    python -m bench.bench_prepare --sizes-mb 1000 --tokenizer bpe:4096
    python -m bench.bench_prepare --sizes-mb 1000 --format parquet
    python -m bench.bench_prepare --dry                    # smoke test: 2 MB
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import print_header, save_result, table

LIMIT_MB = 1024  # the acceptance bound on peak memory

# runs `tlmsearch` as `python -m tlmsearch` does, then writes its own peak RSS in kB to argv[1]
PEAK_CHILD = """
import runpy, sys
out = sys.argv.pop(1)
sys.argv[0] = "tlmsearch"
try:
    runpy.run_module("tlmsearch", run_name="__main__", alter_sys=True)
finally:
    status = open("/proc/self/status").read().split("VmHWM:")
    if len(status) == 2:
        open(out, "w").write(status[1].split()[0])
"""


def write_corpus(path: Path, size_mb: float, seed: int = 0) -> tuple[int, int]:
    """A JSONL corpus of about `size_mb` MB (a Parquet file of the same records, in row groups
    of 1,000, when `path` ends in .parquet); returns (bytes of text written, documents)."""
    import numpy as np

    writer = None
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        writer = pq.ParquetWriter(path, pa.schema([("id", pa.int64()), ("text", pa.string())]))

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = np.array(["".join(rng.choice(letters, size=int(n))) for n in rng.integers(2, 10, size=5000)])
    target, written, docs = int(size_mb * 1e6), 0, 0
    with open(path if writer is None else os.devnull, "w", encoding="utf-8") as fh:
        while written < target:
            lengths = rng.integers(50, 400, size=1000)
            ids = rng.integers(0, len(words), size=int(lengths.sum()))
            texts, start = [], 0
            for n in lengths:
                texts.append(" ".join(words[ids[start : start + n]]))
                start += n
            if writer is not None:
                writer.write_table(pa.table({"id": list(range(docs, docs + len(texts))), "text": texts}))
                written += sum(len(t) for t in texts)
            else:
                chunk = "".join(json.dumps({"id": docs + i, "text": t}) + "\n" for i, t in enumerate(texts))
                fh.write(chunk)
                written += len(chunk.encode())
            docs += len(texts)
    if writer is not None:
        writer.close()
    return written, docs


def run_prepare(corpus: Path, out: Path, tokenizer: str) -> dict[str, Any]:
    """Run the command as a subprocess; its wall time, exit status and peak RSS in MB."""
    peak_file = out.with_name(out.name + ".peak_kb")
    cmd = [sys.executable, "-c", PEAK_CHILD, str(peak_file), "data", "prepare", str(corpus), "--out", str(out),
           "--tokenizer", tokenizer, "--json"]  # fmt: skip
    log = out.with_name(out.name + ".stderr")
    start = time.perf_counter()
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        stdout_text = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak, reaped here
    wall = time.perf_counter() - start
    stderr_text = log.read_text()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {code}: {stderr_text.strip()[-500:]}")
    info = json.loads(stdout_text)
    # the child's own high-water mark; `ru_maxrss` where /proc is absent (it may carry the parent's)
    peak_kb = float(peak_file.read_text()) if peak_file.exists() else float(usage.ru_maxrss)
    return {
        "command": " ".join(["tlmsearch", *cmd[4:]]),
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(peak_kb / 1024, 1),  # kilobytes
        "train_tokens": info["train_tokens"],
        "val_tokens": info["val_tokens"],
        "documents": info["documents"],
    }


def expected_tokens(corpus: Path) -> int:
    """Byte tokens of the documents and their blank-line separators, counted independently."""
    total = 0
    if corpus.suffix == ".parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(corpus).iter_batches(columns=["text"]):
            total += sum(len(t.encode()) + 2 for t in batch.column(0).to_pylist())
        return total
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            total += len(json.loads(line)["text"].encode()) + 2
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes-mb", type=float, nargs="+", default=[100, 1000])
    ap.add_argument("--tokenizer", default="byte")
    ap.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl", help="the corpus's format")
    ap.add_argument("--dry", action="store_true", help="smoke test: a 2 MB corpus")
    ap.add_argument("--tmp", help="where the corpus and tokens are written (default: the system's temp folder)")
    ap.add_argument("--out", help="JSON figures (default bench/data/prepare-latest.json)")
    args = ap.parse_args(argv)
    sizes = [2.0] if args.dry else args.sizes_mb
    info = print_header(f"tlmsearch data prepare: peak memory on generated {args.format}")
    rows, results = [], []
    for size in sizes:
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            corpus = Path(tmp) / f"corpus.{args.format}"
            t0 = time.perf_counter()
            nbytes, docs = write_corpus(corpus, size)
            gen_s = time.perf_counter() - t0
            r = run_prepare(corpus, Path(tmp) / "tokens", args.tokenizer)
            if args.tokenizer == "byte":
                want = expected_tokens(corpus)
                got = r["train_tokens"] + r["val_tokens"]
                if got != want:
                    raise SystemExit(f"token count {got:,} != {want:,} bytes of documents and separators")
            r.update(corpus_mb=round(nbytes / 1e6, 1), corpus_documents=docs, generate_s=round(gen_s, 1),
                     tokenizer=args.tokenizer, format=args.format, file_mb=round(corpus.stat().st_size / 1e6, 1),
                     under_limit=r["peak_rss_mb"] < LIMIT_MB)  # fmt: skip
            results.append(r)
            rows.append([f"{r['corpus_mb']:,.0f}", f"{docs:,}", args.tokenizer, f"{r['wall_s']:.1f}",
                         f"{r['corpus_mb'] / r['wall_s']:.1f}", f"{r['peak_rss_mb']:.0f}"])  # fmt: skip
            print(table(rows[-1:], ["corpus MB", "documents", "tokenizer", "wall s", "MB/s", "peak RSS MB"]))
    print()
    print(table(rows, ["corpus MB", "documents", "tokenizer", "wall s", "MB/s", "peak RSS MB"]))
    path = save_result("prepare", {"machine": info, "results": results}, args.out)
    print(f"figures: {path}")
    return 0 if all(r["under_limit"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
