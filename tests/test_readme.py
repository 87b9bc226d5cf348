"""The README's first Python example must run as printed, with the real default model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_three_line_example_runs(tmp_path: Path) -> None:
    example = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVEC_")}
    result = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**env, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "Hold the red button" in result.stdout and "file_name='manual.md'" in result.stdout
    assert "headings=['Pump P-200', 'Reset']" in result.stdout
    assert result.stdout.rstrip().endswith("[]"), "a question the file does not answer finds nothing relevant"
    assert (tmp_path / "indexes" / "store.sqlite3").exists()


def test_every_relative_link_in_the_docs_points_at_a_file() -> None:
    root = README.parent
    pages = [README, *sorted((root / "docs").glob("*.md"))]
    assert len(pages) >= 6, "the README links reference, integrations, deployment, benchmarks and design pages"
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.name} links {target}, which does not exist"


def test_the_readme_is_a_first_screen_not_the_manual() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 120
    assert len(re.findall(r"^\| ---", text, flags=re.M)) == 1, "figures are quoted in one table"
