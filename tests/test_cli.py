"""The CLI contract, run in-process through the same entry point as `memvec` (exit codes included)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import click
import numpy as np
import pytest

from memvec.cli import cli, run
from memvec.cli import serve as serve_cli
from memvec.index.files import VECTOR_FILE


class Cli:
    def __init__(self, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.home, self.capsys = home, capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = run(cli, ["--home", str(self.home), "--model", "hash:64", *args])
        out, err = self.capsys.readouterr()
        return code, out, err


@pytest.fixture
def memvec(home: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(home, capsys)


def write_jsonl(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_add_then_search_json_carries_the_citation(memvec: Cli) -> None:
    code, out, _ = memvec(
        "add",
        "Ana adopted a beagle named Toby",
        "--agent",
        "a",
        "--tier",
        "recall",
        "--role",
        "Ana",
        "--session",
        "S3",
        "--turn",
        "D3:7",
        "--source",
        "https://chat/3",
        "--tag",
        "pets",
        "--json",
    )
    assert code == 0 and json.loads(out)["created"] is True
    code, out, _ = memvec("search", "beagle Toby", "--agent", "a", "--tier", "recall", "--json", "-k", "3")
    assert code == 0
    [hit] = json.loads(out)
    assert set(hit) >= {"id", "text", "score", "scores", "citation", "tags", "created_at", "role"}
    assert set(hit["scores"]) >= {"vector", "bm25"}
    assert hit["citation"] == {"session_id": "S3", "turn_id": "D3:7", "source_url": "https://chat/3", "document": None}
    assert (hit["tags"], hit["role"]) == (["pets"], "Ana")
    code, out, _ = memvec("search", "beagle", "--agent", "a", "--tier", "recall")
    assert code == 0 and "session S3, turn D3:7 · https://chat/3" in out and "Ana: Ana adopted" in out


def test_ingest_validates_the_whole_file_before_writing(memvec: Cli, tmp_path: Path) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"text": "fine"}, {"text": "also fine"}, {"text": "   "}])
    code, _, err = memvec("ingest", str(bad), "--agent", "a", "--tier", "archival")
    assert code == 2 and "bad.jsonl:3" in err and "text is empty" in err
    code, out, _ = memvec("stats", "--json")
    assert json.loads(out)["partitions"] == []  # nothing half-written
    unknown = write_jsonl(tmp_path / "unknown.jsonl", [{"text": "x", "colour": "red"}])
    code, _, err = memvec("ingest", str(unknown), "--agent", "a", "--tier", "archival")
    assert code == 2 and "colour" in err


def test_ingest_and_batch_search(memvec: Cli, tmp_path: Path) -> None:
    rows = [
        {
            "text": f"fact {i}: the {w} is {c}",
            "tags": ["colours"],
            "source_url": f"https://f/{i}",
            "created_at": f"2024-01-{i + 1:02d}T00:00:00Z",
        }
        for i, (w, c) in enumerate([("sky", "blue"), ("grass", "green"), ("sun", "yellow")])
    ]
    rows.append(rows[0])
    code, out, _ = memvec(
        "ingest", str(write_jsonl(tmp_path / "facts.jsonl", rows)), "--agent", "a", "--tier", "archival", "--json"
    )
    assert code == 0 and json.loads(out) == {
        "file": str(tmp_path / "facts.jsonl"),
        "records": 4,
        "added": 3,
        "duplicates": 1,
    }
    queries = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "query": "grass"}, {"id": 2, "query": "sun"}])
    code, out, _ = memvec(
        "search", "--queries", str(queries), "--agent", "a", "--tier", "archival", "-k", "1", "--mode", "bm25"
    )
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(r["id"], r["hits"][0]["citation"]["source_url"]) for r in lines] == [
        ("q1", "https://f/1"),
        (2, "https://f/2"),
    ]
    code, out, _ = memvec("search", "fact", "--agent", "a", "--tier", "archival", "--since", "2024-01-02", "--json")
    assert sorted(h["citation"]["source_url"] for h in json.loads(out)) == ["https://f/1", "https://f/2"]


def test_verify_fails_on_a_corrupt_index_and_rebuild_fixes_it(memvec: Cli, home: Path) -> None:
    assert memvec("add", "something to index", "--agent", "a", "--tier", "archival")[0] == 0
    assert memvec("verify")[0] == 0
    (home / "index" / "a" / "archival" / VECTOR_FILE).write_bytes(b"garbage")
    code, _, err = memvec("verify")
    assert code == 3 and "a/archival" in err and "corrupt" in err
    code, out, _ = memvec("rebuild", "--json")
    assert code == 0 and json.loads(out)["rebuilt"][0]["records"] == 1
    assert memvec("verify")[0] == 0


def test_stats_list_and_delete(memvec: Cli) -> None:
    memvec("add", "one", "--agent", "a", "--tier", "archival")
    memvec("add", "two", "--agent", "a", "--tier", "archival")
    code, out, _ = memvec("stats", "--json")
    stats = json.loads(out)
    assert stats["model_id"] == "hash:64"
    assert [(p["agent"], p["tier"], p["records"], p["dim"]) for p in stats["partitions"]] == [("a", "archival", 2, 64)]
    code, out, _ = memvec("list", "--agent", "a", "--tier", "archival")
    first = json.loads(out.splitlines()[0])
    assert memvec("delete", str(first["id"]), "--agent", "a")[0] == 0
    code, _, err = memvec("delete", str(first["id"]), "--agent", "a")
    assert code == 5 and "no record" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["search", "x", "--agent", "a", "--tier", "archival", "--mode", "fuzzy"], "fuzzy"),
        (["search", "--agent", "a", "--tier", "archival"], "exactly one of QUERY"),
        (["search", "x", "--agent", "a", "--tier", "archival", "-k", "0"], "k"),
        (["search", "x", "--agent", "a b", "--tier", "archival"], "agent"),
        (["add", "x" * 40_000, "--agent", "a", "--tier", "archival"], "limit is 32768"),
        (["rebuild", "--agent", "a", "--model", "hash:32"], "whole home"),
    ],
)
def test_bad_input_exits_2_with_a_message(memvec: Cli, args: list[str], message: str) -> None:
    code, _, err = memvec(*args)
    assert code == 2 and message in err


def test_model_mismatch_exits_2(memvec: Cli, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memvec("add", "x", "--agent", "a", "--tier", "archival")
    code = run(cli, ["--home", str(home), "--model", "hash:32", "stats"])
    assert code == 2 and "memvec rebuild --model hash:32" in capsys.readouterr().err


def test_internal_error_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(_: object) -> None:
        raise RuntimeError("a bug in memvec")

    monkeypatch.setattr("memvec.memory.Memory.stats", broken)
    assert run(cli, ["--home", str(tmp_path / "home"), "--model", "hash:8", "stats"]) == 1
    assert "internal error: RuntimeError: a bug in memvec" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["add", "ingest", "search", "list", "delete", "rebuild", "verify", "stats"])
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cli, [command, "--help"]) == 0
    assert "Usage: memvec" in capsys.readouterr().out


def test_session_weight_option_changes_only_the_fused_score(memvec: Cli) -> None:
    for text, session in (
        ("the lake trip had a tent", "trip"),
        ("the tent was green", "trip"),
        ("my tent order shipped", "shop"),
    ):
        assert memvec("add", text, "--agent", "a", "--tier", "recall", "--role", "me", "--session", session)[0] == 0
    scores = {}
    for weight in ("0", "2"):
        code, out, _ = memvec(
            "search", "tent", "--agent", "a", "--tier", "recall", "--json", "--session-weight", weight
        )
        assert code == 0
        scores[weight] = {h["text"]: (h["score"], h["scores"]["bm25"]) for h in json.loads(out)}
    for text, (_fused, bm25) in scores["2"].items():
        assert bm25 == scores["0"][text][1]  # hits report their own scores either way
    # weight 0: exactly 0.5 * minmax(vector) + 0.5 * minmax(bm25) over the three candidates
    code, out, _ = memvec("search", "tent", "--agent", "a", "--tier", "recall", "--json", "--session-weight", "0")
    hits = json.loads(out)
    vector = np.array([h["scores"]["vector"] for h in hits])
    bm25 = np.array([h["scores"]["bm25"] for h in hits])
    scaled = [(v - v.min()) / (v.max() - v.min()) for v in (vector, bm25)]
    np.testing.assert_allclose([h["score"] for h in hits], 0.5 * scaled[0] + 0.5 * scaled[1], atol=1e-5)
    # weight 2 lifts the two "trip" messages (their session matches twice), never the lone "shop" one
    lifted = {t for t in scores["2"] if scores["2"][t][0] > scores["0"][t][0] + 1e-6}
    assert lifted and lifted <= {"the lake trip had a tent", "the tent was green"}
    code, _, err = memvec("search", "tent", "--agent", "a", "--tier", "recall", "--session-weight", "-1")
    assert code == 2 and "session_weight" in err


def test_serve_workers_take_a_number_or_auto_and_share_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--workers auto` is one per core, and each worker's model gets its share of the cores: two
    workers' model threads on every core would only take turns."""
    monkeypatch.setattr(serve_cli, "thread_count", lambda: 4)
    count = serve_cli.WorkerCount()
    assert [count.convert(v, None, None) for v in ("auto", "3", 2)] == [4, 3, 2]
    assert [serve_cli.threads_per_worker(n) for n in (1, 2, 3, 4, 8)] == [4, 2, 1, 1, 1]
    for wrong in ("0", "65", "many"):
        with pytest.raises(click.BadParameter):
            count.convert(wrong, None, None)
