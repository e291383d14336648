"""`tlmsearch profiles`: print (and draw) width profiles of a budget."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tlmsearch.cli import _profiles_throughput as throughput
from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ARCHITECTURE_NAMES, check_choice
from tlmsearch.core.validate import MAX_LAYERS, MAX_WIDTH, check_int, writable_file
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import FAMILIES, Budget, ProfileSpec, expand_profile_sets, joint, shape_stats
from tlmsearch.profiles.spaces import builtin_spaces, load_space, prior_fractions

HELP = "show per-layer MLP widths of profile families under one exact budget"
DESCRIPTION = """\
Show the integer per-layer MLP widths that profile families give under one budget
(n_layers x base_width hidden units in total, widths multiples of --multiple-of), their sum
and their shape statistics. Every profile of a budget has exactly the same parameter count.

families (name: parameters with defaults):
{families}

examples:
  tlmsearch profiles --layers 24 --base-width 4096 --multiple-of 256 \\
      --family cosine:start=1.5,end=0.5 --family uniform
  tlmsearch profiles --preset cpu-s --family groups:early --family groups:late --json
  tlmsearch profiles --preset cpu-s --family literature
  tlmsearch profiles --layers 12 --base-width 512 --family knots:k0=1,k1=2,k2=0.5 --plot p.html
  tlmsearch profiles --preset cpu-s --family cosine:start=1.5,end=0.5 --family groups:late --throughput
"""


def _families_help() -> str:
    lines = []
    for fam in FAMILIES.values():
        params = ", ".join(f"{k}={v}" for k, v in fam.defaults.items())
        if fam.indexed:
            params = ", ".join(filter(None, [params, f"{fam.indexed}0, {fam.indexed}1, ..."]))
        lines.append(f"  {fam.name}: {params or '-'}\n      {fam.description}")
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = DESCRIPTION.format(families=_families_help())
    p.add_argument("--layers", type=int, help="number of layers, at most 10000 (default: from --preset)")
    p.add_argument("--base-width", type=int, help="uniform MLP width per layer, at most 2**30 (default: from --preset)")
    p.add_argument("--multiple-of", type=int, help="every width is a multiple of this (default: preset's, else 1)")
    p.add_argument("--min-width", type=int, help="smallest allowed width (default: --multiple-of)")
    p.add_argument("--max-width", type=int, help="largest allowed width (default: no bound)")
    p.add_argument("--preset", help="take layers, base width and multiple from a model preset (e.g. cpu-s)")
    p.add_argument(
        "--family",
        action="append",
        metavar="SPEC",
        help="family[:param=value,...], repeatable, or the set 'literature' (openelm, reverse, frame, crown, middle, "
        "bowtie) (default: uniform and cosine:start=1.5,end=0.5)",
    )
    p.add_argument("--spaces", action="store_true", help="list the built-in search spaces and exit")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--plot", metavar="FILE.html", help="also draw the profiles side by side into an HTML file")
    throughput.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    # every flag checked before any work: a value given is used as given (0 is not "unset")
    for flag, value, high in (
        ("--layers", args.layers, MAX_LAYERS),
        ("--base-width", args.base_width, MAX_WIDTH),
        ("--multiple-of", args.multiple_of, MAX_WIDTH),
        ("--min-width", args.min_width, MAX_WIDTH),
        ("--max-width", args.max_width, MAX_WIDTH),
    ):
        if value is not None:
            check_int(flag, value, 1, high)
    # --arch has a default, so whether it was given cannot be told: check it always (an unknown
    # name is an error with or without --throughput, never silently unused)
    check_choice("--arch", args.arch, ARCHITECTURE_NAMES)
    if args.throughput:  # its flags before the table is printed, not after
        throughput.check_args(args)
    if args.plot:
        writable_file(args.plot, "--plot")
    if args.spaces:
        return _list_spaces(args)
    layers, base, multiple = args.layers, args.base_width, args.multiple_of
    if args.preset:
        pre = preset(args.preset)
        layers = pre.n_layers if layers is None else layers
        base = pre.base_width if base is None else base
        multiple = pre.multiple_of if multiple is None else multiple
    if layers is None or base is None:
        raise ConfigError("give --layers and --base-width, or a --preset to take them from")
    budget = Budget(layers, base, 1 if multiple is None else multiple, args.min_width, args.max_width)
    specs = [ProfileSpec.parse(s) for s in expand_profile_sets(args.family or ["uniform", "cosine:start=1.5,end=0.5"])]
    if args.throughput:
        if not args.json:
            print(_tables(budget, [_row(spec, budget) for spec in specs]) + "\n")
        return throughput.run(args, budget, specs)
    rows: list[dict[str, Any]] = []
    for spec in specs:
        rows.append(_row(spec, budget))
    for spec in specs:
        if spec.family == joint.FAMILY and joint.moves_more_than_mlp(spec.resolved().params):
            print(
                f"note: {spec} moves heads or block widths too: the widths shown are its MLP shape on this budget; "
                "the trained model's MLP widths are solved with them on the preset's model (trials.jsonl's model)",
                file=sys.stderr,
            )
    if args.json:
        json.dump({"budget": {**budget.to_dict(), "total": budget.total}, "profiles": rows}, sys.stdout, indent=2)
        print()
    else:
        print(_tables(budget, rows))
    if args.plot:
        from tlmsearch.plots import profiles_figure  # plotly on use; not needed for --help

        fig = profiles_figure({r["profile"]: r["widths"] for r in rows}, title=_budget_line(budget))
        try:
            fig.write_html(args.plot, include_plotlyjs=True)
        except OSError as exc:  # checked up front; this is a race (the folder went away meanwhile)
            raise ConfigError(f"--plot: cannot write {args.plot} ({exc.strerror or exc})") from None
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


PRIOR_DRAWS = 500  # per space: a standard error of at most 2.3 points on each fraction (~1 s)


def _list_spaces(args: argparse.Namespace) -> int:
    """Each space's dimension and how its prior spreads over shapes on one budget (the
    --preset's, default cpu-s, with --layers/--base-width/--multiple-of applied)."""
    pre = preset(args.preset or "cpu-s")
    budget = Budget(args.layers or pre.n_layers, args.base_width or pre.base_width, args.multiple_of or pre.multiple_of)
    print(
        f"built-in search spaces (or pass a .py file to --space); dimension at {budget.n_layers} layers, and the "
        f"prior's shapes: {PRIOR_DRAWS} draws of Optuna's RandomSampler (seed 0) projected onto\n"
        f"{_budget_line(budget)}"
    )
    names = builtin_spaces()
    col = max(10, *(len(name) for name in names))  # the name column fits the longest name
    print(f"  {'space':<{col}} {'dim':>3}  {'non-incr':>8} {'non-decr':>8} {'non-mono':>8} {'const':>6}  description")
    for name in names:
        space = load_space(name)
        f = prior_fractions(space, budget, n=PRIOR_DRAWS)
        shares = " ".join(f"{100 * f[k]:>7.1f}%" for k in ("non-increasing", "non-decreasing", "non-monotone"))
        const = f"{100 * f['constant']:>5.1f}%"
        print(f"  {name:<{col}} {space.dimension(budget.n_layers):>3}  {shares} {const}  {space.description}")
    return 0


def _row(spec: ProfileSpec, budget: Budget) -> dict[str, Any]:
    widths = spec.widths(budget)
    return {"profile": str(spec), "widths": list(widths), "sum": sum(widths), **shape_stats(widths).to_dict()}


def _budget_line(b: Any) -> str:
    hi = "no bound" if b.max_width is None else str(b.hi)
    return (
        f"budget: {b.n_layers} layers x {b.base_width} = {b.total} MLP hidden units, "
        f"widths multiples of {b.multiple_of} in [{b.lo}, {hi}]"
    )


def _tables(budget: Any, rows: list[dict[str, Any]]) -> str:
    names = [r["profile"] for r in rows]
    colw = [max(10, len(n)) for n in names]
    out = [_budget_line(budget), ""]
    out.append("layer  " + "  ".join(n.rjust(w) for n, w in zip(names, colw, strict=True)))
    for layer in range(budget.n_layers):
        cells = (str(r["widths"][layer]).rjust(w) for r, w in zip(rows, colw, strict=True))
        out.append(f"{layer:>5}  " + "  ".join(cells))
    out.append("  sum  " + "  ".join(str(r["sum"]).rjust(w) for r, w in zip(rows, colw, strict=True)))
    out.append("")
    stats = [
        ("front-load index", "front_load", "{:.3f}"),
        ("monotonicity", "monotonicity", "{}"),
        ("spearman(depth)", "spearman", "{:+.3f}"),
        ("first/last ratio", "first_last_ratio", "{:.3f}"),
        ("best cosine start", "cosine_start", "{:.3f}"),
        ("best cosine end", "cosine_end", "{:.3f}"),
        ("distance to cosine", "cosine_distance", "{:.4f}"),
    ]
    label_w = max(len(s[0]) for s in stats)
    for label, key, fmt in stats:
        cells = (fmt.format(r[key]).rjust(w) for r, w in zip(rows, colw, strict=True))
        out.append(label.ljust(label_w) + "  " + "  ".join(cells))
    return "\n".join(out)
