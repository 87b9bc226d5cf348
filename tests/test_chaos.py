"""The history checker (benchmarks/chaos.py) in brief: real servers on one store, a seeded random mix of
writes from several clients, every acknowledgement checked against the store afterwards (#34).
`make bench-chaos` runs the same setups longer."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from benchmarks.chaos import SETUPS, Setup, run


@pytest.mark.parametrize(
    "setup", [pytest.param(s, marks=[pytest.mark.postgres] if s.postgres else []) for s in SETUPS], ids=lambda s: s.name
)
@pytest.mark.slow
def test_no_acknowledged_write_is_lost_or_merged(setup: Setup, tmp_path: Path) -> None:
    report = run(setup, tmp_path, clients=4, seconds=2.0, seed=7)
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
    from benchmarks.chaos_history import History, check_blocks

    changes = [{"op": "undo", "new": None}] * logged
    api = httpx.Client(
        base_url="http://chaos", transport=httpx.MockTransport(lambda _: httpx.Response(200, json=changes))
    )
    history = History()
    history.undos[("ana", "c0")], history.undos_unsure[("ana", "c0")] = acknowledged, unanswered
    assert (check_blocks(api, history) == []) is holds


def _api(answers: dict[str, object]) -> httpx.Client:
    """A client whose every GET answers what `answers` holds for its path (the checks' reads)."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answers.get(request.url.path, {"results": []}))

    return httpx.Client(base_url="http://chaos", transport=httpx.MockTransport(answer))


@pytest.mark.parametrize(
    ("listed", "found", "holds"), [(False, False, True), (True, False, False), (False, True, False)]
)
def test_a_forgotten_chain_is_checked_for_every_version_any_client_wrote(
    listed: bool, found: bool, holds: bool
) -> None:
    from benchmarks.chaos_history import _forgotten_chain

    chain = {"agent": "log-a", "texts": {"passage c0 s1", "passage c1 s4 edit1x4"}, "gone": True}
    edit = "passage c1 s4 edit1x4"  # another client's edit, acknowledged or not
    api = _api({"/v1/agents/log-a/archival-memory/search": {"results": [{"content": edit}] if found else []}})
    assert (_forgotten_chain(api, chain, {edit: 9} if listed else {}) == []) is holds


@pytest.mark.parametrize(
    ("deleted", "folder_deleted", "found", "holds"),
    [
        (True, False, True, False),
        (False, True, True, False),
        (True, False, False, True),
        (False, False, True, True),
    ],
)
def test_a_deleted_file_or_a_deleted_folders_file_must_not_be_found(
    deleted: bool, folder_deleted: bool, found: bool, holds: bool
) -> None:
    from benchmarks.chaos_history import History, _check_files

    history = History()
    history.folders["source-1"] = {"scratch": True, "deleted": folder_deleted, "lost": False}
    history.files["c0-s1.md"] = {
        "folder": "source-1",
        "token": "filetoken0q1",
        "id": "file-3",
        "lost": False,
        "deleted": deleted,
    }
    listing = [{"file_name": "c0-s1.md"}] if not deleted else []
    hits = {"results": [{"content": "The filetoken0q1 note"}] if found else []}
    api = _api(
        {
            "/v1/folders/source-1/files": listing,
            "/v1/agents/log-a/archival-memory/search": hits,
            "/v1/agents/log-b/archival-memory/search": hits,
        }
    )
    assert (_check_files(api, history) == []) is holds
