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
    result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True,
                            env={**env, "HF_HUB_OFFLINE": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "https://example.org/eiffel" in result.stdout
    assert (tmp_path / "indexes" / "store.sqlite3").exists()
