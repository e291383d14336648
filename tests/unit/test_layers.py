"""The package's layers point down: no import cycle between modules, no upward edge.

The import graph is read from the sources with `ast` (every `import` statement, including
those inside functions and under `if TYPE_CHECKING:`), so the check needs no heavy library
and sees what a plain `import` test would miss: a cycle hidden by a function-level import.

Layers, bottom to top (see design.md "Layout"):

    errors, config, runconfig, search_config, resolve, pareto, profiles, presets, models, data,
    hardware, trainer, spaces
    rundir          the run-directory layout, TrialRecord, Study (plain data)
    analysis        pure functions over records
    report, plots, export(_formats) read rundir; never import tuning
    tuning          everything that trains through Ray; never imports report/plots/export
    api, cli        the public entry points

Function-level imports of the package's own modules are allowed only for modules that are
heavy themselves (they import torch, ray, optuna, plotly, pandas, scipy or numpy when
imported, or import such a module then): one rule for lazy heavy imports, which keeps
`import tlmsearch` light. The command line is the exception: each command imports what it
needs inside the command, so that the parsers build from the bottom layer alone and
`tlmsearch --help` stays fast (tests/test_cli_config_flags.py checks that path).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tlmsearch"
HEAVY = ("torch", "ray", "optuna", "plotly", "pandas", "scipy", "numpy")

# package (first component below tlmsearch) -> layer; higher may import lower, never the reverse
LOWER = ("errors", "architectures", "config", "runconfig", "search_config", "resolve", "pareto", "profiles", "presets",
         "models", "planning", "validate", "noise_floor", "storage", "estimate", "rates", "calibrate",
         "data", "hardware", "trainer", "spaces", "throughput")  # fmt: skip
LAYERS: dict[str, int] = {
    **dict.fromkeys(LOWER, 0),
    "study_config": 0,
    "rundir": 1,
    "analysis": 2,
    "study_files": 2, "study_cost": 2,  # a study directory read, its cost (no training, no report)
    "study_progress": 2, "study_readme": 3,  # where a running study stands; the README's table of a study
    "study_report": 3,
    "report": 3, "plots": 3, "export": 3, "export_formats": 3,
    "tuning": 3,
    "api": 4, "cli": 5, "__main__": 5, "": 5,  # "" is tlmsearch/__init__.py: the lazy public API
}  # fmt: skip
# the command line defers whatever a command needs into the command: its parsers build from
# the bottom layer alone, so `tlmsearch --help` stays fast (tests/test_cli_config_flags.py)
DEFERRING = ("cli", "__main__")
# siblings on one layer that must not import each other: (importer, imported)
FORBIDDEN_SIDEWAYS = {("tuning", p) for p in ("report", "plots", "export", "export_formats", "study_report")} | {
    (p, "tuning") for p in ("report", "plots", "export", "export_formats", "study_report")
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


TOP, TYPE_ONLY, IN_FUNCTION = "top", "type-only", "in-function"


def imports(path: Path, modules: set[str]) -> Iterator[tuple[str, str, int]]:
    """(imported module, where: TOP / TYPE_ONLY / IN_FUNCTION, line) for every import of the file.

    Only TOP imports run when the module is imported; all three are edges of the graph.
    """
    module = module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    for node, where in _walk(tree, TOP):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path.name == "__init__.py", node)
            # `from pkg import mod` imports the submodule pkg.mod when there is one
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for name in names:
            yield name, where, node.lineno


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


def build_graph() -> tuple[dict[str, set[str]], dict[str, list[tuple[str, str, int]]], set[str]]:
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(files)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    detail: dict[str, list[tuple[str, str, int]]] = {m: [] for m in modules}
    heavy: set[str] = set()
    for mod, path in files.items():
        for name, where, line in imports(path, modules):
            if name.split(".")[0] in HEAVY and where == TOP:
                heavy.add(mod)
            if name == "tlmsearch" or name.startswith("tlmsearch."):
                target = name
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                # importing a.b.c runs the package a.b's __init__ first (tlmsearch's own is lazy)
                parents = [target.rsplit(".", i)[0] for i in range(1, target.count("."))]
                for t in [target, *parents]:
                    if (
                        t in modules
                        and t != mod
                        and not mod.startswith(t + ".")
                        and (t, where, line) not in detail[mod]
                    ):
                        edges[mod].add(t)
                        detail[mod].append((t, where, line))
    # a module importing a heavy module at its top is heavy too
    changed = True
    while changed:
        changed = False
        for mod in modules - heavy:
            if any(t in heavy for t, where, _ in detail[mod] if where == TOP):
                heavy.add(mod)
                changed = True
    return edges, detail, heavy


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
        for w in sorted(edges[v]):
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


def upward_edges(edges: dict[str, set[str]]) -> list[str]:
    bad = []
    for mod, targets in sorted(edges.items()):
        src = package_of(mod)
        for t in sorted(targets):
            dst = package_of(t)
            if src == dst:
                continue
            if LAYERS[dst] > LAYERS[src] or (src, dst) in FORBIDDEN_SIDEWAYS:
                bad.append(f"{mod} -> {t}")
    return bad


def lazy_light_imports(detail: dict[str, list[tuple[str, str, int]]], heavy: set[str]) -> list[str]:
    """Function-level imports of the package's own modules that load nothing heavy
    (importing `a.b.c` loads the packages `a.b` too: heavy if any of them is)."""
    lines: dict[tuple[str, int], list[str]] = {}
    for mod, items in detail.items():
        if package_of(mod) in DEFERRING:
            continue
        for t, where, line in items:
            if where == IN_FUNCTION and t != "tlmsearch":
                lines.setdefault((mod, line), []).append(t)
    return [
        f"{mod}:{line} imports {max(targets, key=len)}"
        for (mod, line), targets in sorted(lines.items())
        if not any(t in heavy for t in targets)
    ]


def test_every_package_has_a_layer() -> None:
    edges, _, _ = build_graph()
    assert sorted({package_of(m) for m in edges} - set(LAYERS)) == []


def test_no_import_cycle() -> None:
    edges, _, _ = build_graph()
    assert cycles(edges) == []


def test_no_upward_import() -> None:
    edges, _, _ = build_graph()
    assert upward_edges(edges) == []


def test_function_level_imports_are_for_heavy_modules_only() -> None:
    _, detail, heavy = build_graph()
    assert lazy_light_imports(detail, heavy) == []


def test_the_checks_can_fail() -> None:
    """The checker sees a cycle and an upward edge in a made-up graph."""
    edges = {"tlmsearch.rundir.a": {"tlmsearch.tuning.b"}, "tlmsearch.tuning.b": {"tlmsearch.rundir.a"}}
    assert cycles(edges) == [["tlmsearch.rundir.a", "tlmsearch.tuning.b"]]
    assert upward_edges(edges) == ["tlmsearch.rundir.a -> tlmsearch.tuning.b"]
    assert upward_edges({"tlmsearch.report": {"tlmsearch.tuning"}, "tlmsearch.tuning": set()}) == [
        "tlmsearch.report -> tlmsearch.tuning"
    ]


if __name__ == "__main__":  # pragma: no cover - `python tests/test_layers.py` prints the picture
    e, d, h = build_graph()
    print(f"{len(e)} modules, {sum(map(len, e.values()))} edges")
    print(f"cycles ({len(cycles(e))}):", *cycles(e), sep="\n  ")
    print(f"upward edges ({len(upward_edges(e))}):", *upward_edges(e), sep="\n  ")
    lazy = lazy_light_imports(d, h)
    print(f"function-level imports of light own modules ({len(lazy)}):", *lazy, sep="\n  ")
    print(f"function-level own imports in all: {sum(w == IN_FUNCTION for v in d.values() for _, w, _ in v)}")
