"""Tables the README holds between two markers, produced from records and checked against them.

    <!-- ladder-table runs/reference/ladder -->
    ... what the table's renderer gives for that directory's records ...
    <!-- /ladder-table -->

A `TableBlock` knows one kind of marker ("study-table", "ladder-table"): it wraps a rendered
table in its markers, finds every such block in a document, and says line by line where a
document's block differs from what the records give today (tests run that check on the
committed reference runs, so the README cannot drift from them). Pure text, no I/O.
"""

from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class TableBlock:
    """The markers of one kind of generated table (`kind`, e.g. "ladder-table")."""

    kind: str
    what: str  # what the table is of, in the check's words: "study", "ladder"

    def start(self, path: str) -> str:
        return f"<!-- {self.kind} {path} -->"

    @property
    def end(self) -> str:
        return f"<!-- /{self.kind} -->"

    @property
    def pattern(self) -> re.Pattern[str]:
        """A whole block (markers included); group `path` and `body` (None for a block not yet
        filled: its two markers on consecutive lines). The body never holds another block's start."""
        kind = re.escape(self.kind)
        body = rf"(?:(?P<body>(?:(?!<!-- {kind} ).)*?)\n)?"
        return re.compile(rf"<!-- {kind} (?P<path>\S+) -->\n{body}<!-- /{kind} -->", re.DOTALL)

    def block(self, table: str, path: str) -> str:
        """`table` between the markers, naming the run directory `path`."""
        return f"{self.start(path)}\n{table}\n{self.end}"

    def blocks(self, text: str) -> dict[str, str]:
        """{run directory: block body} of every block of this kind in `text`."""
        return {m["path"]: m["body"] or "" for m in self.pattern.finditer(text)}

    def fill(self, text: str, table: str, path: str) -> str:
        """`text` with the block for `path` holding `table` (an unfilled block filled)."""
        return self.pattern.sub(lambda m: self.block(table, path) if m["path"] == path else m[0], text)

    def check(self, text: str, table: str, path: str) -> list[str]:
        """Where the document's block for `path` differs from `table` ([] when they agree)."""
        blocks = self.blocks(text)
        if path not in blocks:
            return [f"the README has no {self.what} table for {path} (expected {self.start(path)})"]
        want, have = table.splitlines(), blocks[path].splitlines()
        problems = [
            f"line {i + 1}: README has {h!r}, the {self.what} says {w!r}"
            for i, (h, w) in enumerate(zip(have, want, strict=False))
            if h != w
        ]
        if len(have) != len(want):
            problems.append(f"the README's table has {len(have)} lines, the {self.what}'s {len(want)}")
        return problems
