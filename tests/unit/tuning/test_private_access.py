"""tuning/ reaches into private parts of Ray and Optuna at most 5 times, each with a comment
(`# private (...)` on its line or the two lines above) naming why no public API serves."""

from __future__ import annotations

import ast
from pathlib import Path

import tlmsearch

PACKAGE = Path(tlmsearch.__file__).parent
MOST = 5


def _ours() -> set[str]:
    """Every name tlmsearch itself defines (a `._name` of ours is no private access)."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def _private(name: str, ours: set[str]) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in ours


def private_accesses(source: str, ours: set[str]) -> list[tuple[int, str]]:
    """(line, text) of each `x._name`, getattr/setattr(x, "_name") and `ray._private` or
    `optuna._...` import whose name tlmsearch does not define; one per line."""
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr, ours):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.setdefault(node.lineno, ast.unparse(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            name = node.args[1]
            if node.func.id in ("getattr", "setattr", "hasattr", "delattr") and isinstance(name, ast.Constant):
                if isinstance(name.value, str) and _private(name.value, ours):
                    found.setdefault(node.lineno, ast.unparse(node))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for module in modules:
                parts = module.split(".")
                if parts[0] in ("ray", "optuna") and any(p.startswith("_") for p in parts[1:]):
                    found.setdefault(node.lineno, f"import {module}")
    return sorted(found.items())


def test_tuning_uses_at_most_five_private_parts_of_ray_and_optuna_each_with_its_reason() -> None:
    ours = _ours()
    sites = []
    for path in sorted((PACKAGE / "tuning").rglob("*.py")):
        lines = path.read_text().splitlines()
        for line, text in private_accesses("\n".join(lines), ours):
            near = lines[max(0, line - 3) : line]
            assert any("# private (" in x for x in near), f"{path.name}:{line}: {text} says no reason"
            sites.append(f"{path.name}:{line}")
    assert 0 < len(sites) <= MOST, sites


def test_the_count_sees_a_planted_access_and_ignores_our_own_names() -> None:
    planted = "import ray\nnode = ray._private.worker._global_node\nx = getattr(ray, '_hidden')\nself._mine = 1\n"
    assert [line for line, _ in private_accesses(planted, {"_mine"})] == [2, 3]
    assert private_accesses("from ray._private.services import f\n", set()) == [(1, "import ray._private.services")]
