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


@pytest.mark.parametrize(
    ("acknowledged", "unanswered", "logged", "holds"),
    [(1, 0, 1, True), (1, 0, 0, False), (0, 1, 1, True), (0, 1, 0, True), (0, 1, 2, False), (2, 1, 1, False)],
)
def test_undos_are_checked_between_those_acknowledged_and_those_also_unanswered(
    acknowledged: int, unanswered: int, logged: int, holds: bool
) -> None:
    """An undo the server committed but never answered (it was killed) may be in the log; an
    acknowledged one must be, and no more than were sent may be."""
    import httpx

    from benchmarks.chaos_history import History, check_blocks

    changes = [{"op": "undo", "new": None}] * logged
    api = httpx.Client(
        base_url="http://chaos", transport=httpx.MockTransport(lambda _: httpx.Response(200, json=changes))
    )
    history = History()
    history.undos[("ana", "c0")], history.undos_unsure[("ana", "c0")] = acknowledged, unanswered
    assert (check_blocks(api, history) == []) is holds
