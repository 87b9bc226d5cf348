"""`make mutants` plants each bug by replacing one exact piece of code: that piece must still exist,
once, or the mutant would test nothing (the table rots silently as the code moves)."""

from __future__ import annotations

import pytest

from tests.mutants import MUTANTS, ROOT


@pytest.mark.parametrize(("name", "path", "original"), [m[:3] for m in MUTANTS], ids=[m[0] for m in MUTANTS])
def test_each_mutant_names_code_that_exists_once(name: str, path: str, original: str) -> None:
    assert (ROOT / path).read_text().count(original) == 1, f"{name}: re-point it at {path}'s current code"
