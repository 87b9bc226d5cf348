"""End to end through the real parts: the packaged all-MiniLM-L6-v2, FAISS, SQLite, real processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from memvec import Memory
from memvec.embed import Embedder
from memvec.store import STORE_FILE
from tests.conftest import run_cli

pytestmark = pytest.mark.slow

DISTRACTORS = [
    "We reviewed the quarterly budget and agreed to cut travel costs.",
    "The team offsite is planned for the second week of June in Lisbon.",
    "Remember to water the plants on the balcony every other day.",
    "Her favourite novel is a long story about whaling and obsession.",
    "The new espresso machine in the kitchen makes excellent coffee.",
    "Our hiking trip went up the ridge trail and back along the lake.",
    "The dentist appointment moved from Tuesday to Thursday morning.",
    "He is learning to play the cello and practises every evening.",
    "The cat knocked a glass off the table again this morning.",
    "We should renew the car insurance before the end of the month.",
]


def test_minilm_is_loaded_offline_from_the_package(minilm: Embedder) -> None:
    assert (minilm.model_id, minilm.dim) == ("all-MiniLM-L6-v2", 384)
    vectors = minilm.embed_documents(["a dog", "a puppy", "tax law"])
    assert abs(float((vectors**2).sum(axis=1)[0]) - 1.0) < 1e-5
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_vector_search_finds_paraphrases(real_memory: Memory) -> None:
    archival = real_memory.archival("app")
    for text in DISTRACTORS:
        archival.insert(text)
    query = "automobile coverage expiring"  # shares no word with any record
    assert archival.search(query, mode="token") == []
    assert "car insurance" in archival.search(query, k=1, mode="vector")[0].text
    assert "car insurance" in archival.search(query, k=1, mode="hybrid")[0].text


def test_hybrid_returns_a_keyword_only_match_that_vector_ranks_low(home: Path, minilm: Embedder) -> None:
    # the torch reference model: its vectors bury the code below rank 10 (int8's put it at 7 of 26)
    real_memory = Memory.open(home, embedder=minilm)
    archival = real_memory.archival("app")
    topics = ["travel budget", "hotel costs", "flight prices", "conference fees", "train tickets"]
    seasons = ["spring", "summer", "autumn", "winter", "holiday"]
    for topic in topics:
        for season in seasons:
            archival.insert(f"Meeting note: we discussed {topic} for the {season} trip and agreed to review it.")
    target = archival.insert("Inventory code ZX-4471-QP was filed.").record
    query = "what did we agree about the travel budget and ZX-4471-QP"
    vector_ids = [h.id for h in archival.search(query, k=26, mode="vector")]
    assert vector_ids.index(target.id) >= 10  # meaning alone buries the rare code among the notes
    assert [h.id for h in archival.search(query, k=1, mode="bm25")] == [target.id]
    hybrid = archival.search(query, k=3, mode="hybrid")
    assert target.id in [h.id for h in hybrid]
    found = next(h for h in hybrid if h.id == target.id)
    assert found.scores.vector is not None and found.scores.bm25 is not None
    real_memory.close()


def test_cli_end_to_end_with_the_default_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_cli(
        "add",
        "Caroline went to the LGBTQ support group on 7 May 2023",
        "--agent",
        "locomo",
        "--tier",
        "recall",
        "--role",
        "Caroline",
        "--session",
        "1",
        "--turn",
        "D1:3",
        "--source",
        "https://example.org/conv-26",
        home=home,
    )
    run_cli(
        "add",
        "Melanie painted a sunrise over the lake",
        "--agent",
        "locomo",
        "--tier",
        "recall",
        "--role",
        "Melanie",
        "--session",
        "1",
        "--turn",
        "D1:9",
        home=home,
    )
    out = run_cli(
        "search",
        "When did Caroline go to the support group?",
        "--agent",
        "locomo",
        "--tier",
        "recall",
        "--json",
        "-k",
        "1",
        home=home,
        process=True,  # once through the installed entry point, as a user types it
    ).stdout
    [hit] = json.loads(out)
    assert hit["citation"] == {
        "session_id": "1",
        "turn_id": "D1:3",
        "source_url": "https://example.org/conv-26",
        "document": None,
    }
    stats = json.loads(run_cli("stats", "--json", home=home).stdout)
    assert (stats["model_id"], stats["partitions"][0]["dim"]) == ("onnx-int8:all-MiniLM-L6-v2", 384)


def _committed(home: Path) -> int:
    path = home / STORE_FILE
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_sigkill_during_ingest_loses_no_committed_record(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines = [
        {
            "text": f"Diary entry {i}: today I worked on project {i % 97} and met friend number {i}.",
            "session_id": str(i // 100),
            "turn_id": str(i),
        }
        for i in range(2000)
    ]
    data = tmp_path / "diary.jsonl"
    data.write_text("\n".join(json.dumps(line) for line in lines))
    # no periodic save during the ingest: the index on disk is the one written when it was created
    env = {**os.environ, "MEMVEC_HOME": str(home), "HF_HUB_OFFLINE": "1", "MEMVEC_SAVE_EVERY": "100000"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memvec", "ingest", str(data), "--agent", "diary", "--tier", "recall", "--role", "me"],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    while _committed(home) < 512 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    committed = _committed(home)
    assert 512 <= committed < 2000, "the kill must land in the middle of the ingest"
    assert committed % 256 == 0, "each batch commits whole or not at all"
    # the saved index is behind the store (saves come every 2,000 changes): reported, not a fault
    verified = run_cli("verify", "--json", home=home)
    behind = json.loads(verified.stdout)["behind"]
    assert len(behind) == 1 and behind[0]["changes"] == committed - behind[0]["saved_at_change"] > 0
    repaired = json.loads(run_cli("verify", "--repair", "--json", home=home).stdout)
    assert repaired == {"ok": True, "problems": [], "behind": [], "not_loaded": [], "old_format": [], "orphans": []}
    _verify_catches_a_stored_vector_that_differs(home)
    # reopen: the index catches up from the store's change log; every committed record is searchable
    last = lines[committed - 1]["text"]
    out = run_cli(
        "search", last, "--agent", "diary", "--tier", "recall", "--mode", "bm25", "-k", "1", "--json", home=home
    ).stdout
    assert json.loads(out)[0]["text"] == last
    assert run_cli("verify", home=home).returncode == 0
    with Memory.open(home) as mem:
        assert len(mem._engine.tier_index("diary", mem.recall("diary").tier)) == committed
    # running the same ingest again completes it, skipping what was committed
    summary = json.loads(
        run_cli("ingest", str(data), "--agent", "diary", "--tier", "recall", "--role", "me", "--json", home=home).stdout
    )
    assert (summary["added"], summary["duplicates"]) == (2000 - committed, committed)
    assert run_cli("verify", home=home).returncode == 0


def _verify_catches_a_stored_vector_that_differs(home: Path) -> None:
    """Plant a real disagreement beside the pending changes: verify exits 3; undo it."""
    with sqlite3.connect(home / STORE_FILE) as db:
        record_id, blob = db.execute("SELECT id, embedding FROM records ORDER BY id LIMIT 1").fetchone()
        flipped = (-np.frombuffer(blob, dtype=np.float32)).tobytes()
        db.execute("UPDATE records SET embedding = ? WHERE id = ?", (flipped, record_id))
    result = run_cli("verify", home=home, check=False)
    assert result.returncode == 3 and "1 vectors in the index differ" in result.stderr, result.stderr
    with sqlite3.connect(home / STORE_FILE) as db:
        db.execute("UPDATE records SET embedding = ? WHERE id = ?", (blob, record_id))
