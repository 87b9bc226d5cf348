"""The speed side of the benchmark report: ingest, latency, growth with N, stores, the HTTP
service, the UI and the embedding backends."""

from __future__ import annotations

from typing import Any

from benchmarks.tables import markdown_table


def speed_sections(speed: dict[str, Any]) -> list[str]:
    out = _speed_section(speed) + _growth_section(speed["growth"])
    if "stores" in speed:
        out += _stores_section(speed["stores"])
    if "http" in speed:
        out += _http_section(speed["http"])
    if "ui" in speed:
        out += _ui_section(speed["ui"])
    return out


def _speed_section(speed: dict[str, Any]) -> list[str]:
    ing = speed["ingest"]
    lat, bare = ing["latency_ms_with_embedding"], ing["latency_ms_search_only"]
    out = [
        "## Speed",
        "",
        f"Ingest of {ing['n']:,} records with the real model, batches of {ing['batch']} records: "
        f"**{ing['records_per_s']:.0f} records/s**; "
        f"{ing['embed_seconds']:.1f}s embedding vs {ing['index_and_store_seconds']:.1f}s store + indexing "
        f"({ing['embed_seconds'] / ing['seconds']:.0%} of the time is the model).",
        "",
        *_context_line(ing),
        f"Query latency at {ing['n']:,} records (ms, flat index; with embedding: every query distinct, query "
        "cache off, so each is a forward pass). The records' times spread over the past year and 3 queries "
        "in 5 name a period, so the default ranks those twice where the period holds some of the records:",
        "",
        markdown_table(
            ["mode", "p50", "p95", "p99", "p50 search only (query vector cached)", "p99 search only"],
            [[m, lat[m]["p50"], lat[m]["p95"], lat[m]["p99"], bare[m]["p50"], bare[m]["p99"]] for m in lat],
        ),
        "",
        f"Disk: {ing['disk_bytes_per_record']:.0f} bytes/record (store with embeddings + index files); "
        f"HNSW recall@10 against exact search on these real embeddings: "
        f"{ing['hnsw_recall_at_10_vs_flat_real']:.3f}.",
        "",
        f"`rebuild` of {ing['n']:,} records: {ing['rebuild_seconds_no_reembed']:.2f}s from stored embeddings, "
        f"{ing['rebuild_seconds_reembed']:.1f}s when the model changes (re-embedding everything) — "
        f"{ing['rebuild_seconds_no_reembed'] * 10_000 / ing['n']:.2f}s and "
        f"{ing['rebuild_seconds_reembed'] * 10_000 / ing['n']:.1f}s per 10k records.",
        "",
    ]
    return out


def _context_line(ing: dict[str, Any]) -> list[str]:
    if "context" not in ing:
        return []
    c = ing["context"]
    return [
        f"Recall messages in sessions of 20 ({c['n']:,}, each embedded alone and after the previous message, "
        f"in one model call): **{c['records_per_s']:.0f} records/s** ({c['embed_seconds']:.1f}s of "
        f"{c['seconds']:.1f}s in the model).",
        "",
    ]


def _rss(cold: dict[str, float]) -> str:
    return f"{cold['peak_rss_mib']:.0f}" if "peak_rss_mib" in cold else "not measured"


def _cold_seconds(backend: dict[str, Any]) -> float | str:
    """--quick starts a cold search on the default backend only."""
    return round(backend["cold_search"]["seconds"], 2) if "cold_search" in backend else "not measured"


def _invariance(measured: dict[str, float] | None) -> str:
    return f"{measured['batch']:.6f} / {measured['query_path']:.6f}" if measured else "-"


def backends_section(backends: dict[str, Any]) -> list[str]:
    compare = backends["compare"]
    rows = []
    for name, b in compare["backends"].items():
        agreement = b.get("cosine_to_torch")
        rows.append(
            [
                name,
                f"`{b['model_id']}`",
                round(b["turns_per_s"]),
                round(b["load_seconds"], 2),
                f"{agreement['mean']:.4f} / {agreement['min']:.4f}" if agreement else "reference",
                _invariance(b.get("batch_invariance")),
                b["locomo"]["recall"]["recall@10"],
                b["locomo"]["recall"]["mrr@10"],
                b["locomo"]["archival"]["recall@10"],
                b["locomo"]["archival"]["mrr@10"],
                _cold_seconds(b),
                _rss(b.get("cold_search", {})),
            ]
        )
    out = [
        "## Embedding backends (one run, same model)",
        "",
        f"Vectors of all {compare['turns']:,} LoCoMo turns from each backend, compared with torch's; LoCoMo "
        "quality per tier with each backend by hybrid fusion (the ranker left out: it is fitted on one "
        "backend's vectors); cold `memvec search` = a new process from "
        "interpreter start to printed hits, and its peak RSS (median of 3; any ONNX export already cached). "
        "Batch invariance: 8 LoCoMo questions each alone and first in a batch with 31 others, the lowest "
        "cosine; int8's dynamic quantization scales a batch's activations together, so its query path "
        "embeds each query in a pass of its own.",
        "",
        markdown_table(
            [
                "backend",
                "model id",
                "turns/s",
                "model load s",
                "cosine to torch mean / min",
                "alone vs in a batch of 32: raw / query path (min cosine)",
                "recall R@10",
                "recall MRR@10",
                "archival R@10",
                "archival MRR@10",
                "cold search s",
                "cold search peak RSS MiB",
            ],
            rows,
        ),
        "",
    ]
    cli = backends["cli"]
    rows = [
        [
            r["backend"],
            round(r["ingest_records_per_s"], 1),
            round(r["batch_search_ms_per_query"], 1),
            round(r["cold_search"]["seconds"], 2),
            *[
                f"{lv['rps']:.0f}/s, p50 {lv['p50_ms']:.0f}, p99 {lv['p99_ms']:.0f}, {lv['errors']} err"
                for lv in r["serve"]
            ],
        ]
        for r in cli
    ]
    base, new = cli[0], cli[-1]
    eight = [r["serve"][1] for r in cli]
    out += [
        "### Through the CLI on real conversation turns",
        "",
        f"`memvec ingest` of {base['turns']:,} LoCoMo turns (session ids, dates, one agent per conversation, "
        f"defaults), `memvec search --queries` over {base['questions']} questions (process start included), a "
        "cold one-query `memvec search`, and `memvec serve` searching one conversation with distinct "
        "questions at 1 / 8 / 32 clients (6 s each).",
        "",
        markdown_table(
            [
                "backend",
                "ingest records/s",
                "batch search ms/query",
                "cold search s",
                "serve 1 client",
                "serve 8 clients",
                "serve 32 clients",
            ],
            rows,
        ),
        "",
    ]
    if len(cli) > 1:  # --quick runs the default backend alone
        out += [
            f"{new['backend']} over {base['backend']} in this run: ingest "
            f"x{new['ingest_records_per_s'] / base['ingest_records_per_s']:.1f}, "
            f"batch search x{new['batch_search_ms_per_query'] / base['batch_search_ms_per_query']:.2f} the time, "
            f"cold search {new['cold_search']['seconds']:.2f}s vs {base['cold_search']['seconds']:.2f}s"
            + (
                f" (peak RSS {_rss(new['cold_search'])} vs {_rss(base['cold_search'])} MiB), "
                if "peak_rss_mib" in new["cold_search"]
                else ", "
            )
            + f"serve at 8 clients x{eight[-1]['rps'] / eight[0]['rps']:.1f} searches/s.",
            "",
        ]
    return out


def _growth_section(growth: list[dict[str, Any]]) -> list[str]:
    rows = [
        [
            f"{p['n']:,}",
            round(p["ingest_seconds"], 1),
            p["flat_vector_ms"]["p50"],
            p["flat_hybrid_ms"]["p50"],
            round(p["hnsw_open_seconds"], 1),
            p["hnsw_vector_ms"]["p50"],
            p["hnsw_hybrid_ms"]["p50"],
            p["hnsw_recall_at_10_vs_flat"],
            round(p["disk_bytes_per_record"]),
            round(p["flat_rss_bytes_per_record"]),
        ]
        for p in growth
    ]
    out = [
        "## Growth with N (synthetic clustered unit vectors, dim 384: index cost without model cost)",
        "",
        markdown_table(
            [
                "N",
                "ingest s",
                "flat vector p50 ms",
                "flat hybrid p50 ms",
                "HNSW build s",
                "HNSW vector p50 ms",
                "HNSW hybrid p50 ms",
                "HNSW recall@10 vs flat",
                "disk B/rec",
                "RSS B/rec (flat)",
            ],
            rows,
        ),
        "",
    ]
    if len(growth) > 1:
        first, last = growth[0], growth[-1]
        factor = last["n"] / first["n"]
        out += [
            f"From {first['n']:,} to {last['n']:,} records (×{factor:.0f}): flat vector search grows "
            f"×{last['flat_vector_ms']['p50'] / first['flat_vector_ms']['p50']:.1f}, HNSW vector search "
            f"×{last['hnsw_vector_ms']['p50'] / first['hnsw_vector_ms']['p50']:.1f}, hybrid (flat) "
            f"×{last['flat_hybrid_ms']['p50'] / first['flat_hybrid_ms']['p50']:.1f}.",
            "",
        ]
    return out


def _stores_section(backends: dict[str, Any]) -> list[str]:
    rows = []
    for name in ("sqlite", "postgresql"):
        b = backends[name]
        rows.append(
            [name, "skipped: " + b["skipped"], "", "", ""]
            if "skipped" in b
            else [
                name,
                round(b["records_per_s"]),
                b["hybrid_ms"]["p50"],
                b["hybrid_ms"]["p99"],
                round(b["cold_start_s"], 2),
            ]
        )
    return [
        f"## Store backends ({backends['n']:,} records, synthetic vectors: no model cost)",
        "",
        "Same records and index code; ingest in batches of 256 (one transaction each); the cold start is "
        "the first search of a home without index files, rebuilt from the store's embeddings (what a new "
        "server sharing a PostgreSQL database does).",
        "",
        markdown_table(["store", "ingest records/s", "hybrid p50 ms", "hybrid p99 ms", "cold start s"], rows),
        "",
        *_staleness_lines(backends.get("staleness")),
    ]


def _staleness_lines(result: dict[str, Any] | None) -> list[str]:
    if result is None:
        return []
    if "skipped" in result:
        return [f"Staleness between two servers: skipped ({result['skipped']}).", ""]
    lag = result["lag_ms"]
    return [
        f"Staleness between two `memvec serve` on one PostgreSQL database ({result['writes']} writes through "
        f"A, each searched through B right after A's 201): {result['first_search_pct']:.0f}% found by B's "
        f"first search (at most {result['max_searches']}); acknowledgement to B's answer p50 "
        f"{lag['p50']:.1f} ms, p99 {lag['p99']:.1f} ms, max {lag['max']:.1f} ms (B's search included).",
        "",
    ]


def _http_section(http: dict[str, Any]) -> list[str]:
    rows = [
        [
            op,
            level["clients"],
            level["requests"],
            level["errors"],
            round(level["rps"], 1),
            level["p50_ms"],
            level["p99_ms"],
        ]
        for op in ("search", "search, fusion alone", "insert")
        for level in http.get(op, [])
    ]
    return (
        [
            "## HTTP service under load",
            "",
            f"A real `memvec serve` (uvicorn, default model) on 127.0.0.1 holding {http['preload']:,} passages; "
            f"each level runs {http['seconds_per_level']:.0f}s of back-to-back requests per client. Clients and "
            "server share the same cores, so these are lower bounds. Search embeds every query (the default "
            "search, then with `rerank=false`: fusion alone, without the learned ranker); insert embeds and "
            "commits (fsync) each passage.",
            "",
            markdown_table(["operation", "clients", "requests", "errors", "requests/s", "p50 ms", "p99 ms"], rows),
            "",
        ]
        + (_workers_section(http["workers"]) if "workers" in http else [])
        + (_observability_section(http["observability"]) if "observability" in http else [])
        + (_streaming_section(http["streaming"]) if "streaming" in http else [])
    )


def _observability_section(cost: dict[str, Any]) -> list[str]:
    return [
        "### What logs and metrics cost a search",
        "",
        f"One client searching {cost['preload']:,} passages through `memvec serve`, {cost['seconds']:g} s per "
        f"server, {cost['rounds']} round(s) alternating `--log-level warning` (no line per request) and `info` "
        f"(one line per request, written to a file): p50 {cost['p50_ms_without_log']:.2f} ms without, "
        f"{cost['p50_ms_with_log']:.2f} ms with, x{cost['log_ratio']:.2f}. The metric updates of one search "
        f"request (its count and duration, three search stages) take {cost['metrics_us_per_search']:.1f} µs "
        f"timed alone, {100 * cost['metrics_share']:.2f}% of that search's median.",
        "",
    ]


def _streaming_section(stream: dict[str, Any]) -> list[str]:
    rows = [
        [route, round(1000 * r["first_event_s"]), round(1000 * r["first_token_s"]), round(1000 * r["done_s"])]
        for route, r in stream.items()
        if isinstance(r, dict)
    ]
    direct = stream["direct"]
    return [
        "### Time to the first event of a streamed reply",
        "",
        f"An agent whose model (litellm's scripted provider, no network) streams a reply in {direct['pieces']} "
        f"pieces of its `send_message`, pausing {1000 * stream['pause_s']:.0f} ms before each; `POST "
        f".../messages/stream` with `stream_tokens`, {direct['replies']} replies per route, medians in ms from "
        "the request. Behind nginx (`memvec router-config`) the first token still comes while the model is "
        "streaming, not with the last piece."
        + ("" if stream.get("nginx") else " nginx is not installed here: the routed row is missing."),
        "",
        markdown_table(["route", "first event ms", "first assistant token ms", "stream end ms"], rows),
        "",
    ]


def _workers_section(rows: list[dict[str, Any]]) -> list[str]:
    table = [
        [r["workers"], r["clients"], r["requests"], r["errors"], round(r["rps"], 1), r["p50_ms"], r["p99_ms"]]
        for r in rows
    ]
    return [
        "### Searches with `memvec serve --workers N`",
        "",
        "The same home and load, served by 1 and then 2 worker processes on one port (SO_REUSEPORT; each "
        "loads the model and its own indexes), in this run one after the other.",
        "",
        markdown_table(["workers", "clients", "requests", "errors", "searches/s", "p50 ms", "p99 ms"], table),
        "",
    ]


def _ui_section(ui: dict[str, Any]) -> list[str]:
    rows = [[page, round(t["p50"], 1), round(t["p95"], 1), round(t["kb"], 1)] for page, t in ui["pages"].items()]
    worst = max(t["p95"] for t in ui["pages"].values())
    return [
        "## Memory browser pages",
        "",
        f"Server time of each `/ui` page for an agent with {ui['records_per_tier']:,} records per tier (and 20 "
        f"other agents), through the real app in-process with a signed-in key: {ui['repeats']} requests after "
        f"a warm-up; search embeds its query with the model. Slowest p95: {worst:.1f} ms.",
        "",
        markdown_table(["page", "p50 ms", "p95 ms", "KiB"], rows),
        "",
    ]
