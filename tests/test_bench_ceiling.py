"""The benchmark's *Against the ceiling* section runs end to end (quick sizes, real model, a real
server driven by wrk); in a module of its own so that a free worker runs it beside the other sections."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchmarks.ceiling import parse_wrk
from tests.test_bench_smoke import quick_run


@pytest.mark.slow
def test_quick_ceiling(tmp_path: Path) -> None:
    """Served searches (wrk on memvec serve, one worker and two), in process on one core and on all,
    the second stage's cost, a cold search and ingest against the model, in one report section."""
    if shutil.which("wrk") is None:
        assert os.environ.get("CI", "").lower() != "true", ".ci/run installs wrk"
        pytest.skip("wrk is not installed (apt-get install wrk)")
    report, results = quick_run(tmp_path, "ceiling")
    found = results["ceiling"]
    assert 0 < found["questions"] <= 40 and found["records"] > 50
    assert [(row["workers"], row["clients"]) for row in found["served"]] == [(1, 8), (2, 8)]
    assert all(row["failed"] == 0 and row["requests"] > 0 and row["of_ceiling"] > 0 for row in found["served"])
    assert found["second_stage"]["median_ms"]["fusion alone"] > 0 and found["cold"]["first_search_s"] > 0
    for name in ("LoCoMo turns", "LongMemEval_S turns"):
        row = found["ingest"][name]
        assert row["forward_passes"] >= row["records"] > 0 and row["of_model"] > 0
    assert "## Against the ceiling" in report and "| `memvec serve`, `--workers 2` | 8 |" in report


def test_wrk_output_is_read_into_rates_latencies_and_failures() -> None:
    output = """Running 8s test @ http://127.0.0.1:8283
  1 threads and 8 connections
  Latency Distribution
     50%   48.40ms
     75%   60.10ms
     90%   75.00ms
     99%    1.20s
  1254 requests in 8.01s, 9.71MB read
  Socket errors: connect 0, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 4
Requests/sec:    156.89
Transfer/sec:      1.21MB
"""
    assert parse_wrk(output) == {"rps": 156.89, "requests": 1254, "p50_ms": 48.4, "p99_ms": 1200.0, "failed": 7}
