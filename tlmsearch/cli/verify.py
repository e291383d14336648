"""`tlmsearch verify`: re-train the best profiles and the baselines with seeds; the verdict."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tlmsearch.cli._config_args import add_training_arguments, training_overrides
from tlmsearch.cli._options import add_price_arguments, add_verdict_arguments, verdict_levels

# the defaults of the options a study's architecture directory takes from its study instead
DEFAULTS: dict[str, Any] = {
    "top_k": 5,
    "seeds": "auto",
    "max_seeds": 20,
    "pilot_seeds": 3,
    "rate_check": "off",
    "pack": "off",
}
HELP = "re-train the top-k profiles and the baselines with several seeds; is cosine near-optimal?"
DESCRIPTION = """\
Short, noisy trials make a search's best trial optimistic (the winner's curse). verify
re-trains the top-k distinct profiles of RUN_DIR (of each budget in a budget sweep), the cosine
(1.5 -> 0.5) and uniform baselines and the controls the field argues about (expanding cosine
0.5 -> 1.5, linear 1.5 -> 0.5, the bowtie hourglass of Variable-Width Transformers) at full
fidelity with fresh seeds, in parallel through Ray, and compares them paired by seed against
cosine and uniform, with every candidate's interval, cosine's rank and regret, and the Spearman
correlation between search scores and verified scores (with what it measures: seed-to-seed
reliability at the same length, or proxy fidelity when --steps is longer than the search).

Three outcomes, decided against --margin (declared before the data, default 1% perplexity) at
level --alpha (default 0.05), with one-sided t tests Holm-corrected over the candidates:
"better" (some candidate's gain over cosine is shown above 0; the headline says whether it also
clears the margin), "near_optimal" (every candidate's gain is shown below the margin) or
"inconclusive" (neither; with the seeds the observed spread says would decide it).

Alpha is spent once: a verification spends its alpha by its last look. Asking a run whose
verification finished for more seeds (other --seeds/--looks, a larger --max-seeds) at the same
--alpha is refused in one line before anything trains; with a higher --alpha (the whole history's
level) it runs as a new stage: the earlier looks keep their decisions, the same seeds continue,
and the new looks spend only the alpha not yet spent (verify.json, the headline and status say it).

--controls adds profiles to those re-trained beside cosine and uniform: family[:param=value,...]
texts (as in `tlmsearch profiles`) or the set `literature`, the shapes the literature argues for
(OpenELM's layer-wise scaling 0.5 -> 4.0, Reverse, Frame and Crown of arXiv 2509.06518, the
middle-heavy 70% of arXiv 2508.17734, the bowtie), each at the search's exact budget.

Learning-rate check (--rate-check N): once decided, cosine and the best candidate (the one shown
better, else the best-ranked one) are re-trained at half and twice the rate the verification
trained at (the run's calibrated rate, else the configured one) on N paired seeds; the base
rate's pairs are the verification's own runs. Per rate the gap loss(cosine) - loss(candidate)
gets a t interval at 1 - alpha/3, and the result is "holds across rates" (decided the same way at
all three), "rate-sensitive" (the sign flips, or it is decided at some rates only) or "undecided"
at every rate. Off by default here, by the rule the learning-rate calibration follows (on in a
study, off in a bare search): a bare verify trains only the runs asked for, and the check adds 4N
(up to 6N when the verification decided on fewer than N seeds). A study turns it on (6 seeds), and
verify in a study's architecture directory keeps the study's.

Packs (--pack auto|on|off, default off): the trials of one shape (profiles x seeds of one
budget) train side by side in one process, one Ray task per pack holding one trial's CPUs and
GPUs; each member is still one record, with the numbers of the trial trained alone up to float
rounding. auto packs only where bench_pack measured packs faster than separate trials, and only
where the packs beat separate trials on the parallel slots: on CPU at one thread in float32,
models of at most tiny's 20,640 non-embedding parameters, in packs of 4 (1.56x; 1-3 members
measured 0.40-0.94x, cpu-xs 0.91x, cpu-s 0.78x, two threads 0.15x); no GPU figure yet, so auto
trains GPU trials separately. A pack killed midway keeps the members it recorded: verify run
again trains only the others. Packs keep no checkpoints. --rate-check's runs of one rate pack
as well.

Records go to RUN_DIR/trials.jsonl with kind "verify" (the rate check's with kind "ratecheck",
their rate in params); running verify again reuses finished ones.
Then `tlmsearch report RUN_DIR` draws everything.

Training and data flags (as in `train` and `search`) replace single fields of the search's
settings for the re-training: the trial length defaults to the deciding length, 20 tokens per
non-embedding parameter, after a search that screened below it in tokens per parameter (the
default search screens at 5), else to the search's full fidelity (--steps or --tokens-per-param
choose another); --seed defaults to the search's seed + 1 (the first of the fresh seeds).
Finished verify records are reused only when they were trained with the same settings.

Seeds: with --seeds auto (default) a pilot of --pilot-seeds seeds (default 3) of every profile
measures the spread of the paired gains over cosine; the planner then computes how many fresh
seeds make the one-sided bounds tight against the margin (80% power to show cosine within the
margin when every candidate equals it; pilot + fresh <= --max-seeds), prints the plan with its
cost estimated from the pilot's wall time (a range, widened for the load), trains them and
decides once on the fresh seeds only (the pilot sets the number and never enters the decision,
so the tests keep their level).
--seeds N trains N seeds that all decide.

In an architecture's directory of a study (`tlmsearch study`: runs/<name>/<arch>), every option
not given is the study's (top-k, seeds, pilot and max seeds, margin, alpha), and the study's
controls (the paper's early/middle/late groups, the random-search control) are re-trained too,
so `tlmsearch verify runs/<name>/<arch> --max-seeds 40` extends the study's verification with
more seeds (the pilot and every finished run reused) and records the new outcome in the study's
state; `tlmsearch report runs/<name>` then rebuilds the study's report on them (the transfer
check keeps the profiles it trained).

examples:
  tlmsearch verify runs/my-search --top-k 5
  tlmsearch verify runs/my-search --top-k 5 --seeds 3
  tlmsearch verify runs/my-search --top-k 3 --seeds 5 --steps 1000 --margin 0.02 --alpha 0.05
  tlmsearch verify runs/my-search --controls literature groups:third=early
  tlmsearch verify runs/my-search --seeds 6 --rate-check 6
  tlmsearch verify runs/my-search --seeds 4 --pack auto
  tlmsearch verify runs/study/titans --max-seeds 40
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a search run directory")
    p.add_argument(
        "--top-k",
        type=int,
        default=None,
        help=f"distinct best profiles to re-train, per budget in a sweep (default: {DEFAULTS['top_k']})",
    )
    p.add_argument(
        "--seeds",
        default=None,
        metavar="auto|N",
        help="auto (default): a pilot of --pilot-seeds seeds measures the paired spread, then the fresh seeds "
        "that decide are planned, printed and run (the pilot never enters the decision); N: N seeds, all deciding "
        "(2 to 1000: a paired test needs two)",
    )
    p.add_argument(
        "--max-seeds",
        type=int,
        default=None,
        help=f"cap on seeds per profile with --seeds auto, pilot included (default: {DEFAULTS['max_seeds']}; "
        "at least --pilot-seeds + 2, at most 1000)",
    )
    p.add_argument(
        "--pilot-seeds",
        type=int,
        default=None,
        help=f"pilot seeds with --seeds auto (default: {DEFAULTS['pilot_seeds']}; >= 2)",
    )
    p.add_argument(
        "--controls",
        nargs="+",
        metavar="SPEC",
        help="more profiles to re-train beside cosine, uniform and the default controls (a study's, in a study's "
        "directory): family[:param=value,...] texts or the set 'literature' (openelm, reverse, frame, crown, "
        "middle, bowtie)",
    )
    p.add_argument(
        "--looks",
        type=int,
        default=None,
        help="group-sequential: train the deciding seeds in this many stages (2 to 20), decide after each with "
        "alpha spending and Holm, and stop the candidates decided (all once one is shown better); --seeds N is "
        "then the most seeds, --seeds auto plans that most after the pilot (default: one decision, no looks)",
    )
    p.add_argument(
        "--spending",
        choices=("obf", "pocock"),
        default=None,
        help="alpha spending with --looks (refused without it): obf (O'Brien-Fleming-type, default: little at "
        "the early looks) or pocock (Pocock-type: more at the early looks, more seeds at the last)",
    )
    p.add_argument(
        "--rate-check",
        default=None,
        metavar="N|off",
        help="after the verdict, re-train cosine and the best candidate at half and twice the learning rate on N "
        "paired seeds (2 to 1000) and say whether the result holds across rates (default: off; in a study's "
        "architecture directory, the study's)",
    )
    p.add_argument(
        "--pack",
        default=None,
        metavar="auto|on|off",
        help="train the trials of one shape side by side in packs: auto (where bench_pack measured packs faster: "
        "CPU, 1 thread, float32, at most tiny's size, packs of 4), on, or off (default: off; in a study's "
        "architecture directory, the study's)",
    )
    p.add_argument(
        "--reference",
        metavar="SPEC",
        default=None,
        help="the profile every candidate is compared with, trained beside them: the verdict says whether it is "
        "near-optimal, with --looks too (default: cosine:start=1.5,end=0.5; in a study's architecture directory, "
        "the study's); declared before the first look, like the margin: a decided verification keeps it",
    )
    p.add_argument(
        "--allow-collapsed",
        action="store_true",
        default=None,
        help="go on where cosine, uniform and the controls build one model at the search's depth (cosine and "
        "linear 1.5 -> 0.5 at 2 or 3 layers): each runs as one merged candidate (default: refused; in a study's "
        "architecture directory, the study's)",
    )
    add_verdict_arguments(p)
    p.add_argument("--address", help="join the Ray cluster at this address (default: local Ray)")
    p.add_argument(
        "--workers-per-trial",
        type=int,
        default=None,
        help="data-parallel workers per re-training (Ray Train, DDP), each with the search's CPUs and GPUs per "
        "trial; they split every step's batch: the numbers of one worker (default: the search's)",
    )
    p.add_argument(
        "--storage",
        help="where the re-trainings' checkpoints go: a path or URI (s3://, gs://, file://) every node reaches "
        "(default: the search's --storage, else the run directory)",
    )
    p.add_argument(
        "--keep-checkpoints",
        action="store_true",
        default=None,
        help="keep each re-training's checkpoints after it ends (default: the search's setting, else deleted)",
    )
    p.add_argument("--no-report", action="store_true", help="do not write report.html/summary.* afterwards")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    p.add_argument("--quiet", action="store_true", help="no plan line, no progress line")
    add_price_arguments(p)
    deciding = "the search's, raised to 20 (the deciding length) when it was below 20 tokens per parameter"
    add_training_arguments(
        p,
        default_text={
            "seed": "the search's seed + 1",
            "steps": "the search's, or derived from --tokens-per-param",
            "tokens_per_param": deciding,
            "*": "the search's",
        },
    )


def verify_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of `verify` that the training and data flags describe."""
    train, data = training_overrides(args)
    return {"steps": train.pop("steps", None), "train": train, "data": data}


def print_verdicts(verdicts: list, as_json: bool, rate_check: list | None = None) -> None:
    """The verdicts, each with its learning-rate check when verify ran one (`rate_check`)."""
    checks = {c.group: c for c in rate_check or []}
    if as_json:
        from tlmsearch.report.run import json_safe  # not needed for --help

        docs = [
            v.to_dict() | ({"rate_check": checks[v.group].to_dict()} if v.group in checks else {}) for v in verdicts
        ]
        print(json.dumps(json_safe(docs), indent=2))
        return
    from tlmsearch.analysis.headline import level, pct
    from tlmsearch.profiles.spec import display_name

    for v in verdicts:
        print(f"\n{v.group}: {v.headline}")  # the headline opens with the outcome in words
        ref = getattr(v, "reference", "cosine")  # what every candidate is compared with
        print(f"  gains over {ref}, {level(v.confidence)} intervals:")
        for row in v.table:
            g = row["gain_vs_cosine"]
            gain = f"{pct(g['estimate'])} [{pct(g['low'])}, {pct(g['high'])}]" if g else "(reference)"
            name = " = ".join(display_name(n) for n in str(row.get("name") or row["label"]).split(" = "))
            print(f"  {row['rank']:>2}. {name:<40} ppl {row['mean_ppl']:.3f}  vs {ref} {gain}")
        rc = v.rank_correlation
        if rc is not None and v.spearman is not None:
            ci = f" [{rc.interval.low:.2f}, {rc.interval.high:.2f}]" if rc.interval else " (no interval: too few)"
            print(
                f"  Spearman of search vs verified scores: {v.spearman:.2f}{ci} over {rc.n} profiles; it measures "
                f"{v.rank_correlation_measures}"
            )
        if v.group in checks:
            print(f"  {checks[v.group].headline()}")


def verify_controls(given: list[str] | None, base: tuple[str, ...] | list[str] | None = None) -> tuple[str, ...] | None:
    """The controls `verify` re-trains: `base` (default `analysis.plan.CONTROLS`; a study's own in a
    study's directory) then the --controls `given`, set names expanded (`profiles.PROFILE_SETS`),
    each profile once; every one parsed here, so a bad one ends the command before anything
    trains. None when nothing is given (verify keeps its default)."""
    if not given:
        return None
    from tlmsearch.analysis.plan import CONTROLS
    from tlmsearch.profiles import ProfileSpec, expand_profile_sets

    extra = expand_profile_sets(given)
    for text in extra:
        ProfileSpec.parse(text)  # ConfigError naming the bad profile and what is allowed
    first = tuple(CONTROLS if base is None else base)
    return first + tuple(t for t in extra if t not in first)


def study_defaults(args: argparse.Namespace) -> dict[str, Any]:
    """Fill the options not given from RUN_DIR's study (`study_files.verify_options`), else from
    DEFAULTS; returns the study's controls for `verify` ({} outside a study)."""
    from tlmsearch.studies.files import verify_options

    study = verify_options(args.run_dir)
    given = {k for k in DEFAULTS if getattr(args, k) is not None}
    for key, default in DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, study[key] if study else default)
    if study is None:
        return {}
    if args.margin is None:
        args.margin = study["margin"]
    if args.alpha is None and args.confidence is None:
        args.alpha = study["alpha"]
    kept_keys = [k for k in DEFAULTS if k not in given]
    if args.looks is None and study.get("looks"):  # the study's group-sequential design, kept
        args.looks = study["looks"]
        kept_keys.append("looks")
    if not (args.json or args.quiet):
        kept = ", ".join(f"{k.replace('_', '-')} {getattr(args, k)}" for k in kept_keys)
        print(
            f"{args.run_dir} is an architecture of a study: its verification's profiles and controls"
            + (f", and its {kept}" if kept else "")
        )
    length = {"train": study["train"]} if "train" in study else {}  # the study's verification length
    allow = {k: study[k] for k in ("allow_collapsed", "reference") if k in study}
    return {"controls": study["controls"], "named_controls": study["named_controls"], **allow, **length}


def _update_study(arch_dir: Path, outcome: str, quiet: bool) -> None:
    """A finished verify phase of the study takes the new outcome (`tlmsearch status` shows it)."""
    from tlmsearch.studies.files import read_state, set_phase

    study_dir, key = arch_dir.parent, f"{arch_dir.name}/verify"
    if read_state(study_dir)["phases"].get(key, {}).get("status") != "done":
        return  # the study's own driver has yet to run or finish this phase: it records the outcome
    set_phase(study_dir, key, "done", outcome=outcome)
    if not quiet:
        print(f"study: {key} is now {outcome}; `tlmsearch report {study_dir}` rebuilds the study's report")


def run(args: argparse.Namespace) -> int:
    from tlmsearch.configs.verify import VerifyOptions
    from tlmsearch.rundir.io import check_run_files, require_dir
    from tlmsearch.tuning.verify import verify

    check_run_files(require_dir(args.run_dir))  # missing, a link loop, a FIFO for a file: one line, before Ray
    from_study = study_defaults(args)
    controls = verify_controls(args.controls, from_study.get("controls"))
    if controls is not None:
        from_study["controls"] = controls
    in_study = bool(from_study)
    margin, alpha = verdict_levels(args)
    options = VerifyOptions.of(  # verify's one check, each option named as its flag (--steps: a training flag)
        flags=True,
        top_k=args.top_k,
        seeds=args.seeds,
        max_seeds=args.max_seeds,
        pilot_seeds=args.pilot_seeds,
        method=args.interval,
        looks=args.looks,
        spending=args.spending,
        rate_check=args.rate_check,
        pack=args.pack,
    )
    given = verify_arguments(args)
    if given["steps"] is None and "tokens_per_param" not in given["train"]:
        given["train"] = {**from_study.pop("train", {}), **given["train"]}
    from_study.pop("train", None)  # a length given here replaces the study's
    from_study["allow_collapsed"] = bool(args.allow_collapsed or from_study.get("allow_collapsed"))
    if args.reference is not None:  # else the study's, else verify's default (cosine 1.5 -> 0.5)
        from_study["reference"] = args.reference
    result = verify(
        args.run_dir,
        top_k=options.top_k,
        seeds=options.seeds,
        max_seeds=options.max_seeds,
        pilot_seeds=options.pilot_seeds,
        **from_study,
        announce=lambda text: print(text, file=sys.stderr if args.json else sys.stdout, flush=True),
        **given,
        margin=margin,
        alpha=alpha,
        method=options.method,
        address=args.address,
        storage=args.storage,
        keep_checkpoints=args.keep_checkpoints,
        workers_per_trial=args.workers_per_trial,
        progress=not (args.json or args.quiet),
        looks=options.looks,
        spending=options.spending,
        rate_check=options.rate_check,
        pack=options.pack,
        yes=args.yes,
        max_hours=args.max_hours,
    )
    if not args.json:
        decided = f"{len(result.seeds)} seeds ({result.seeds[0]}..{result.seeds[-1]})" if result.seeds else "no seeds"
        pilot = f" after a pilot of {len(result.pilot)}" if result.pilot else ""
        print(
            f"verify: {len(result.planned)} (profile, seed) runs, {result.reused} reused, "
            f"{len(result.new_records)} trained; decided on {decided}{pilot}"
            + (f", {result.sequential['looks_taken']} looks" if result.sequential else "")
        )
    print_verdicts(result.verdicts, args.json, result.rate_check)
    if in_study and result.verdicts:
        _update_study(Path(args.run_dir).resolve(), result.verdicts[0].outcome, quiet=args.json or args.quiet)
    if not result.verdicts and not args.json:
        print("no verdict: no finished cosine re-evaluation (see trials.jsonl for failures)")
    if not args.no_report:
        from tlmsearch.report.run import write_report

        paths = write_report(args.run_dir, margin=margin, alpha=alpha, method=args.interval)
        if not args.json:
            print(f"wrote {paths['html']}")
    return 0
