"""Every file path the sources and documents name exists (a test file moved to tests/unit/ or
tests/integration/ leaves its old path behind in docstrings and READMEs otherwise).

Checked: paths that start at the repository root (`tests/`, `tlmsearch/`, `bench/`,
`search_spaces/`, `docs/`) and end in .py, .md, .yaml or .toml, written in the repository's .py, .md,
.yaml and .toml files (this file aside: it names a missing path on purpose). A pattern with a
placeholder (`<name>`, `*`) is no path and is skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import tlmsearch

REPO = Path(tlmsearch.__file__).resolve().parent.parent
SKIP = {".git", ".venv", "runs", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
ROOTS = "tests|tlmsearch|bench|search_spaces|docs"
PATH = re.compile(rf"(?<![\w/.<*-])((?:{ROOTS})/[\w./-]*?\w\.(?:py|md|yaml|toml))(?![\w*<])")


def _texts(root: Path) -> list[Path]:
    out = []
    for path in root.rglob("*"):
        if SKIP & set(path.relative_to(root).parts) or path == Path(__file__).resolve():
            continue
        if path.suffix in (".py", ".md", ".yaml", ".toml") and path.is_file():
            out.append(path)
    return out


def missing_references(root: Path) -> list[str]:
    """'file:line names path' for every path named in the texts under `root` that is not there."""
    bad = []
    for path in sorted(_texts(root)):
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in PATH.finditer(line):
                if not (root / match[1]).exists():
                    bad.append(f"{path.relative_to(root)}:{n} names {match[1]}")
    return bad


def test_every_named_file_exists() -> None:
    assert (REPO / "tlmsearch" / "__init__.py").is_file() and (REPO / "tests").is_dir()
    assert missing_references(REPO) == []


def test_a_stale_reference_is_caught(tmp_path: Path) -> None:
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_x.py").write_text("")
    (tmp_path / "README.md").write_text(
        "see `tests/test_x.py` and `tests/unit/test_x.py`; `tests/unit/test_<name>.py` is a pattern\n"
    )
    assert missing_references(tmp_path) == ["README.md:1 names tests/test_x.py"]
