# ruff: noqa: E501  (the case table reads best one case per line)
"""Hostile input through the real CLI: each case a `tlmsearch` subprocess with a timeout and a
memory cap, classified as the bad-input report of issue 13 counted them.

    python -m bench.bench_hostile                # every case, 2 at a time
    python -m bench.bench_hostile --only profiles --jobs 1 --timeout 120

A case either must be refused (exit 2, or the documented code, with exactly one line on
stderr and no traceback) or must work (exit 0, no traceback: extreme but valid numbers).
Each outcome is one of

- clean: as expected;
- traceback: "Traceback" on stderr;
- hang: still running at the timeout (killed);
- memory: a MemoryError or killed by the memory cap (`RLIMIT_AS`, default 3 GiB);
- exit-0: bad input that ended with status 0;
- other: a refusal in more than one line, or an unexpected status;

and, separately, `ray` counts the refused cases that started Ray (a Ray session folder of the
case's process appeared): bad input must be refused before Ray starts.

Cases are grouped by the causes listed in issue 13 and include every example it names. Each
case runs in a fresh folder (its own runs directory and TMPDIR); the corpus cache is the
user's, so a case that wrongly starts training does not tokenize again.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

OUTCOMES = ("clean", "traceback", "hang", "memory", "exit-0", "other")
SMALL = ["--preset", "tiny", "--steps", "2", "--eval-windows", "2", "--batch-size", "2"]
LONG_NAME = "x" * 300


@dataclass(frozen=True)
class Case:
    group: str
    name: str
    argv: tuple[str, ...]
    expect: int = 2  # the exit status a clean run ends with (0: valid input that must work)
    says: str = ""  # with expect 0: what stderr must say (a warning about damage)


def _c(group: str, name: str, *argv: str, expect: int = 2, says: str = "") -> Case:
    return Case(group, name, argv, expect, says)


# ----------------------------------------------------------------------------- the cases
# placeholders: {F} fixture folder, {R} the case's own runs folder, {file} a plain file


def _profiles_cases() -> list[Case]:
    g = "family maths"
    ok = [  # valid extreme numbers: must work, with a sane profile (issue 13's first group)
        "power:exponent=1000", "power:exponent=-1000", "power:exponent=1e300", "sigmoid:steepness=1e6",
        "sigmoid:steepness=1e300", "bump:width=1e-300", "bump:width=1e300",
        "bump:amplitude=1e300", "bump:amplitude=-0.999999", "cosine:start=1e70,end=1e69", "cosine:start=1e-300,end=1e300",
        "linear:start=1e308,end=1e-308", "knots:k0=1e308,k1=1e-308", "knots:k0=5e-324,k1=1", "openelm:start=1e-300,end=1e300",
        "groups:third=late,factor=1e300", "bowtie:ratio=1e-300", "free:l0=700,l1=-700,l2=0,l3=0,l4=0,l5=0,l6=0,l7=0",
        "free:l0=1e308,l1=0,l2=0,l3=0,l4=0,l5=0,l6=0,l7=0",
        "knots:k0=1", "cosine:start=1_000", "cosine:start=١",  # one knot; Python's spellings of 1000 and 1
    ]  # fmt: skip
    cases = [
        _c(g, f"profiles {s}", "profiles", "--layers", "8", "--base-width", "64", "--family", s, expect=0) for s in ok
    ]
    bad = [
        "cosine:start=nan", "cosine:start=inf", "cosine:start=-1", "cosine:start=0,end=0", "cosine:start=1e400",
        "power:exponent=nan", "sigmoid:steepness=-inf", "bump:width=0", "bump:width=-1", "bump:amplitude=-1",
        "knots:k0=nan,k1=1", "knots:k0=-1,k1=1", "knots:", "free:l0=1", "sigmoid:midpoint=1e300", "free:l0=nan,l1=0,l2=0,l3=0,l4=0,l5=0,l6=0,l7=0",
        "cosine:start=1.5,start=2", "cosine:bogus=1", "cosine:start", "cosine:=1", "nosuchfamily", "", "COSINE",
        "cosine:start=0x10", "groups:third=sideways", "knots:k0=1,k1=2,mode=sideways",
        "knots:k0=1,k1=2,interp=spline", "bowtie:ratio=2", "bowtie:position=1e300",
    ]  # fmt: skip
    cases += [_c(g, f"profiles {s!r}", "profiles", "--layers", "8", "--base-width", "64", "--family", s) for s in bad]
    g = "profiles budget"
    budgets = [
        ("--layers", "1e9"), ("--layers", "1000000000"), ("--layers", "0"), ("--layers", "-1"), ("--layers", "abc"),
        ("--base-width", "0"), ("--base-width", "-64"), ("--base-width", "1e30"),
        ("--multiple-of", "0"), ("--multiple-of", "-8"), ("--multiple-of", "1000"), ("--min-width", "-1"),
        ("--max-width", "1"), ("--min-width", "100"), ("--preset", "nosuch"),
    ]  # fmt: skip
    cases += [_c(g, f"profiles {a} {v}", "profiles", "--layers", "8", "--base-width", "64", a, v) for a, v in budgets]
    cases.append(
        _c(
            g,
            "profiles --base-width 7 (multiple of 1)",
            "profiles",
            "--layers",
            "8",
            "--base-width",
            "7",
            "--family",
            "cosine",
            expect=0,
        )
    )
    cases += [
        _c("output paths", "profiles --plot DIR", "profiles", "--family", "uniform", "--plot", "{F}/adir"),
        _c("output paths", "profiles --plot in a file", "profiles", "--family", "uniform", "--plot", "{file}/p.html"),
        _c("output paths", "profiles --plot unwritable", "profiles", "--family", "uniform", "--plot", "/proc/p.html"),
        _c(
            "output paths",
            "profiles --plot missing folder",
            "profiles",
            "--family",
            "uniform",
            "--plot",
            "{F}/no/such/p.html",
        ),
    ]
    return cases


def _value_cases() -> list[Case]:
    """Numbers and names that once passed validation, through train, search and compare."""
    cases: list[Case] = []
    bad_values = [
        ("--lr", "nan"), ("--lr", "inf"), ("--lr", "-1"), ("--lr", "0"), ("--seed", "1e23"), ("--seed", "-1"),
        ("--seed", "abc"), ("--batch-size", "0"), ("--batch-size", "-1"), ("--batch-size", "1e8"),
        ("--batch-size", "100000000"), ("--eval-windows", "1e8"), ("--eval-windows", "100000000"), ("--eval-windows", "0"),
        ("--steps", "0"), ("--steps", "-1"), ("--steps", "nan"), ("--steps", "1e30"), ("--warmup-steps", "-1"),
        ("--eval-interval", "0"), ("--grad-clip", "-inf"), ("--eps", "inf"), ("--weight-decay", "nan"),
        ("--betas", "nan,0.9"), ("--base-width", "1e9"), ("--base-width", "1000000000"), ("--base-width", "-64"),
        ("--model", "n_layers=abc"), ("--model", "n_layers=0"), ("--model", "n_layers=100000"), ("--model", "d_model=1000000000000"),
        ("--model", "seq_len=100000000"), ("--model", "seq_len=1000000"), ("--model", "bogus=1"), ("--model", "n_layers"),
        ("--model", "n_layers=[1"), ("--data", "corpus=[x"), ("--data", "val_fraction=2"), ("--train", "lr=nan"),
        ("--train", "eps=.inf"), ("--arch", "nosuch"), ("--corpus", "nosuch"), ("--dtype", "float8"), ("--threads", "-1"),
    ]  # fmt: skip
    for cmd in ("train", "search"):
        for flag, value in bad_values:
            cases.append(
                _c(
                    f"values ({cmd})",
                    f"{cmd} {flag} {value}",
                    cmd,
                    flag,
                    value,
                    "--runs-dir",
                    "{R}",
                    *(SMALL if flag not in ("--steps", "--batch-size", "--eval-windows") else ["--preset", "tiny"]),
                )
            )
    search_only = [
        ("--cpus-per-trial", "nan"), ("--cpus-per-trial", "0"), ("--cpus-per-trial", "-1"), ("--cpus-per-trial", "inf"),
        ("--cpus-per-trial", "1000"), ("--gpus-per-trial", "1"), ("--trials", "0"), ("--trials", "-1"), ("--trials", "1e9"),
        ("--max-concurrent", "-1"), ("--time-budget", "nan"), ("--time-budget", "-1"), ("--reduction-factor", "1"),
        ("--grace-steps", "-1"), ("--sampler", "nosuch"), ("--scheduler", "nosuch"), ("--space", "nosuch"),
        ("--objectives", "bogus"), ("--objectives", "val_loss,tokens_per_s"), ("--base-widths", "64,32,8"),
        ("--baseline", "nosuch:x=1"), ("--max-failures", "-2"),
    ]  # fmt: skip
    for flag, value in search_only:
        cases.append(
            _c("values (search)", f"search {flag} {value}", "search", flag, value, "--runs-dir", "{R}", *SMALL)
        )
    cases.append(
        _c(
            "values (search)",
            "search gp with asha",
            "search",
            "--sampler",
            "gp",
            "--scheduler",
            "asha",
            "--runs-dir",
            "{R}",
            *SMALL,
        )
    )
    compare = [
        ("--cpus-per-trial", "nan"), ("--model", "n_layers=abc"), ("--base-width", "1000000000"), ("--train", "seed=100000000000000000000000"),
        ("--families", "nosuch"), ("--seeds", "-1"), ("--seeds", "abc"),
    ]  # fmt: skip
    for flag, value in compare:
        argv = ["compare", "--name", "c", "--runs-dir", "{R}", *SMALL]
        if flag != "--families":
            argv += ["--families", "uniform"]
        cases.append(_c("values (compare)", f"compare {flag} {value}", *argv, flag, value))
    names = ["x\n", "../x", "/abs", "a/b", ".", "..", LONG_NAME, "x\x01y", "-x", "x y\t", "x\u202e"]
    for cmd in ("train", "search", "compare"):
        for name in names:
            extra = ["--families", "uniform"] if cmd == "compare" else []
            cases.append(
                _c(f"names ({cmd})", f"{cmd} --name {name!r}", cmd, *extra, "--name", name, "--runs-dir", "{R}", *SMALL)
            )
    cases.append(
        _c("names (train)", "train --name ''", "train", "--name", "", "--runs-dir", "{R}", *SMALL)
    )  # search, compare: '' = a generated name
    return cases


def _path_cases() -> list[Case]:
    g = "output paths"
    cases = []
    for cmd in ("train", "search"):
        extra: list[str] = []
        cases += [
            _c(g, f"{cmd} --runs-dir FILE", cmd, *extra, "--runs-dir", "{file}", *SMALL),
            _c(g, f"{cmd} --runs-dir unwritable", cmd, *extra, "--runs-dir", "/proc/runs", *SMALL),
            _c(g, f"{cmd} --runs-dir under a file", cmd, *extra, "--runs-dir", "{file}/runs", *SMALL),
            _c(g, f"{cmd} --cache-dir FILE", cmd, *extra, "--cache-dir", "{file}", "--runs-dir", "{R}", *SMALL),
            _c(
                g,
                f"{cmd} --cache-dir unwritable",
                cmd,
                *extra,
                "--cache-dir",
                "/proc/cache",
                "--runs-dir",
                "{R}",
                *SMALL,
            ),
        ]
    cases += [
        _c(g, "compare --runs-dir FILE", "compare", "--families", "uniform", "--runs-dir", "{file}", *SMALL),
        _c(
            g,
            "compare --cache-dir FILE",
            "compare",
            "--families",
            "uniform",
            "--name",
            "c",
            "--cache-dir",
            "{file}",
            "--runs-dir",
            "{R}",
            *SMALL,
        ),
        _c(g, "export --out FILE", "export", "{F}/run_good", "--out", "{file}"),
        _c(g, "export --out unwritable", "export", "{F}/run_good", "--out", "/proc/out"),
        _c(g, "report --out FILE", "report", "{F}/run_good", "--out", "{file}"),
        _c(g, "report --out unwritable", "report", "{F}/run_good", "--out", "/proc/out"),
    ]
    return cases


def _file_cases() -> list[Case]:
    cases = []
    configs = ["nonutf8.yaml", "binary.yaml", "adir", "missing.yaml", "bad.yaml", "deep.yaml", "list.yaml", "unknown.yaml",
               "seed.yaml", "seqlen.yaml", "eps_inf.yaml", "lr_nan.yaml", "null.yaml", "empty_key.yaml"]  # fmt: skip
    for cmd in ("train", "search", "study"):
        for name in configs:
            cases.append(
                _c(
                    f"config files ({cmd})",
                    f"{cmd} --config {name}",
                    cmd,
                    "--config",
                    f"{{F}}/{name}",
                    "--runs-dir",
                    "{R}",
                )
            )
    runs = ["run_nonutf8", "run_trials_dir", "run_trials_binary", "run_journal_garbled", "run_empty", "{file}",
            "{F}/no-such-run", "run_trials_garbage"]  # fmt: skip
    for cmd in ("status", "report", "export", "verify", "resume"):
        for name in runs:
            path = name if name.startswith("{") else f"{{F}}/{name}"
            if name == "run_journal_garbled" and cmd != "resume":  # only a search's resume reads the journal
                if cmd != "verify":  # (verify of its records would train: not bad input)
                    cases.append(_c(f"state files ({cmd})", f"{cmd} {name}", cmd, path, expect=0))
            elif cmd == "status" and name.startswith("run_trials"):  # a view: it says what it skipped
                cases.append(_c(f"state files ({cmd})", f"{cmd} {name}", cmd, path, expect=0, says="warning: "))
            else:
                cases.append(_c(f"state files ({cmd})", f"{cmd} {name}", cmd, path))
    cases += [
        _c("state files (export)", "export crafted trial_id ../../..", "export", "{F}/run_crafted"),
        _c("state files (export)", "export --trial nosuch", "export", "{F}/run_good", "--trial", "nosuch"),
        _c("state files (export)", "export --format nosuch", "export", "{F}/run_good", "--format", "nosuch"),
        _c("state files (resume)", "resume every trial failed", "resume", "{F}/run_allfailed", "--quiet", expect=3),
        _c(
            "state files (report)",
            "report tokens: metadata wrong type",
            "train",
            "--corpus",
            "{F}/tokens_bad",
            "--runs-dir",
            "{R}",
            *SMALL,
        ),
    ]
    return cases


def _space_cases() -> list[Case]:
    g = "search spaces"
    spaces = ["exits.py", "raises.py", "syntax.py", "nosample.py", "space.txt", "adir", "missing.py", "exits1.py"]
    return [
        _c(g, f"search --space {s}", "search", "--space", f"{{F}}/{s}", "--runs-dir", "{R}", *SMALL) for s in spaces
    ]


def _ray_cases() -> list[Case]:
    g = "connections"
    return [
        _c(g, "search --address 127.0.0.1:1", "search", "--address", "127.0.0.1:1", "--runs-dir", "{R}", *SMALL),
        _c(
            g,
            "search --address nosuchhost:6379",
            "search",
            "--address",
            "nosuchhost.invalid:6379",
            "--runs-dir",
            "{R}",
            *SMALL,
        ),
        _c(g, "search --address garbage", "search", "--address", "::::", "--runs-dir", "{R}", *SMALL),
        _c(g, "resume --address 127.0.0.1:1", "resume", "{F}/run_partial", "--address", "127.0.0.1:1"),
        _c(
            g,
            "compare --address 127.0.0.1:1",
            "compare",
            "--families",
            "uniform",
            "--name",
            "c",
            "--address",
            "127.0.0.1:1",
            "--runs-dir",
            "{R}",
            *SMALL,
        ),
        _c(g, "verify --address 127.0.0.1:1", "verify", "{F}/run_good", "--address", "127.0.0.1:1"),
    ]


def _fs_cases() -> list[Case]:
    """Issue 31: the file system as it really is (loops, FIFOs, links to nothing, folders for files)."""
    g = "file-system shapes"
    cases = []
    for shape in ("loop", "fifo", "dangling"):
        for cmd in ("train", "search", "study"):
            cases.append(_c(g, f"{cmd} --config {shape}", cmd, "--config", f"{{F}}/{shape}", "--runs-dir", "{R}"))
        for cmd in ("status", "report", "export", "verify", "resume"):
            cases.append(_c(g, f"{cmd} RUN_DIR={shape}", cmd, f"{{F}}/{shape}"))
        for cmd in ("train", "search"):
            cases.append(_c(g, f"{cmd} --runs-dir {shape}", cmd, "--runs-dir", f"{{F}}/{shape}", *SMALL))
        cases += [
            _c(g, f"report --out {shape}", "report", "{F}/run_good", "--out", f"{{F}}/{shape}"),
            _c(g, f"export --out {shape}", "export", "{F}/run_good", "--out", f"{{F}}/{shape}"),
            _c(
                g,
                f"profiles --plot {shape}",
                "profiles",
                "--layers",
                "4",
                "--base-width",
                "64",
                "--plot",
                f"{{F}}/{shape}",
            ),
        ]
    for name in ("search.yaml", "trials.jsonl"):
        for shape in ("loop", "fifo"):
            run = f"{{F}}/run_{name.split('.')[0]}_{shape}"
            if name == "trials.jsonl":  # readers answer and say so; writers refuse
                cases.append(_c(g, f"status with {name} a {shape}", "status", run, expect=0, says="is not a file"))
            else:
                cases.append(_c(g, f"status with {name} a {shape}", "status", run))
            cases += [
                _c(g, f"verify with {name} a {shape}", "verify", run),
                _c(g, f"resume with {name} a {shape}", "resume", run),
            ]
    return cases


def _size_limit_cases() -> list[Case]:
    """Issue 31: sizes checked before they are allocated; one limit per concept."""
    g = "sizes and limits"
    return [
        _c(g, "plan --layers 1e9", "plan", "--layers", "1000000000"),
        _c(g, "plan --base-width 1e12", "plan", "--base-width", "1000000000000"),
        _c(
            g,
            "profiles 1.3b --throughput --batch-size 4096",
            "profiles",
            "--preset",
            "1.3b",
            "--throughput",
            "--batch-size",
            "4096",
        ),
        _c(g, "status --top -1", "status", "{F}/run_good", "--top", "-1"),
        _c(g, "status --top 0", "status", "{F}/run_good", "--top", "0"),
        _c(g, "plan --seeds 1", "plan", "--seeds", "1"),
        _c(g, "study --seeds 5000", "study", "--seeds", "5000", "--dry-run"),
        _c(g, "study --interval bootstrap", "study", "--interval", "bootstrap", "--dry-run"),
    ]


# two points of one depth and head size (a compute arm), profiles that stay apart at 4 layers
LADDER_POINTS = ("tiny:n_layers=4@1", "tiny:n_layers=4,d_model=48,n_heads=3@1")
LADDER_OK = ("--points", *LADDER_POINTS, "--profiles", "linear:start=1.5,end=0.5", "--lr-calibration", "off")
# the ways a ladder's folder is damaged (`_make_ladders`): status answers with a warning, report refuses
LADDER_DAMAGE = ("point_deleted", "point_file", "point_loop", "trials_deleted", "trials_emptied", "trials_torn",
                 "last_lost", "verify_json_deleted")  # fmt: skip
LADDER_STATES = ("state_not_json", "state_list", "state_phases_list", "state_phase_string", "state_status_number")


def _ladder_cases() -> list[Case]:
    """Issue 50: `ladder` (plan, run, status, report, resume), `plan` and verify's looks."""
    g = "ladder, plan and looks"
    cases: list[Case] = []
    bad_points = [
        ["x", "tiny@1"], ["tiny", "tiny@1"], ["tiny@", "tiny@1"], ["tiny@0", "tiny@1"], ["tiny@-1", "tiny@1"],
        ["tiny@nan", "tiny@1"], ["tiny@inf", "tiny@1"], ["nope@1", "tiny@1"], ["tiny:d_model@1", "tiny@2"],
        ["tiny:d_model=x@1", "tiny@2"], ["tiny:d_model=1000000000000@1", "tiny@2"], ["tiny:vocab_size=5@1", "tiny@1"],
        ["tiny:n_layers=3,n_layers=4@1", "tiny@1"], ["tiny:mlp_widths=3@1", "tiny@1"], ["tiny:arch=1@1", "tiny@1"],
        ["tiny@1@2", "tiny@1"], ["tiny@1"], ["tiny@1", "tiny@1"], ["tiny:n_layers=2@1", "tiny@1"],
        ["tiny:d_model=48,n_heads=3@1", "tiny:n_heads=3,d_model=48@1"], ["tiny:base_width=64@2", "tiny@2"],
        ["tiny:n_layers=0@1", "tiny@1"], ["tiny:n_heads=5@1", "tiny@1"], ["tiny:d_model=-32@1", "tiny@1"],
        ["tiny:seq_len=100000000@1", "tiny@1"], ["tiny:init_std=nan@1", "tiny@1"], ["tiny@1e400", "tiny@1"],
        ["tiny:n_layers=2@1", "cpu-xs@1"],  # a compute arm of two depths
    ]  # fmt: skip
    for points in bad_points:
        cases.append(_c(g, f"ladder plan --points {' '.join(points)}", "ladder", "plan", "--points", *points))
    flags = [
        ("--seeds", "1"), ("--seeds", "x"), ("--seeds", "100000"), ("--seeds", "-2"), ("--pilot-seeds", "1"),
        ("--max-seeds", "1"), ("--max-seeds", "1000000000"), ("--cpu-flops", "nan"), ("--cpu-flops", "inf"),
        ("--cpu-flops", "0"), ("--cpu-flops=-1", None), ("--cpu-flops", "x"), ("--mfu", "0"), ("--mfu", "2"),
        ("--mfu", "nan"), ("--step-ms=-1", None), ("--step-ms", "nan"), ("--gpu", "tpu"), ("--target", "big"),
        ("--target", "0"), ("--target", "nan"), ("--target-tokens-per-param=-1", None),
        ("--target-tokens-per-param", "nan"), ("--alpha", "0"), ("--alpha", "1"), ("--alpha", "nan"), ("--alpha", "0.7"),
        ("--margin=-1", None), ("--margin", "nan"), ("--profiles", "bogus"), ("--profiles", "power:exponent=nan"),
        ("--reference", "bogus"), ("--arm", "bogus"), ("--arm", "depth"), ("--train", "steps=3"),
        ("--train", "tokens_per_param=5"), ("--train", "lr=nan"), ("--batch-size", "0"), ("--lr-calibration", "bogus"),
        ("--lr-calibration-seeds", "0"), ("--lr-calibration-fraction", "2"), ("--cpus-per-trial", "0"),
        ("--gpus-per-trial=-1", None), ("--seed=-1", None), ("--config", "{F}/adir"), ("--config", "{F}/null.yaml"),
        ("--config", "{F}/list.yaml"), ("--config", "{F}/unknown.yaml"), ("--config", "{F}/missing.yaml"),
        ("--best-from", "{F}/run_empty"), ("--best", "bogus"),
    ]  # fmt: skip
    for flag, value in flags:
        more = (flag,) if value is None else (flag, value)
        cases.append(_c(g, f"ladder plan {' '.join(more)}", "ladder", "plan", *LADDER_OK, *more))
    cases.append(_c(g, "ladder plan --profiles uniform uniform", "ladder", "plan", "--points", *LADDER_POINTS,
                    "--profiles", "uniform", "uniform"))  # fmt: skip
    # one profile under two spellings (a set given twice, cosine written out): one profile, priced once
    for a, b in [("literature", "literature"), ("cosine", "cosine:start=1.5,end=0.5")]:
        cases.append(_c(g, f"ladder plan --profiles {a} {b}", "ladder", "plan", "--points", *LADDER_POINTS,
                        "--profiles", a, b, "--allow-collapsed", expect=0))  # fmt: skip
    cases.append(_c(g, "ladder plan --seeds auto --pilot-seeds 5 --max-seeds 6", "ladder", "plan", *LADDER_OK,
                    "--seeds", "auto", "--pilot-seeds", "5", "--max-seeds", "6"))  # fmt: skip
    ok = [(), ("--cpu-flops", "5e10"), ("--json",), ("--seeds", "auto", "--pilot-seeds", "5", "--max-seeds", "7"),
          ("--profiles", "literature", "openelm", "--allow-collapsed"), ("--target", "cpu-s"), ("--step-ms", "0")]  # fmt: skip
    for more in ok:
        cases.append(_c(g, f"ladder plan (valid) {' '.join(more)}", "ladder", "plan", *LADDER_OK, *more, expect=0))
    run = [
        ("--address", "127.0.0.1:1"), ("--address", "::::"), ("--device", "cuda"),
        ("--corpus", "text:/nonexistent/x.txt"), ("--corpus", "tokens:{F}/tokens_bad"), ("--runs-dir", "{file}"),
        ("--name", "a/b"), ("--seeds", "auto", "--pilot-seeds", "5", "--max-seeds", "3"),
        ("--name", "../up"), ("--cpus-per-trial", "1000"),
    ]  # fmt: skip
    for more in run:
        cases.append(_c(g, f"ladder run {' '.join(more)}", "ladder", "run", *LADDER_OK, "--runs-dir", "{R}", "--name",
                        "l", *more) if "--name" not in more and "--runs-dir" not in more else
                     _c(g, f"ladder run {' '.join(more)}", "ladder", "run", *LADDER_OK, *more,
                        *(() if "--runs-dir" in more else ("--runs-dir", "{R}"))))  # fmt: skip
    for action in ("status", "report", "resume"):
        for where in ("{F}/missing", "{file}", "{F}/adir", "{F}/loop", "{F}/fifo", "{F}/ladder_badyaml",
                      "{F}/ladder_badseeds"):  # fmt: skip
            cases.append(_c(g, f"ladder {action} {where}", "ladder", action, where))
        for state in LADDER_STATES:
            cases.append(_c(g, f"ladder {action} with {state}", "ladder", action, f"{{F}}/ladder_{state}"))
    for damage in LADDER_DAMAGE:
        cases.append(_c(g, f"ladder status {damage}", "ladder", "status", f"{{F}}/ladder_{damage}", expect=0,
                        says="warning: ladder"))  # fmt: skip
        cases.append(_c(g, f"ladder report {damage}", "ladder", "report", f"{{F}}/ladder_{damage}"))
        cases.append(_c(g, f"ladder report --readme-table {damage}", "ladder", "report", f"{{F}}/ladder_{damage}",
                        "--readme-table"))  # fmt: skip
    for damage in ("point_file", "point_loop"):
        cases.append(_c(g, f"ladder resume {damage}", "ladder", "resume", f"{{F}}/ladder_{damage}"))
    cases += [
        _c(g, "ladder status (whole)", "ladder", "status", "{F}/ladder_good", expect=0),
        _c(
            g, "ladder report --readme-table (whole)", "ladder", "report", "{F}/ladder_good", "--readme-table", expect=0
        ),
        _c(g, "ladder (no action)", "ladder"),
        _c(g, "ladder bogus", "ladder", "bogus"),
    ]
    looks = [
        ("--looks", "1"), ("--looks", "0"), ("--looks", "x"), ("--looks", "1000000"), ("--looks", "nan"),
        ("--looks", "5", "--seeds", "2"), ("--spending", "obf"), ("--spending", "bogus", "--looks", "3"),
        ("--looks", "3", "--seeds", "auto", "--pilot-seeds", "3", "--max-seeds", "5"),
        ("--looks", "3", "--seeds", "auto", "--pilot-seeds", "1"), ("--address", "127.0.0.1:1"), ("--device", "cuda"),
    ]  # fmt: skip
    for more in looks:
        cases.append(_c(g, f"verify {' '.join(more)}", "verify", "{F}/run_good", *more))
    cases += [
        _c(g, "plan --run ''", "plan", "--run", ""),
        _c(g, "plan --seeds 0", "plan", "--seeds", "0", expect=0),  # 0: planned seeds, as a study's
        _c(g, "plan --seeds nan", "plan", "--seeds", "nan"),
        _c(g, "plan --looks 1", "plan", "--looks", "1"),
        _c(g, "plan --run bogus", "plan", "--run", "bogus"),
    ]
    return cases


def all_cases() -> list[Case]:
    return (
        _profiles_cases() + _value_cases() + _path_cases() + _file_cases() + _space_cases() + _ray_cases()
        + _fs_cases() + _size_limit_cases() + _ladder_cases()
    )  # fmt: skip


# ----------------------------------------------------------------------------- fixtures


def make_fixtures(folder: Path) -> None:
    """The bad files and run directories the cases point at."""
    (folder / "afile").write_text("x")
    (folder / "adir").mkdir()
    (folder / "nonutf8.yaml").write_bytes(b"model:\n  arch: \xff\xfe\n")
    (folder / "binary.yaml").write_bytes(b"model:\x00\x01\x02")
    (folder / "bad.yaml").write_text("model: [unclosed\n")
    (folder / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    (folder / "list.yaml").write_text("- 1\n- 2\n")
    (folder / "unknown.yaml").write_text("bogus: 1\n")
    (folder / "seed.yaml").write_text("seed: 100000000000000000000000\n")
    (folder / "seqlen.yaml").write_text("model:\n  preset: tiny\n  seq_len: 100000000\n")
    (folder / "eps_inf.yaml").write_text("train:\n  eps: .inf\n  steps: 2\n")
    (folder / "lr_nan.yaml").write_text("train:\n  lr: .nan\n")
    (folder / "null.yaml").write_text("~\n")
    (folder / "empty_key.yaml").write_text("? \n")
    (folder / "exits.py").write_text("import sys\nsys.exit(0)\n")
    (folder / "exits1.py").write_text("raise SystemExit('bye')\n")
    (folder / "raises.py").write_text("raise RuntimeError('boom')\n")
    (folder / "syntax.py").write_text("def sample(:\n")
    (folder / "nosample.py").write_text("NAME = 'x'\n")
    (folder / "space.txt").write_text("not python\n")
    tokens = folder / "tokens_bad"
    tokens.mkdir()
    for name in ("train.bin", "val.bin"):
        (tokens / name).write_bytes(bytes(range(200)) * 4)
    (tokens / "meta.json").write_text(json.dumps({"vocab_size": "abc"}))
    _make_runs(folder)
    _make_shapes(folder)
    _make_ladders(folder)


def _make_shapes(folder: Path) -> None:
    """A symlink loop, a FIFO, a link to nothing, and run directories holding them (issue 31)."""
    (folder / "loop").symlink_to("loop.other")
    (folder / "loop.other").symlink_to("loop")
    os.mkfifo(folder / "fifo")
    (folder / "dangling").symlink_to("nowhere")
    for name in ("search.yaml", "trials.jsonl"):
        for shape in ("loop", "fifo"):
            run = folder / f"run_{name.split('.')[0]}_{shape}"
            shutil.copytree(folder / "run_good", run)
            (run / name).unlink()
            if shape == "loop":
                (run / name).symlink_to(f"{name}.other")
                (run / f"{name}.other").symlink_to(name)
            else:
                os.mkfifo(run / name)


def _make_runs(folder: Path) -> None:
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.configs.trial import TrialOutcome, trial_spec
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.rundir.records import RecordLog
    from tlmsearch.tuning.recorder import record_of

    cfg = SearchConfig(
        name="r", preset="tiny", model={"n_layers": 4}, trials=4, scheduler="none",
        train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5), data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    curve = [{"step": 30.0, "val_loss": 3.0, "val_bpb": 1.0}]

    def run(name: str, records: list[tuple[str, str, dict]]) -> Path:
        path = folder / name
        path.mkdir()
        cfg.save(path / "search.yaml")
        log = RecordLog(path)
        for i, (tid, profile, result) in enumerate(records):
            config = {"profile": profile, "number": i, **({"baseline": profile} if profile == "uniform" else {})}
            points = tuple(result.get("curve", ()))
            outcome = TrialOutcome(
                status="failed" if result.get("failed") else "running", reason=result.get("reason"),
                steps=result["step"], curve=points, metrics=dict(points[-1]) if points else {},
            )  # fmt: skip
            log.append(record_of(trial_spec(cfg, config), outcome, trial_id=tid))
        return path

    ok = {"step": 30, "curve": curve}
    full = [
        ("t0", "uniform", ok),
        ("t1", "cosine:start=1.5,end=0.5", ok),
        ("t2", "linear:start=1.5,end=0.5", ok),
        ("t3", "power:exponent=1", ok),
    ]
    run("run_good", full)
    run("run_partial", full[:2])
    fail = {"failed": 1, "reason": "TrainingDiverged: nan", "step": 0}
    run("run_allfailed", [(f"f{i}", "uniform", fail) for i in range(4)])
    run(
        "run_crafted",
        [
            ("t0", "uniform", ok),
            ("../../..", "cosine:start=1.5,end=0.5", {"step": 30, "curve": [{"step": 30.0, "val_loss": 1.0}]}),
        ],
    )
    run("run_nonutf8", full).joinpath("search.yaml").write_bytes(b"arch: \xff\n")
    trials_dir = run("run_trials_dir", [])
    (trials_dir / "trials.jsonl").unlink(missing_ok=True)
    (trials_dir / "trials.jsonl").mkdir()
    run("run_trials_binary", []).joinpath("trials.jsonl").write_bytes(b"\x00\xff\xfe" * 50 + b"\n")
    run("run_trials_garbage", []).joinpath("trials.jsonl").write_text('{not json}\n[1, 2]\n"x"\n')
    garbled = run("run_journal_garbled", full[:2])
    (garbled / "optuna.log").write_text('{"op_code": 0}\n{garbled\n{"op_code": 1}\n')
    (folder / "run_empty").mkdir()


def _make_ladders(folder: Path) -> None:
    """The committed reference ladder, whole and damaged in every way `LADDER_DAMAGE` names, with
    damaged state files and configs (issue 50)."""
    reference = Path(__file__).resolve().parents[1] / "runs" / "reference" / "ladder"
    point = "cpu-xs-t20"

    def copy(name: str) -> Path:
        path = folder / f"ladder_{name}"
        shutil.copytree(reference, path)
        return path

    copy("good")
    shutil.rmtree(copy("point_deleted") / point)
    shutil.rmtree(copy("point_file") / point)
    (folder / "ladder_point_file" / point).write_text("x")
    loop = copy("point_loop")
    shutil.rmtree(loop / point)
    (loop / point).symlink_to(f"{point}.other")
    (loop / f"{point}.other").symlink_to(point)
    (copy("trials_deleted") / point / "trials.jsonl").unlink()
    (copy("trials_emptied") / point / "trials.jsonl").write_text("")
    torn = copy("trials_torn") / point / "trials.jsonl"
    data = torn.read_bytes()
    torn.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 40])
    lost = copy("last_lost") / point / "trials.jsonl"
    lost.write_text("".join(lost.read_text().splitlines(keepends=True)[:-1]))
    (copy("verify_json_deleted") / point / "verify.json").unlink()
    states = {
        "state_not_json": "not json", "state_list": "[1, 2]", "state_phases_list": '{"phases": []}',
        "state_phase_string": json.dumps({"phases": {f"{point}/search": "done"}}),
        "state_status_number": json.dumps({"phases": {f"{point}/search": {"status": 3}}}),
    }  # fmt: skip
    for name, text in states.items():
        (copy(name) / "ladder_state.json").write_text(text)
    (copy("badyaml") / "ladder.yaml").write_text("points: [unclosed\n")
    bad = copy("badseeds") / "ladder.yaml"
    bad.write_text(bad.read_text().replace("max_seeds: 12", "max_seeds: 4"))  # fewer than 2 after the 3 pilot seeds


# ----------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Outcome:
    case: Case
    outcome: str
    ray: bool
    code: int | None
    seconds: float
    stderr: str


def _limits(mem_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        os.setsid()

    return apply


def run_case(case: Case, fixtures: Path, timeout: float, mem_bytes: int) -> Outcome:
    home = Path(tempfile.mkdtemp(prefix="hostile-"))
    try:
        runs, tmp = home / "runs", home / "tmp"
        runs.mkdir()
        tmp.mkdir()
        argv = [
            a.replace("{F}", str(fixtures)).replace("{R}", str(runs)).replace("{file}", str(fixtures / "afile"))
            for a in case.argv
        ]
        env = {**os.environ, "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
        start, wall = time.monotonic(), time.time() - 1
        proc = subprocess.Popen(
            [sys.executable, "-m", "tlmsearch", *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            preexec_fn=_limits(mem_bytes), cwd=home,
        )  # fmt: skip
        try:
            _, err_b = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            _, err_b = proc.communicate()
            code = None
        seconds = time.monotonic() - start
        try:
            os.killpg(proc.pid, 9)  # anything it left running (a Ray it started)
        except ProcessLookupError:
            pass
        err = err_b.decode(errors="replace")
        # this process's Ray session folder (made after it started: pids are reused)
        sessions = [*tmp.glob("ray/session_*"), *Path("/tmp/ray").glob(f"session_*_{proc.pid}")]
        ray = any(p.stat().st_mtime >= wall for p in sessions)
        return Outcome(case, classify(case, code, err), ray, code, seconds, err)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def classify(case: Case, code: int | None, err: str) -> str:
    if code is None:
        return "hang"
    if "MemoryError" in err or "Cannot allocate memory" in err or code in (-9, -6, -11, 137):
        return "memory"
    if "Traceback" in err:
        return "traceback"
    lines = [line for line in err.splitlines() if line.strip()]
    if case.expect == 0:
        return "clean" if code == 0 and case.says in err else "other"
    if code == 0:
        return "exit-0"
    return "clean" if code == case.expect and len(lines) == 1 else "other"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a case may run (default 120)")
    parser.add_argument("--mem-gib", type=float, default=3.0, help="address-space cap of each case (default 3)")
    parser.add_argument("--only", help="run only the cases whose group or name contains this text")
    parser.add_argument("--json", help="also write every outcome to this JSON file")
    args = parser.parse_args(argv)
    cases = [c for c in all_cases() if not args.only or args.only in c.group or args.only in c.name]
    fixtures = Path(tempfile.mkdtemp(prefix="hostile-fixtures-"))
    try:
        make_fixtures(fixtures)
        with ThreadPoolExecutor(args.jobs) as pool:
            outcomes = list(pool.map(lambda c: run_case(c, fixtures, args.timeout, int(args.mem_gib * 2**30)), cases))
    finally:
        shutil.rmtree(fixtures, ignore_errors=True)
    counts = Counter(o.outcome for o in outcomes)
    rays = sum(o.ray for o in outcomes if o.case.expect)
    print(
        f"load: {os.getloadavg()[0]:.1f}  cases: {len(outcomes)}  timeout: {args.timeout:g} s  memory cap: {args.mem_gib:g} GiB"
    )
    print("| tried | " + " | ".join(OUTCOMES) + " | started Ray |")
    print("|---" * (len(OUTCOMES) + 2) + "|")
    print(f"| {len(outcomes)} | " + " | ".join(str(counts.get(k, 0)) for k in OUTCOMES) + f" | {rays} |")
    by_group = Counter(o.case.group for o in outcomes)
    print("\nby group: " + ", ".join(f"{g} {n}" for g, n in by_group.items()))
    bad = [o for o in outcomes if o.outcome != "clean" or (o.ray and o.case.expect)]
    if bad:
        print("\nnot clean:")
    for o in bad:
        tail = [line for line in o.stderr.splitlines() if line.strip()][-1:] or [""]
        ray = " [started Ray]" if o.ray else ""
        print(f"  {o.outcome:9s} exit {o.code}{ray}  {o.case.name!r}: {tail[0][:160]}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                [
                    {
                        "group": o.case.group,
                        "name": o.case.name,
                        "argv": list(o.case.argv),
                        "outcome": o.outcome,
                        "ray": o.ray,
                        "code": o.code,
                        "seconds": round(o.seconds, 1),
                        "stderr": o.stderr[-2000:],
                    }
                    for o in outcomes
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
