"""Mutation testing of one module: how much of its behaviour do its own unit tests hold?

    python -m tools.mutate tlmsearch/profiles/budget.py -n 50 --seed 51

Every mutant is one small change to the module's source (operators below), made in memory:
the named test files run in a fresh interpreter (`pytest -x -q -p no:cacheprovider`) whose
import system serves the mutated source for that one module, so the tree on disk is never
touched. A mutant is *killed* when the tests fail (or the module no longer imports), *survives*
when they pass, and *times out* when they run longer than `--timeout` seconds (default: 3 x the
unmutated run + 10 s; counted as killed, since an endless loop is caught by any test run).

Sampling: every mutant the operators give is enumerated in source order, and `-n N` of them are
drawn uniformly without replacement with `random.Random(seed)` (all of them when N is larger).
The same source, N and seed give the same sample. The score is
(killed + timed out) / (sampled - equivalent).

Equivalent mutants (changes no test can see: the same behaviour by another route) are listed
per module in `tools/mutants/<module path with dots>.toml`, each as its change (`mutant`, as
this command prints it), the text of its line (`in`, stripped), where in that text the change
starts (`at`, from 0; `--json` writes both for every sampled mutant) and the reason. That file
also names the module's own tests, the default for `--tests`. A listed mutant that a test kills
is reported, and `tests/unit/test_mutate_tool.py` fails on an entry that matches no mutant.

The operators: comparison flips (`<` and `<=`, `>` and `>=`, `==` and `!=`, `in` and `not in`,
`is` and `is not`); arithmetic swaps (`+` and `-`, `*` and `/`, `//` to `/`, `%` to `*`, `**`
to `*`, the same for augmented assignment, a unary minus dropped); numeric constants +1 and -1;
boolean negation (`and` and `or`, `not x` to `x`, the test of an `if`, `while`, `assert` or
conditional expression negated, `True` and `False`); a returned value replaced by `None`; a
statement removed (an assignment, a call, a `raise`, `break` or `continue` replaced by `pass`).
Docstrings, imports, annotations, `__all__` and f-strings are left alone.
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTS = Path(__file__).resolve().parent / "mutants"

_COMPARE_FLIPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_ARITHMETIC_SWAPS: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.Mult,
    ast.Pow: ast.Mult,
}
_REMOVABLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Raise, ast.Break, ast.Continue)


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One change: `operator` at `line` turns the text `before` into `after`."""

    line: int
    col: int
    operator: str
    before: str
    after: str
    context: str  # the text of the line where the change starts, stripped
    at: int  # where the change starts in `context`
    source: str = dataclasses.field(repr=False, compare=False)

    @property
    def change(self) -> str:
        return f"{self.operator}: {self.before} -> {self.after}"

    @property
    def key(self) -> tuple[str, str, int]:
        """How the equivalence lists name it (`mutant`, `in`, `at`): stable while its line's text stays."""
        return self.change, self.context, self.at

    def describe(self) -> str:
        return f"line {self.line}:{self.col}: {self.change}"


def _one_line(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """ids of the nodes no operator touches: docstrings, imports, annotations, `__all__`, f-strings."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                mark(first)
        if isinstance(node, ast.Import | ast.ImportFrom | ast.JoinedStr):
            mark(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            mark(node.returns)
            for a in [
                *node.args.posonlyargs,
                *node.args.args,
                *node.args.kwonlyargs,
                node.args.vararg,
                node.args.kwarg,
            ]:
                if a is not None:
                    mark(a.annotation)
        elif isinstance(node, ast.AnnAssign):
            mark(node.annotation)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            mark(node)
    return skip


def _changes(node: ast.AST) -> Iterator[tuple[str, ast.AST, ast.AST]]:
    """(operator, the node replaced, its replacement) for every mutation at `node`."""
    swap = _ARITHMETIC_SWAPS.get(type(getattr(node, "op", None)))
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE_FLIPS:
                new = copy.deepcopy(node)
                new.ops[i] = _COMPARE_FLIPS[type(op)]()
                yield "compare", node, new
    elif isinstance(node, ast.BinOp) and swap is not None:
        yield "arithmetic", node, ast.BinOp(copy.deepcopy(node.left), swap(), copy.deepcopy(node.right))
    elif isinstance(node, ast.AugAssign) and swap is not None:
        yield "arithmetic", node, ast.AugAssign(copy.deepcopy(node.target), swap(), copy.deepcopy(node.value))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield "arithmetic", node, copy.deepcopy(node.operand)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "negate", node, copy.deepcopy(node.operand)
    elif isinstance(node, ast.BoolOp):
        yield "negate", node, ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values)
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield "negate", node, ast.Constant(not node.value)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        for step in (1, -1):
            yield "constant", node, ast.Constant(node.value + step)
    elif isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
        yield "negate", node.test, ast.UnaryOp(ast.Not(), copy.deepcopy(node.test))
    if isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield "return", node, ast.Return(ast.Constant(None))
    if isinstance(node, _REMOVABLE) and not (isinstance(node, ast.AnnAssign) and node.value is None):
        yield "remove", node, ast.Pass()


def _offsets(source: str) -> list[int]:
    starts, pos = [0], 0
    for line in source.splitlines(keepends=True):
        pos += len(line.encode())
        starts.append(pos)
    return starts


def mutants(source: str) -> list[Mutant]:
    """Every mutant of `source`, in source order (line, column, operator, replacement)."""
    tree = ast.parse(source)
    skip = _skipped_nodes(tree)
    raw = source.encode()
    starts = _offsets(source)
    lines = source.splitlines()
    out: dict[str, Mutant] = {}
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.expr | ast.stmt):
            continue
        for operator, target, new in _changes(node):
            begin = starts[target.lineno - 1] + target.col_offset
            end = starts[target.end_lineno - 1] + target.end_col_offset  # type: ignore[operator]
            text = ast.unparse(ast.fix_missing_locations(new))
            # an expression goes in parentheses so that it binds as the node it replaces did
            after = text if isinstance(target, ast.stmt) else f"({text})"
            mutated = (raw[:begin] + after.encode() + raw[end:]).decode()
            if mutated in out or ast.dump(new) == ast.dump(target):  # the same change, or none
                continue
            try:
                ast.parse(mutated)
            except SyntaxError:
                continue
            before = _one_line(raw[begin:end].decode())
            context = lines[target.lineno - 1]
            at = target.col_offset - (len(context) - len(context.lstrip()))
            out[mutated] = Mutant(
                target.lineno, target.col_offset, operator, before, _one_line(text), context.strip(), at, mutated
            )
    return sorted(out.values(), key=lambda m: (m.line, m.col, m.operator, m.after))


def sample(all_mutants: list[Mutant], n: int, seed: int) -> list[Mutant]:
    """`n` mutants drawn uniformly without replacement with random.Random(seed), in source order."""
    if n >= len(all_mutants):
        return list(all_mutants)
    chosen = random.Random(seed).sample(range(len(all_mutants)), n)
    return [all_mutants[i] for i in sorted(chosen)]


# The child interpreter: serve the mutated source for one module, then run pytest.
_CHILD = r"""
import importlib.abc, importlib.util, sys
module, path, source, args = sys.argv[1], sys.argv[2], open(sys.argv[3]).read(), sys.argv[4:]

class Mutated(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, target_path=None, target=None):
        if name != module:
            return None
        return importlib.util.spec_from_file_location(name, path, loader=self)
    def create_module(self, spec):
        return None
    def exec_module(self, mod):
        exec(compile(source, path, "exec", dont_inherit=True), mod.__dict__)

sys.meta_path.insert(0, Mutated())
import pytest
sys.exit(pytest.main(args))
"""


def module_name(path: Path) -> str:
    rel = path.resolve().relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def run_tests(
    module: str, path: Path, source: str, tests: list[str], markers: str, timeout: float | None
) -> tuple[str, float]:
    """('passed' | 'failed' | 'timeout', seconds) for the tests with `source` as the module."""
    args = ["-x", "-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts="]
    if markers:
        args += ["-m", markers]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    start = time.monotonic()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
        tmp = Path(f.name)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, module, str(path), str(tmp), *args, *tests],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return "timeout", time.monotonic() - start
    finally:
        tmp.unlink(missing_ok=True)
    if rc == 5:
        raise SystemExit(f"mutate: the tests {' '.join(tests)} collected no test (markers {markers!r})")
    return ("passed" if rc == 0 else "failed"), time.monotonic() - start


def load_list(module: str) -> tuple[list[str], dict[tuple[str, str, int], str]]:
    """(the module's own tests, {(mutant, its line's text, where in it): why it is equivalent})
    from tools/mutants/<module>.toml."""
    path = LISTS / f"{module}.toml"
    if not path.is_file():
        return [], {}
    data = tomllib.loads(path.read_text())
    equivalent = {(e["mutant"], e["in"], e["at"]): e["reason"] for e in data.get("equivalent", [])}
    return list(data.get("tests", [])), equivalent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.mutate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("module", type=Path, help="the module's file, e.g. tlmsearch/profiles/budget.py")
    parser.add_argument("--tests", nargs="+", help="test files to run (default: the module's list in tools/mutants/)")
    parser.add_argument("-n", type=int, default=50, help="mutants to sample uniformly (default 50)")
    parser.add_argument("--seed", type=int, default=51, help="seed of the sample (default 51)")
    parser.add_argument("--timeout", type=float, help="seconds per mutant (default: 3 x the unmutated run + 10)")
    parser.add_argument("-m", dest="markers", default="not slow", help='pytest -m expression (default "not slow")')
    parser.add_argument("--list", action="store_true", help="print the sampled mutants and run nothing")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)

    path = args.module.resolve()
    if not path.is_file() or path.suffix != ".py":
        parser.error(f"{args.module} is not a Python file")
    try:
        module = module_name(path)
    except ValueError:
        parser.error(f"{args.module} is not inside {ROOT}")
    if args.n < 1:
        parser.error(f"-n {args.n}: give at least 1 mutant")
    listed_tests, equivalent = load_list(module)
    tests = args.tests or listed_tests
    if not tests:
        parser.error(f"no tests named: pass --tests or list them in {LISTS / (module + '.toml')}")
    missing = [t for t in tests if not (ROOT / t).exists()]
    if missing:
        parser.error(f"no such test file: {', '.join(missing)}")

    source = path.read_text()
    every = mutants(source)
    chosen = sample(every, args.n, args.seed)
    print(f"{module}: {len(every)} mutants, {len(chosen)} sampled with seed {args.seed}; tests: {' '.join(tests)}")
    if args.list:
        for m in chosen:
            flag = "  [equivalent]" if m.key in equivalent else ""
            print(f"  {m.describe()}{flag}")
        return 0

    status, base = run_tests(module, path, source, tests, args.markers, None)
    if status != "passed":
        print("mutate: the tests fail on the unmutated module; fix them first", file=sys.stderr)
        return 1
    timeout = args.timeout or 3.0 * base + 10.0
    print(f"unmutated run: {base:.1f} s; timeout per mutant {timeout:.0f} s")

    results = []
    for i, m in enumerate(chosen, 1):
        outcome, seconds = run_tests(module, path, m.source, tests, args.markers, timeout)
        state = {"failed": "killed", "passed": "survived", "timeout": "timeout"}[outcome]
        if m.key in equivalent:
            state = "equivalent" if state == "survived" else f"{state} (listed as equivalent)"
        results.append(
            {
                "line": m.line,
                "mutant": m.change,
                "in": m.context,
                "at": m.at,
                "state": state,
                "seconds": round(seconds, 1),
            }
        )
        print(f"[{i}/{len(chosen)}] {state:<10} {m.describe()}", flush=True)

    counts = {s: sum(r["state"] == s for r in results) for s in ("killed", "timeout", "survived", "equivalent")}
    wrong = [r for r in results if "listed as equivalent" in r["state"]]
    scored = len(results) - counts["equivalent"]
    score = (counts["killed"] + counts["timeout"]) / scored if scored else 1.0
    print(
        f"\n{module}: {len(results)} sampled (seed {args.seed}), killed {counts['killed']}, "
        f"timeout {counts['timeout']}, survived {counts['survived']}, "
        f"equivalent {counts['equivalent']}: score {100 * score:.0f} %"
    )
    for r in results:
        if r["state"] == "survived":
            print(f"  survived: line {r['line']}: {r['mutant']}")
    for r in wrong:
        print(f"  listed as equivalent but {r['state'].split()[0]}: line {r['line']}: {r['mutant']}")
    if args.json:
        summary = {"module": module, "seed": args.seed, "n": args.n, "tests": tests, "markers": args.markers}
        args.json.write_text(json.dumps({**summary, **counts, "score": score, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
