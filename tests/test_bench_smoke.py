"""The benchmark harness runs end to end (quick sizes, real model) and writes its report. Its
sections run as four tests so two workers share them; the one that measures the stores uses
PostgreSQL."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.__main__ import main
from benchmarks.stores import DEFAULT_PG
from tests.conftest import LOCOMO, require_data, start_postgres


def quick_run(tmp_path: Path, sections: str) -> tuple[str, dict[str, Any]]:
    require_data(LOCOMO)
    assert main(["--quick", "--only", sections, "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "latest.json").read_text())
    assert list(results["meta"]["section_seconds"]) == sections.split(",")
    return (tmp_path / "latest.md").read_text(), results


@pytest.mark.slow
def test_quick_quality_and_lifecycle(tmp_path: Path) -> None:
    report, results = quick_run(tmp_path, "quality,lifecycle")
    for heading in (
        "## Retrieval quality",
        "## Choosing the default fusion",
        "## Facts that change",
        "## Near-duplicates",
    ):
        assert heading in report
    assert "## Speed" not in report and "Sections run: quality" in report
    kv = results["quality"]["synthetic key-value"]["scores"]
    assert kv["bm25"]["overall"]["recall@10"] > kv["vector"]["overall"]["recall@10"]
    para = results["quality"]["synthetic paraphrase"]["scores"]
    assert para["vector"]["overall"]["recall@10"] > para["bm25"]["overall"]["recall@10"]
    changed = results["lifecycle"]["changing facts"]
    assert changed["versioned"]["current"]["recall@1"] > changed["append-only"]["current"]["recall@1"]
    assert (
        changed["versioned"]["current"]["outdated_in_top5"] == 0 < changed["append-only"]["current"]["outdated_in_top5"]
    )
    repeats = results["lifecycle"]["near duplicates"]["memvec"]["0.8"]
    assert repeats["precision"] >= 0.99 and repeats["recall"] > 0.5
    assert (tmp_path / "recall_at_k.png").stat().st_size > 10_000
    assert not (tmp_path / "latency_vs_n.png").exists()


@pytest.mark.slow
def test_quick_families_and_documents(tmp_path: Path) -> None:
    report, results = quick_run(tmp_path, "families,documents")
    for heading in ("## LongMemEval_S", "## SciFact", "## SciFact as files"):
        assert heading in report
    documents = results["families"]["SciFact"]["scores"]
    assert documents["bm25"]["overall"]["ndcg@10"] > documents["token"]["overall"]["ndcg@10"]
    assert documents["default"]["overall"]["n"] == 12
    files = results["documents"]["files"][0]
    assert files["scores"]["default"]["n"] == 10 and files["scores"]["default"]["ndcg@10"] > 0.5
    assert files["chunks"] > files["documents"] and 0 < files["ratio_to_model"] <= 1
    assert results["documents"]["pdf"]["pages"] == 3
    records, cut = results["documents"]["records"], results["documents"]["records_first_window"]
    assert (records["windows"], cut["windows"]) == (True, False) and records["longer_than_window"] > 0.3
    assert "first window only" in report
    chats = results["families"]["LongMemEval_S"]["scores"]
    assert chats["default"]["overall"]["n"] == 1 and set(chats["default"]["overall"]) >= {"ndcg@10", "session_all@5"}


@pytest.mark.slow
@pytest.mark.postgres  # its store and staleness measures use PostgreSQL: never while a test stops it
def test_quick_trust(tmp_path: Path) -> None:
    report, results = quick_run(tmp_path, "trust")
    guard = results["trust"]["guard"]
    assert guard["benign"]["SciFact abstracts"]["texts"] == 500, "quick: the first 500 of each corpus"
    assert all(row["caught"] == row["cases"] for row in guard["injections"].values())
    held = results["trust"]["relevance"]["held"]
    assert set(held) == {"LoCoMo recall", "LoCoMo archival", "LongMemEval_S", "SciFact"}
    assert held["LongMemEval_S"]["abstention"]["questions"] == 1
    assert held["SciFact"]["foreign"]["questions"] == 5 + 1, "5 LoCoMo questions and the one LongMemEval question"
    assert "### The poisoning check" in report and "| SciFact | 10 |" in report


def test_quick_speed_stores_http_and_pages(tmp_path: Path) -> None:
    postgres_problem = start_postgres(DEFAULT_PG)
    assert not (postgres_problem and os.environ.get("CI", "").lower() == "true"), postgres_problem
    report, results = quick_run(tmp_path, "speed")
    for heading in ("## Speed", "## Growth with N", "## Store backends", "## Memory browser pages"):
        assert heading in report
    assert "## Retrieval quality" not in report
    backends = results["speed"]["stores"]
    assert backends["sqlite"]["records"] == backends["n"]
    if postgres_problem:
        assert backends["postgresql"]["skipped"] and backends["staleness"]["skipped"]
    else:
        assert backends["postgresql"]["records"] == backends["n"]
        assert backends["staleness"]["first_search_pct"] == 100  # read-your-writes across servers
        assert "Staleness between two `memvec serve`" in report
    assert all(
        level["errors"] == 0
        for op in ("search", "search, fusion alone", "insert")
        for level in results["speed"]["http"][op]
    )
    workers = results["speed"]["http"]["workers"]
    assert [(r["workers"], r["clients"]) for r in workers] == [(1, 8), (1, 32), (2, 8), (2, 32)]
    assert all(r["errors"] == 0 and r["requests"] > 0 for r in workers)
    cost = results["speed"]["http"]["observability"]
    assert cost["p50_ms_with_log"] > 0 and cost["metrics_us_per_search"] > 0
    assert "### What logs and metrics cost a search" in report
    streamed = results["speed"]["http"]["streaming"]
    assert "### Time to the first event of a streamed reply" in report
    assert streamed["nginx"] is not None or os.environ.get("CI", "").lower() != "true"  # CI installs nginx
    assert all(0 < r["first_token_s"] < r["done_s"] for r in (streamed["direct"], streamed["nginx"]) if r)
    pages = results["speed"]["ui"]["pages"]
    assert {"agents", "search archival (hybrid + ranker)", "recall, last page", "health"} <= set(pages)
    assert all(page["p50"] > 0 and page["kb"] > 0 for page in pages.values())
    assert (tmp_path / "latency_vs_n.png").stat().st_size > 10_000


@pytest.mark.slow
def test_quick_backends_and_profiles(tmp_path: Path) -> None:
    report, results = quick_run(tmp_path, "backends,profiles")
    for heading in ("## Embedding backends", "### Through the CLI on real conversation turns", "## Quality profile"):
        assert heading in report
    compared = results["backends"]["compare"]["backends"]
    assert compared["onnx-int8"]["cosine_to_torch"]["mean"] >= 0.99
    for backend in ("torch", "onnx-int8"):  # a query's vector is its own, whatever else is asked with it
        assert compared[backend]["batch_invariance"]["query_path"] >= 1 - 1e-5
    assert "alone vs in a batch of 32" in report
    for run in results["backends"]["cli"]:
        assert run["ingest_records_per_s"] > 0 and all(level["errors"] == 0 for level in run["serve"])
    measured = [row for row in results["profiles"]["rows"] if "speed" in row]
    assert len(measured) == 2 and all(row["locomo"] for row in measured)


def test_an_unknown_section_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--quick", "--only", "quality,sped"])
    assert exited.value.code == 2 and "not sped" in capsys.readouterr().err


def test_missing_locomo_gives_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--locomo", str(tmp_path / "nope.json"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "locomo10.json" in err and "snap-research/LoCoMo" in err


@pytest.mark.slow
def test_search_profile_times_each_part_where_it_runs(tmp_path: Path) -> None:
    """`make bench-search-profile`'s parts are found in the profile at each size: the ranker's only
    where it ranks, the period's merge only where a period is lifted."""
    from benchmarks import search_profile

    args = ["--records", "300,150", "--queries", "20", "--rounds", "1", "--out", str(tmp_path)]
    assert search_profile.main(args) == 0
    sizes = json.loads((tmp_path / "search-parts.json").read_text())["sizes"]
    assert list(sizes) == ["150", "300"]
    fusion = "fusion (candidates, scores, session means)"
    for modes in sizes.values():
        for mode in modes.values():
            parts = mode["parts_ms"]
            assert mode["p50_ms"] > 0 and parts["whole search"] > parts[fusion] > 0
            assert parts["BM25 scoring of the query"] > 0 and parts["reading the hits from the store"] > 0
        trees, merge = "the ranker's trees", "merging a period's two rankings"
        assert modes["default"]["parts_ms"][trees] > 0 == modes["fusion alone"]["parts_ms"][trees]
        assert modes["default"]["parts_ms"][merge] > 0 == modes["default, period ignored"]["parts_ms"][merge]
        assert 0 < search_profile.ranker_share(modes)[2] < 1
    report = (tmp_path / "search-parts.md").read_text()
    assert "| the ranker's features (under cProfile) |" in report and "## 300 records" in report
    assert report.count("| 150 |") == 1 and report.count("| 300 |") == 1  # the share table, one row a size


def test_search_profile_refuses_sizes_that_are_not_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import search_profile

    with pytest.raises(SystemExit) as stopped:
        search_profile.main(["--records", "10k"])
    assert stopped.value.code == 2 and "not comma-separated numbers" in capsys.readouterr().err
