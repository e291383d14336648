"""The package's layers point down: no import cycle, no upward edge, no unexplained lazy import.

The checker reads the installed package's sources (`tlmsearch.__file__`, so it checks the code
that the other tests import, wherever the tests live) with `ast`: every `import` statement
counts, including those inside functions and under `if TYPE_CHECKING:`, so it needs no heavy
library and sees what a plain `import` test would miss (a cycle hidden by a function-level
import). Every check is a function of the package's root directory, so
`test_a_planted_cycle_is_caught` can run it on a damaged copy and see it fail, and
`test_it_sees_every_module` guards against the checker quietly reading nothing.

Layers, bottom to top: the domains of design.md "Layout" (its list read from the bottom up),
each naming the top-level packages that make it up (`DOMAINS` below). A module may import its
own domain and the domains below, never one above; `tuning` additionally never imports what
draws or writes reports (`FORBIDDEN`). Where the package differs from the layout: a bottom layer
of leaves that everything reads (errors, and two pure formulas that rundir/ and analysis/ both
use: the Pareto front and the noise floor); models/ and data/ share a layer, below profiles/ (the
joint budget solve in profiles/ counts a model's parameters with models/counts.py), and ladders/
share the studies'. A new top-level module fails `test_every_package_has_a_layer...` until it is placed.

The picture of the house is the same graph read package by package (`package_edges`). It holds
no cycle (`package_cycles`: modules free of cycles can still sit in packages that import each
other, as configs/ and profiles/ did until issue 51 moved the config machinery to core/) and no
arrow into a higher layer (`package_upward_edges`); the top level holds at most `MAX_ROOMS`
modules and packages (`rooms`), and the longest chain of imports between them is at most
`MAX_FLOORS` packages long (`floors`).

Function-level imports of the package's own modules (the import runs when the function is
called, not when the module is imported) are allowed without comment in the command line only
(`cli/`, `__main__`): each command imports what it needs inside the command, so that the
parsers build from the bottom layers alone and `tlmsearch --help` stays fast
(tests/unit/cli/test_cli_config_flags.py checks that path). Anywhere else such an import states
its reason, in a comment on the line of the `import`/`from` keyword or on the line just above:

    from tlmsearch.training.trainer import train  # lazy: heavy (torch)

    # lazy: heavy (ray, torch)
    from tlmsearch.tuning.searcher import make_searcher

    from tlmsearch.some.module import name  # lazy: <why it must wait, in words>

A reason of the form `heavy (<libraries>)` is checked: each named library is one of `HEAVY`,
the imported module loads it when imported, and the importing module does not already load it
at its top (else waiting defers nothing). Any other reason is free text and must say why the
import waits; "a cycle" is never a reason (the function-level import is an edge like any
other, and the cycle check sees it). A function-level import of a module that the same file
already imports at its top has no reason at all: import the name at the top.

A module named by its import path in a string (`"tlmsearch.x.y:name"`, for `importlib`) is an
edge like an `import` (`BY_NAME`): reaching a module that way loads it all the same, so it must
not hide a cycle or an upward edge from the checks. The one place that names modules that way
by design is the architecture registry (`REGISTRIES`): an architecture is a plugin named by its
import path, the package's own four included, so that one outside the package needs no
registration; its names are not edges.

`python tests/unit/test_layers.py` prints the picture: modules, edges, and each finding.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import tlmsearch

ROOT = Path(tlmsearch.__file__).resolve().parent
MIN_MODULES = 100  # about 165 .py files under tlmsearch/: far fewer means the checker lost its way
HEAVY = ("torch", "ray", "optuna", "plotly", "pandas", "scipy", "numpy")

# Bottom to top: (domain as design.md names it, the top-level modules and packages that hold it).
# A module imports its own domain and those below it, never one above.
DOMAINS: list[tuple[str, tuple[str, ...]]] = [
    ("leaves: errors and pure formulas", ("errors", "pareto", "noise_floor")),
    ("core/", ("core",)),
    ("models/ and data/", ("models", "data")),
    ("profiles/", ("profiles",)),
    ("configs/", ("configs",)),
    ("training/", ("training",)),
    ("costs/", ("costs",)),
    ("rundir/", ("rundir",)),
    ("analysis/", ("analysis",)),
    ("report/, plots/, export/", ("report", "plots", "export")),
    ("studies/ and ladders/", ("studies", "ladders")),
    ("tuning/", ("tuning",)),
    ("api", ("api",)),
    ("cli/", ("cli", "__main__", "")),  # "" is tlmsearch/__init__.py: the lazy public API
]  # fmt: skip
LAYERS: dict[str, int] = {package: layer for layer, (_, packages) in enumerate(DOMAINS) for package in packages}
# importer -> imported (module prefixes) that the layers alone would allow: training never draws
# or writes reports
FORBIDDEN = {
    ("tlmsearch.tuning", f"tlmsearch.{p}") for p in ("report", "plots", "export", "studies.report", "studies.readme")
}
MAX_ROOMS = 25  # modules and packages at the top of tlmsearch/ (issue 28: a hall, not a flat maze)
MAX_FLOORS = 14  # the longest chain of package-level imports, __main__ to the leaves (core/, models/,
# profiles/ and configs/ one floor each since issue 51)
# where a function-level import of our own modules needs no stated reason (see the docstring)
DEFERRING = ("cli", "__main__")

# modules (fnmatch patterns) whose import-path strings name plugins, not edges (see the docstring), and why
REGISTRIES = {
    "tlmsearch.core.architectures": "ARCHITECTURES names each family's spec by import path, as a plugin's",
    "tlmsearch.models.*_spec": "each ArchSpec names its nn.Module by import path, as a plugin's",
}

TOP, TYPE_ONLY, IN_FUNCTION, BY_NAME = "top", "type-only", "in-function", "by-name"
IMPORT_PATH = re.compile(r"(?P<module>tlmsearch(\.\w+)+)(:\w+)?")
REASON = re.compile(r"#\s*lazy:\s*(?P<reason>\S.*?)\s*$")
HEAVY_REASON = re.compile(r"heavy \((?P<libs>[^)]*)\)")


@dataclass(frozen=True)
class Import:
    """One edge: `source` imports `target` (a module of the package) at `line`."""

    source: str
    target: str
    where: str  # TOP (runs on import), TYPE_ONLY (under `if TYPE_CHECKING:`), IN_FUNCTION, BY_NAME
    line: int
    reason: str | None  # the `# lazy: ...` comment on that line or the line above


@dataclass
class Graph:
    modules: set[str]
    imports: dict[str, list[Import]]  # module -> its imports of the package's own modules
    loads: dict[str, set[str]] = field(default_factory=dict)  # module -> heavy libraries it loads when imported

    @property
    def edges(self) -> dict[str, set[str]]:
        return {m: {i.target for i in items} for m, items in self.imports.items()}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str) -> str:
    """The top-level module or package below tlmsearch ("" for tlmsearch/__init__.py)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _absolute(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _walk(node: ast.AST, where: str) -> Iterator[tuple[ast.AST, str]]:
    """Every node below `node`, with where it runs."""
    for child in ast.iter_child_nodes(node):
        here = where
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            here = IN_FUNCTION
        elif isinstance(node, ast.If) and child in node.body and _is_type_checking(node.test) and where == TOP:
            here = TYPE_ONLY
        yield child, here
        yield from _walk(child, here)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _reason(lines: list[str], line: int) -> str | None:
    """The `# lazy: ...` reason on line `line` (1-based) or on a comment line just above it."""
    match = REASON.search(lines[line - 1])
    if match is None and line > 1 and lines[line - 2].lstrip().startswith("#"):
        match = REASON.search(lines[line - 2])
    return match["reason"] if match else None


def _served_lazily(path: Path, module: str) -> dict[str, str]:
    """name -> module, for the names a package's `__init__` hands out through a module-level
    `__getattr__` (importing them loads that module): read from its `if TYPE_CHECKING:` imports."""
    tree = ast.parse(path.read_text(), str(path))
    if not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
        return {}
    served = {}
    for node in tree.body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                if isinstance(child, ast.ImportFrom):
                    base = _absolute(module, True, child)
                    served.update({a.asname or a.name: base for a in child.names})
    return served


def _registry(module: str) -> bool:
    return any(fnmatch.fnmatchcase(module, pattern) for pattern in REGISTRIES)


def _raw_imports(
    path: Path, module: str, modules: set[str], lazy: dict[str, dict[str, str]]
) -> Iterator[tuple[str, str, int, str | None]]:
    """(imported name, where, line, reason) for every import statement of the file."""
    text = path.read_text()
    lines = text.splitlines()
    for node, where in _walk(ast.parse(text, str(path)), TOP):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and not _registry(module):
            named = IMPORT_PATH.fullmatch(node.value)
            if named is not None:  # a module reached by its import path (importlib): an edge all the same
                yield named["module"], BY_NAME, node.lineno, None
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, path.name == "__init__.py", node)
            # `from pkg import mod` imports the submodule pkg.mod when there is one; a name that
            # pkg's `__getattr__` serves imports the module it comes from
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            names += [lazy[base][a.name] for a in node.names if a.name in lazy.get(base, {})]
        else:
            continue
        reason = _reason(lines, node.lineno) if where == IN_FUNCTION else None
        for name in names:
            yield name, where, node.lineno, reason


def build_graph(root: Path) -> Graph:
    """The import graph of the package at `root` (a directory holding `__init__.py`)."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    package = root.name
    graph = Graph(modules, {m: [] for m in modules}, {m: set() for m in modules})
    lazy = {m: _served_lazily(p, m) for m, p in files.items() if p.name == "__init__.py"}
    for mod, path in files.items():
        seen: set[tuple[str, str, int]] = set()
        for name, where, line, reason in _raw_imports(path, mod, modules, lazy):
            top = name.split(".")[0]
            if top in HEAVY and where == TOP:
                graph.loads[mod].add(top)
            if top != package:
                continue
            target = name
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            # importing a.b.c runs the package a.b's __init__ first (tlmsearch's own is lazy)
            parents = [target.rsplit(".", i)[0] for i in range(1, target.count("."))]
            for t in [target, *parents]:
                if t in modules and t != mod and not mod.startswith(t + ".") and (t, where, line) not in seen:
                    seen.add((t, where, line))
                    graph.imports[mod].append(Import(mod, t, where, line, reason))
    # a module loads what the modules it imports at its top load
    changed = True
    while changed:
        changed = False
        for mod in modules:
            for i in graph.imports[mod]:
                if i.where == TOP and not graph.loads[i.target] <= graph.loads[mod]:
                    graph.loads[mod] |= graph.loads[i.target]
                    changed = True
    return graph


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def upward_edges(edges: dict[str, set[str]]) -> list[str]:
    """Edges into a higher layer, or between modules that `FORBIDDEN` keeps apart."""
    bad = []
    for mod, targets in sorted(edges.items()):
        src = package_of(mod)
        for t in sorted(targets):
            dst = package_of(t)
            if src == dst or src not in LAYERS or dst not in LAYERS:
                continue  # a package without a layer is `unplaced_packages`'s finding
            if LAYERS[dst] > LAYERS[src] or any(_under(mod, a) and _under(t, b) for a, b in FORBIDDEN):
                bad.append(f"{mod} -> {t}")
    return bad


def unexplained_lazy_imports(graph: Graph) -> list[str]:
    """Function-level imports of our own modules, outside `DEFERRING`, whose reason is missing
    or untrue (see the module's docstring for the convention)."""
    bad = []
    for mod, items in sorted(graph.imports.items()):
        if package_of(mod) in DEFERRING:
            continue
        at_top = {i.target for i in items if i.where == TOP}
        lines: dict[int, list[Import]] = {}
        for i in items:
            if i.where == IN_FUNCTION and i.target != "tlmsearch":
                lines.setdefault(i.line, []).append(i)
        for line, found in sorted(lines.items()):
            target = max((i.target for i in found), key=len)
            reason = found[0].reason
            where = f"{mod}:{line} imports {target}"
            if target in at_top:
                bad.append(f"{where}, which the file imports at its top: import the name there")
            elif reason is None:
                bad.append(f"{where} with no stated reason (# lazy: ...)")
            elif "cycle" in reason:
                bad.append(f"{where} to dodge a cycle ({reason}): a cycle is a cycle, move the shared piece down")
            elif reason.startswith("heavy"):
                bad.extend(f"{where}: {p}" for p in _heavy_reason_problems(graph, mod, found, reason))
    return bad


def _heavy_reason_problems(graph: Graph, mod: str, found: list[Import], reason: str) -> list[str]:
    match = HEAVY_REASON.fullmatch(reason)
    if match is None:
        return [f"'{reason}' should read 'heavy (<libraries>)'"]
    named = {lib.strip() for lib in match["libs"].split(",") if lib.strip()}
    loaded = set().union(*(graph.loads[i.target] for i in found))
    problems = [f"{lib} is not one of the heavy libraries {HEAVY}" for lib in sorted(named - set(HEAVY))]
    problems += [f"it does not load {lib}" for lib in sorted((named & set(HEAVY)) - loaded)]
    problems += [f"{mod} loads {lib} at its top already" for lib in sorted(named & graph.loads[mod])]
    return problems or ([] if named else [f"'{reason}' names no library"])


def package_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The picture of the house: each top-level module or package -> those it imports ("" is
    tlmsearch/__init__.py)."""
    picture: dict[str, set[str]] = {}
    for mod, targets in edges.items():
        src = package_of(mod)
        picture.setdefault(src, set()).update(package_of(t) for t in targets if package_of(t) != src)
    return picture


def _room(package: str) -> str:
    return package or "__init__"


def package_cycles(picture: dict[str, set[str]]) -> list[list[str]]:
    """The packages of `picture` that import each other, directly or round a chain. The modules
    can be free of cycles while their packages are not (configs/ and profiles/ before issue 51:
    profiles.budget imported configs.base, configs.search imported profiles): two rooms that
    stand on each other are one room in two places, so the checks refuse it like a module cycle."""
    return [[_room(p) for p in c] for c in cycles(picture)]


def package_upward_edges(picture: dict[str, set[str]]) -> list[str]:
    """The arrows of `picture` into a higher layer, one per pair of packages."""
    return [
        f"{_room(src)} -> {_room(dst)}"
        for src, targets in sorted(picture.items())
        for dst in sorted(targets)
        if src in LAYERS and dst in LAYERS and LAYERS[dst] > LAYERS[src]
    ]


def floors(picture: dict[str, set[str]]) -> int:
    """The most packages on one chain of imports of `picture`, the packages of a cycle (which the
    layers allow within one layer only) counted as one floor."""
    merged = {p: frozenset(c) for c in cycles(picture) for p in c}
    height: dict[frozenset[str], int] = {}

    def node(p: str) -> frozenset[str]:
        return merged.get(p, frozenset({p}))

    def up(n: frozenset[str]) -> int:
        if n not in height:
            below = {node(t) for p in n for t in picture.get(p, ())} - {n}
            height[n] = 1 + max((up(b) for b in below), default=0)
        return height[n]

    return max((up(node(p)) for p in picture), default=0)


def rooms(root: Path) -> list[str]:
    """The top level of the package at `root`: its modules (`__init__`, `__main__` included) and packages."""
    packages = [f"{p.name}/" for p in root.iterdir() if (p / "__init__.py").is_file()]
    return sorted([p.name for p in root.glob("*.py")] + packages)


def unplaced_packages(root: Path) -> tuple[list[str], list[str]]:
    """(packages of the tree that `DOMAINS` does not place, names in `DOMAINS` that the tree lacks)."""
    found = {package_of(m) for m in build_graph(root).modules}
    return sorted(found - set(LAYERS)), sorted(set(LAYERS) - found)


# --- the checks on the package itself ------------------------------------------------------


@functools.cache
def _package() -> Graph:
    return build_graph(ROOT)


def test_it_sees_every_module() -> None:
    graph = _package()
    assert (ROOT / "__init__.py").is_file()
    assert len(graph.modules) >= MIN_MODULES, f"only {len(graph.modules)} modules under {ROOT}"
    assert len(graph.modules) == len(list(ROOT.rglob("*.py")))
    assert sum(map(len, graph.edges.values())) > 3 * MIN_MODULES  # it reads the imports too


@pytest.mark.slow
def test_every_package_has_a_layer_and_every_layer_a_package() -> None:
    assert unplaced_packages(ROOT) == ([], [])


def test_no_import_cycle() -> None:
    assert cycles(_package().edges) == []


def test_no_upward_import() -> None:
    assert upward_edges(_package().edges) == []


def test_function_level_imports_state_their_reason() -> None:
    assert unexplained_lazy_imports(_package()) == []


def test_no_package_cycle() -> None:
    assert package_cycles(package_edges(_package().edges)) == []


def test_no_package_upward_edge() -> None:
    assert package_upward_edges(package_edges(_package().edges)) == []


def test_the_top_level_is_a_few_domains_on_a_few_floors() -> None:
    found = rooms(ROOT)
    assert len(found) <= MAX_ROOMS, f"{len(found)} rooms at the top of tlmsearch/: {found}"
    picture = package_edges(_package().edges)
    assert floors(picture) <= MAX_FLOORS, picture


def test_no_top_level_name_hides_a_public_name() -> None:
    """Importing tlmsearch.<name>.x binds tlmsearch.<name> to the package: a package `train/`
    would replace the function `tlmsearch.train` (hence `training/`, `studies/`, `tuning/`)."""
    names = {room.removesuffix("/").removesuffix(".py") for room in rooms(ROOT)}
    assert names & set(tlmsearch.__all__) == set()


# --- the checker can fail -------------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tlmsearch"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + "\n" + text + "\n")


@pytest.mark.slow
def test_a_planted_cycle_is_caught(tmp_path: Path) -> None:
    """errors, the bottom of every layer, imports the search runner: a cycle and an upward edge."""
    root = _copy(tmp_path)
    before = cycles(_package().edges)  # the copy's graph before the plant is the package's (built once)
    _append(root / "errors.py", "from tlmsearch.tuning.runner import search  # noqa")
    edges = build_graph(root).edges
    assert "tlmsearch.tuning.runner" in edges["tlmsearch.errors"]
    assert cycles(edges) != before
    assert any({"tlmsearch.errors", "tlmsearch.tuning.runner"} <= set(c) for c in cycles(edges))
    assert "tlmsearch.errors -> tlmsearch.tuning.runner" in upward_edges(edges)


@pytest.mark.slow
def test_a_cycle_through_function_level_and_type_only_imports_is_caught(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "planted_a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tlmsearch import planted_b\n"
    )
    (root / "planted_b.py").write_text("def f():\n    from tlmsearch.planted_a import x  # lazy: heavy (torch)\n")
    graph = build_graph(root)
    assert ["tlmsearch.planted_a", "tlmsearch.planted_b"] in cycles(graph.edges)
    assert unplaced_packages(root) == (["planted_a", "planted_b"], [])
    assert [p for p in unexplained_lazy_imports(graph) if p.startswith("tlmsearch.planted")] == [
        "tlmsearch.planted_b:2 imports tlmsearch.planted_a: it does not load torch"
    ]


@pytest.mark.slow
def test_unexplained_and_untrue_lazy_imports_are_caught(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "profiles" / "planted.py").write_text(
        "from tlmsearch.errors import ConfigError\n"
        "\n"
        "def _planted():\n"
        "    from tlmsearch.errors import UserError\n"  # 4: errors is imported at the top already
        "    from tlmsearch.configs.storage import normalise\n"  # 5: no reason
        "    # lazy: heavy (torch)\n"
        "    from tlmsearch.training.trainer import train\n"  # 7: true (trainer loads torch, this file does not)
        "    from tlmsearch.pareto import front  # lazy: heavy (torch)\n"  # 8: untrue, pareto is pure
        "    from tlmsearch.profiles.spaces import load_space  # lazy: avoids a cycle\n"  # 9
        "    from tlmsearch.costs.rates import Rate  # lazy: heavy torch\n"  # 10: not the form
    )
    graph = build_graph(root)
    assert "tlmsearch.profiles.planted -> tlmsearch.training.trainer" in upward_edges(graph.edges)
    found = [p for p in unexplained_lazy_imports(graph) if p.startswith("tlmsearch.profiles.planted:")]
    assert [p.split(" imports ")[0] for p in found] == [f"tlmsearch.profiles.planted:{n}" for n in (4, 5, 8, 9, 10)]
    assert "which the file imports at its top" in found[0]
    assert "no stated reason" in found[1]
    assert "it does not load torch" in found[2]
    assert "a cycle is a cycle" in found[3]
    assert "should read 'heavy (<libraries>)'" in found[4]


@pytest.mark.slow
def test_a_name_served_by_a_lazy_getattr_counts_as_its_module(tmp_path: Path) -> None:
    """`from tlmsearch.models import build_model` loads models.build (and torch) through the
    package's `__getattr__`: at a module's top it makes the module heavy, in a function it is
    a true `heavy (torch)`."""
    root = _copy(tmp_path)
    (root / "planted_c.py").write_text("from tlmsearch.models import build_model\n")
    lazy = "def f():\n    from tlmsearch.models import build_model  # lazy: heavy (torch)\n"
    (root / "planted_d.py").write_text(lazy)
    graph = build_graph(root)
    assert "tlmsearch.models.build" in graph.edges["tlmsearch.planted_c"]
    assert "torch" in graph.loads["tlmsearch.planted_c"]
    assert [p for p in unexplained_lazy_imports(graph) if p.startswith("tlmsearch.planted")] == []


@pytest.mark.slow
def test_a_module_reached_by_its_import_path_is_an_edge(tmp_path: Path) -> None:
    """A resolver that reaches a module above it through `importlib` and a string (how
    configs/resolve.py once reached the joint solve in models/) is an upward edge all the same;
    the architecture registry's strings are plugins, not edges."""
    root = _copy(tmp_path)
    (root / "configs" / "planted.py").write_text(
        "import importlib\n"
        "\n"
        '_SOLVE = "tlmsearch.tuning.runner:search"\n'
        "\n"
        "def solve():\n"
        '    module, _, name = _SOLVE.partition(":")\n'
        "    return getattr(importlib.import_module(module), name)\n"
    )
    graph = build_graph(root)
    assert {(i.target, i.where) for i in graph.imports["tlmsearch.configs.planted"]} == {
        ("tlmsearch.tuning.runner", BY_NAME),
        ("tlmsearch.tuning", BY_NAME),  # its package runs first
    }
    assert "tlmsearch.configs.planted -> tlmsearch.tuning.runner" in upward_edges(graph.edges)
    assert not any(t.startswith("tlmsearch.models") for t in graph.edges["tlmsearch.core.architectures"])


def test_the_layers_hold_on_a_made_up_graph() -> None:
    edges = {"tlmsearch.rundir.a": {"tlmsearch.tuning.b"}, "tlmsearch.tuning.b": {"tlmsearch.rundir.a"}}
    assert cycles(edges) == [["tlmsearch.rundir.a", "tlmsearch.tuning.b"]]
    assert upward_edges(edges) == ["tlmsearch.rundir.a -> tlmsearch.tuning.b"]
    assert upward_edges({"tlmsearch.tuning": {"tlmsearch.report.run"}, "tlmsearch.report.run": set()}) == [
        "tlmsearch.tuning -> tlmsearch.report.run"
    ]


def test_a_package_cycle_between_acyclic_modules_is_caught() -> None:
    """The house before issue 51, in small: no module cycle and, with configs and profiles on one
    layer, no upward module edge, yet the two packages stand on each other."""
    edges = {
        "tlmsearch.configs.base": {"tlmsearch.errors"},
        "tlmsearch.configs.search": {"tlmsearch.configs.base", "tlmsearch.profiles.budget"},
        "tlmsearch.profiles.budget": {"tlmsearch.configs.base"},
        "tlmsearch.errors": set(),
    }  # fmt: skip
    assert cycles(edges) == []
    picture = package_edges(edges)
    assert package_cycles(picture) == [["configs", "profiles"]]
    assert package_upward_edges(picture) == ["profiles -> configs"]  # on today's layers, profiles/ is below
    moved = {  # issue 51's answer: the machinery in the ground room
        "tlmsearch.core.base": {"tlmsearch.errors"},
        "tlmsearch.configs.search": {"tlmsearch.core.base", "tlmsearch.profiles.budget"},
        "tlmsearch.profiles.budget": {"tlmsearch.core.base"},
        "tlmsearch.errors": set(),
    }  # fmt: skip
    assert package_cycles(package_edges(moved)) == package_upward_edges(package_edges(moved)) == []


def test_a_package_upward_edge_is_caught_once_per_pair() -> None:
    edges = {
        "tlmsearch.core.base": {"tlmsearch.profiles.budget", "tlmsearch.profiles.spec", "tlmsearch.errors"},
        "tlmsearch.core.validate": {"tlmsearch.profiles"},
        "tlmsearch.profiles.budget": {"tlmsearch.core.validate"},
        "tlmsearch.cli.main": {"tlmsearch"},
        "tlmsearch": {"tlmsearch.core.base"},
        "tlmsearch.errors": {"tlmsearch.api"},
    }  # fmt: skip
    picture = package_edges(edges)
    assert package_upward_edges(picture) == ["core -> profiles", "errors -> api"]  # cli -> __init__ is down
    assert package_cycles(picture) == [["core", "profiles"]]


@pytest.mark.slow
def test_a_planted_package_cycle_is_caught(tmp_path: Path) -> None:
    """Two modules planted in one layer, data/ and models/, each importing the other package: the
    modules keep no cycle and no upward edge, the packages get both a cycle and no excuse."""
    root = _copy(tmp_path)
    before = package_edges(_package().edges)
    assert "data" not in before["models"] and "models" not in before["data"]
    (root / "data" / "planted.py").write_text("from tlmsearch.models.counts import count_params  # noqa\n")
    (root / "models" / "planted.py").write_text("from tlmsearch.data.stream import TokenData  # noqa\n")
    edges = build_graph(root).edges
    assert cycles(edges) == cycles(_package().edges) == []
    assert upward_edges(edges) == []
    picture = package_edges(edges)
    assert package_cycles(picture) == [["data", "models"]]
    assert package_upward_edges(picture) == []
    (root / "core" / "planted.py").write_text("from tlmsearch.configs.search import SearchConfig  # noqa\n")
    picture = package_edges(build_graph(root).edges)
    assert package_upward_edges(picture) == ["core -> configs"]
    assert ["configs", "core", "data", "models", "profiles"] in package_cycles(picture)


@pytest.mark.slow
def test_the_picture_counts_rooms_and_floors(tmp_path: Path) -> None:
    edges = {
        "tlmsearch.a.x": {"tlmsearch.b.y"}, "tlmsearch.b.y": {"tlmsearch.c"}, "tlmsearch.c": set(),
        "tlmsearch.b.z": {"tlmsearch.d", "tlmsearch.b.y"}, "tlmsearch.d": {"tlmsearch.b.y"},
    }  # fmt: skip
    picture = package_edges(edges)
    assert picture == {"a": {"b"}, "b": {"c", "d"}, "c": set(), "d": {"b"}}
    assert floors(picture) == 3  # a, then b and d (a cycle: one floor), then c
    assert floors({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"c"}}) == 3
    root = _copy(tmp_path)
    before = rooms(root), floors(package_edges(_package().edges))  # the copy's, before the plants
    (root / "planted_e.py").write_text("from tlmsearch import __main__  # noqa\n")  # one floor above the top
    (root / "planted_f").mkdir()
    (root / "planted_f" / "__init__.py").write_text("")
    assert rooms(root) == sorted([*before[0], "planted_e.py", "planted_f/"])
    assert floors(package_edges(build_graph(root).edges)) == before[1] + 1


if __name__ == "__main__":  # pragma: no cover - `python tests/unit/test_layers.py` prints the picture
    g = build_graph(ROOT)
    e = g.edges
    print(f"{len(g.modules)} modules under {ROOT}, {sum(map(len, e.values()))} edges")
    print("packages without a layer, layers without a package:", unplaced_packages(ROOT))
    for title, found in (
        ("cycles", cycles(e)),
        ("upward edges", upward_edges(e)),
        ("function-level imports without a true reason", unexplained_lazy_imports(g)),
    ):
        print(f"{title} ({len(found)}):", *found, sep="\n  ")
    lazy = [i for items in g.imports.values() for i in items if i.where == IN_FUNCTION]
    print(f"function-level own imports in all: {len({(i.source, i.line) for i in lazy})}")
    picture = package_edges(e)
    for title, found in (
        ("package cycles", package_cycles(picture)),
        ("package upward edges", package_upward_edges(picture)),
    ):
        print(f"{title} ({len(found)}):", *found, sep="\n  ")
    print(f"top level: {len(rooms(ROOT))} rooms (at most {MAX_ROOMS}), {floors(picture)} floors (at most {MAX_FLOORS})")
    for package in sorted(picture, key=lambda p: (LAYERS.get(p, -1), p)):
        print(f"  {package or '__init__'} -> {', '.join(sorted(t or '__init__' for t in picture[package]))}")
