"""The benchmark report: markdown tables, plots and the machine/versions header."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from statistics import mean
from typing import Any

from benchmarks import ceiling, documents, families, guard, profiles, relevance, speed_report
from benchmarks.metrics import hit_at_k
from benchmarks.tables import markdown_table
from memvec.embed import Embedder

CONVEX_WEIGHTS = ["hybrid w=0.3", "hybrid w=0.5", "hybrid w=0.7"]
SHOWN_MODES = [
    "token",
    "bm25",
    "vector",
    *CONVEX_WEIGHTS,
    "hybrid-rrf",
    "hybrid, no ranker",
    "hybrid (default)",
    "hybrid, sessions always spread",
    "hybrid, sessions never spread",
]


def recall_curves(
    rows_by_mode: dict[str, list[tuple[list[str], set[str], str]]], max_k: int = 10
) -> dict[str, list[float]]:
    return {
        mode: [mean(hit_at_k(r, e, k) for r, e, _ in rows) for k in range(1, max_k + 1)]
        for mode, rows in rows_by_mode.items()
    }


def environment(embedder: Embedder, args: argparse.Namespace) -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    versions = {}
    for package in (
        "memvec",
        "faiss-cpu",
        "onnxruntime",
        "sentence-transformers",
        "torch",
        "numpy",
        "PyStemmer",
        "pydantic",
    ):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "-"
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_gib, 1),
        "python": platform.python_version(),
        "versions": versions,
        "model": embedder.model_id,
        "dim": embedder.dim,
        "locomo": str(args.locomo),
        "mode": "quick" if args.quick else "full" if args.full else "default",
    }


def choose_weight(quality: dict[str, Any]) -> tuple[str, dict[str, float]]:
    """The convex weight with the best mean recall@10 over all tasks (LoCoMo tiers and synthetic)."""
    means = {w: mean(t["scores"][w]["overall"]["recall@10"] for t in quality.values()) for w in CONVEX_WEIGHTS}
    return max(means, key=lambda w: means[w]), means


def _quality_section(quality: dict[str, Any]) -> list[str]:
    out = [
        "## Retrieval quality",
        "",
        "recall@10 (any evidence in the top 10), per task and mode, through `Memory.search`:",
        "",
        markdown_table(
            ["task", *SHOWN_MODES],
            [[name, *(t["scores"][m]["overall"]["recall@10"] for m in SHOWN_MODES)] for name, t in quality.items()],
        ),
        "",
    ]
    for name, task in quality.items():
        scores = task["scores"]
        out += [
            f"### {name} (n={scores['token']['overall']['n']} queries)",
            "",
            markdown_table(
                ["mode", "R@1", "R@3", "R@5", "R@10", "MRR@10", "all-evidence R@10"],
                [
                    [
                        m,
                        *(
                            scores[m]["overall"].get(c, float("nan"))
                            for c in ("recall@1", "recall@3", "recall@5", "recall@10", "mrr@10", "all@10")
                        ),
                    ]
                    for m in SHOWN_MODES
                ],
            ),
            "",
        ]
        categories = list(scores["token"]["by_category"])
        if len(categories) > 1:
            out += [
                "recall@10 per question category:",
                "",
                markdown_table(
                    ["mode", *(f"{c} (n={scores['token']['by_category'][c]['n']})" for c in categories)],
                    [[m, *(scores[m]["by_category"][c]["recall@10"] for c in categories)] for m in SHOWN_MODES],
                ),
                "",
            ]
    return out


def _fusion_section(quality: dict[str, Any]) -> list[str]:
    best, means = choose_weight(quality)
    locomo = quality.get("LoCoMo recall tier")
    out = [
        "## Choosing the default fusion",
        "",
        markdown_table(
            ["convex weight on the vector side", "mean R@10 over all tasks"], [[w, v] for w, v in means.items()]
        ),
        "",
        f"Best mean: **{best}**. The default (`vector_weight` 0.5, convex min-max) is chosen from this: "
        "weights at or below 0.5 keep the exact-token task perfect, while 0.7 lets near-identical "
        "embeddings outvote the one record with the right key; RRF ignores how decisive a BM25 match is "
        "(only ranks count), so it ranks the right key lower on the key-value task (R@1) and trails "
        "convex fusion on LoCoMo.",
        "",
    ]
    if locomo:
        s = {m: locomo["scores"][m]["overall"]["recall@10"] for m in ("token", "bm25", "vector", "hybrid (default)")}
        out += [
            f"On the LoCoMo recall tier, default hybrid R@10 = {s['hybrid (default)']:.3f}: "
            f"{s['hybrid (default)'] - s['bm25']:+.3f} over BM25 alone, {s['hybrid (default)'] - s['vector']:+.3f} "
            f"over vectors alone and {s['hybrid (default)'] - s['token']:+.3f} over token matching.",
            "",
        ]
    return out


def _changing_section(changed: dict[str, Any]) -> list[str]:
    """The synthetic changing-facts task (benchmarks/changing.py): versions vs append-only."""
    rows = [
        [
            f"{way}, {kind} (n={changed[way][kind]['n']})",
            changed[way][kind]["recall@1"],
            changed[way][kind]["recall@5"],
            changed[way][kind]["outdated_in_top5"],
        ]
        for way in ("versioned", "append-only")
        for kind in ("current", "past")
    ]
    return [
        "## Facts that change",
        "",
        f"{changed['facts']} facts (people's city, employer, car, hobby), {changed['versions']} values over "
        "2012-2025, each changing 2-4 times. *versioned*: each change is an update (`valid_from` = its date); "
        "questions for the current value search current versions, questions for a past date pass `as_of`. "
        "*append-only*: every value is its own passage recorded at its date (memvec before versions). "
        "Default hybrid search, the same questions:",
        "",
        markdown_table(["kept as, question", "R@1 (right version)", "R@5", "outdated value in top 5"], rows),
        "",
    ]


def _near_duplicates_section(found: dict[str, Any]) -> list[str]:
    """Near-duplicate merging (benchmarks/near_duplicates.py): precision/recall per cosine threshold."""
    rows = [
        [threshold, r["precision"], r["recall"], cosine["precision"], cosine["recall"]]
        for (threshold, r), cosine in zip(found["memvec"].items(), found["cosine_alone"].values(), strict=True)
    ]
    held = found["leave_one_out"]
    chosen = ", ".join(str(t) for t in held["chosen"])
    return [
        "## Near-duplicates",
        "",
        f"{found['observations']} LoCoMo observations inserted as archival passages, then {found['repeats']} "
        f"repeats (lower-cased, a filler word, a one-letter typo) that should merge into their observation "
        f"and {found['changed']} changed facts (a name, a number, a negation) that must not. Precision: "
        "merges that were repeats of the right passage / all merges (a merge among the distinct "
        "observations counts as false); recall: repeats merged / repeats.",
        "",
        markdown_table(
            [
                "cosine threshold",
                "precision (with the lexical check)",
                "recall",
                "precision (cosine alone)",
                "recall (cosine alone)",
            ],
            rows,
        ),
        "",
        f"Threshold chosen leave-one-conversation-out (best recall at precision >= 0.99 on the other "
        f"conversations): {chosen}; held out: precision {held['precision']:.3f}, recall {held['recall']:.3f}. "
        f"The default `near_cosine` is {found['default']} (chosen on all: {found['chosen_on_all']}).",
        "",
    ]


def write_report(out: Path, stem: str, data: dict[str, Any], text: str) -> None:
    """`stem`.json and `stem`.md under `out` (created), and the markdown on stdout."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(data, indent=1))
    (out / f"{stem}.md").write_text(text)
    print(text)


def trust_markdown(trust: dict[str, Any]) -> list[str]:
    """What memvec tells the model to trust: the poisoning check's table, and the relevance threshold's."""
    out = ["## What a result can be trusted with", "", "### The poisoning check", ""]
    out += [*guard.markdown(trust["guard"]), "", "### Nothing relevant: the default min_score", ""]
    if trust.get("relevance") is None:
        return [*out, "No relevance calibration ships for this model: hits have no relevance.", ""]
    return out + relevance.markdown(trust["relevance"]) + [""]


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    out = [
        "# memvec benchmark",
        "",
        f"{meta['date']} · {meta['mode']} run · {meta['seconds']:.0f}s · {meta['cpu']}, {meta['cores']} cores, "
        f"{meta['memory_gib']} GiB · Python {meta['python']} · {versions} · model `{meta['model']}` "
        f"(dim {meta['dim']}) · data `{meta['locomo']}`",
        "",
        "Medians and ratios come from this one run. Plots: `recall_at_k.png`, `latency_vs_n.png`.",
        "",
    ]
    if "section_seconds" in meta:
        out += [
            "Sections run: "
            + ", ".join(f"{name} {seconds:.0f}s" for name, seconds in meta["section_seconds"].items())
            + ".",
            "",
        ]
    if "quality" in results:
        out += _quality_section(results["quality"]) + _fusion_section(results["quality"])
    if "families" in results:
        out += families.markdown(results["families"])
    if "documents" in results:
        out += documents.markdown(results["documents"])
    if "trust" in results:
        out += trust_markdown(results["trust"])
    if "lifecycle" in results:
        out += _changing_section(results["lifecycle"]["changing facts"])
        out += _near_duplicates_section(results["lifecycle"]["near duplicates"])
    if "speed" in results:
        out += speed_report.speed_sections(results["speed"])
    if results.get("ceiling"):
        out += ceiling.markdown(results["ceiling"])
    if "backends" in results:
        out += speed_report.backends_section(results["backends"])
    if "profiles" in results:
        out += profiles.markdown(results["profiles"])
    return "\n".join(out) + "\n"


def plots(results: dict[str, Any], out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if "quality" in results:
        _recall_plot(plt, results["quality"], out_dir)
    if "speed" in results:
        _latency_plot(plt, results["speed"]["growth"], out_dir)


def _recall_plot(plt: Any, quality: dict[str, Any], out_dir: Path) -> None:
    fig, axes = plt.subplots(1, len(quality), figsize=(5 * len(quality), 4), sharey=True)
    for ax, (name, task) in zip(axes, quality.items(), strict=True):
        for mode in SHOWN_MODES:
            ax.plot(range(1, 11), task["curves"][mode], marker="o", markersize=3, label=mode)
        ax.set_title(name)
        ax.set_xlabel("k")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("recall@k")
    axes[-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out_dir / "recall_at_k.png", dpi=110)
    plt.close(fig)


def _latency_plot(plt: Any, growth: list[dict[str, Any]], out_dir: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    ns = [p["n"] for p in growth]
    for key, label in (
        ("flat_vector_ms", "flat, vector"),
        ("flat_hybrid_ms", "flat, hybrid"),
        ("hnsw_vector_ms", "HNSW, vector"),
        ("hnsw_hybrid_ms", "HNSW, hybrid"),
    ):
        ax.plot(ns, [p[key]["p50"] for p in growth], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("records (N)")
    ax.set_ylabel("query latency p50 (ms)")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "latency_vs_n.png", dpi=110)
    plt.close(fig)
