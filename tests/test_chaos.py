"""The history checker (benchmarks/chaos.py) in brief: real servers on one store, a seeded random mix of
writes from several clients, every acknowledgement checked against the store afterwards (#34).
`make bench-chaos` runs the same setups longer."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.chaos import SETUPS, Setup, run


@pytest.mark.parametrize(
    "setup", [pytest.param(s, marks=[pytest.mark.postgres] if s.postgres else []) for s in SETUPS], ids=lambda s: s.name
)
@pytest.mark.slow
def test_no_acknowledged_write_is_lost_or_merged(setup: Setup, tmp_path: Path) -> None:
    report = run(setup, tmp_path, clients=4, seconds=3.0, seed=7)
    assert report["violations"] == []
    acknowledged = report["acknowledged"]
    assert min(acknowledged.values()) > 0, acknowledged  # every kind of write was exercised
    assert not any(status >= 500 for status in report["statuses"])
