"""docs/design.md's module map is the tree: every package and top-level module of `memvec/` is in
its table, and everything the table names exists, so the map cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"


def mapped_names() -> list[str]:
    section = DESIGN.read_text().split("## Module map", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in re.findall(r"`([a-z_]+/?)`", row.split(" | ")[0])]


def test_the_module_map_names_every_package_and_module_and_nothing_else() -> None:
    named = mapped_names()
    assert len(named) == len(set(named)), "a name is in two rows"
    tree = {f"{p.name}/" for p in (ROOT / "memvec").iterdir() if (p / "__init__.py").exists()}
    tree |= {p.stem for p in (ROOT / "memvec").glob("*.py") if p.stem != "__init__"}
    assert tree - set(named) == set(), "add these to docs/design.md's module map"
    assert set(named) - tree == set(), "the module map names what memvec/ does not have"
