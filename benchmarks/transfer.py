"""Does the second stage transfer? The learned ranker fitted on each family, on the others, and on all
of them, each family reported held out by group (issue 35, item 2).

Families and their groups: LoCoMo (recall and archival tiers; a conversation), LongMemEval_S dev
questions (recall tier; five folds of questions, none of the ones `make bench` decides on) and SciFact
(archival records without sessions; the five folds of training claims over the whole corpus).
Candidates and features come from the engine exactly as `make train-ranker` takes them
(`benchmarks.ranker_data`, which caches them under `indexes/cache/`: building the homes is most of
the time, ~30 min on 2 cores).
Every "held out" figure ranks a group with trees fitted without it; "only on X" ranks a family with
trees fitted on family X alone (the transfer question); "fusion" is the first stage's own order.

    python -m benchmarks.transfer [--per-type N] [--locomo P] [--longmemeval P] [--scifact DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from benchmarks import longmemeval, ranker_data, scifact, train_ranker
from benchmarks.datasets import DEFAULT_LOCOMO
from benchmarks.metrics import ndcg_at_k, summarize
from benchmarks.ranker_data import Question
from memvec.embed import load_embedder
from memvec.search.rerank import FEATURES

ROOT = Path(__file__).resolve().parents[1]
# Which families one set of trees could serve: turns with sessions and speakers, and passages.
TIER_FAMILIES = {"recall": ("LoCoMo", "LongMemEval_S"), "archival": ("LoCoMo", "SciFact")}
Rows = list[tuple[list[str], set[str]]]


def summary(rows: Rows) -> dict[str, float]:
    """`metrics.summarize`'s R@1, R@10 and MRR@10, with nDCG@10 beside them."""
    ndcg = float(np.mean([ndcg_at_k(r, e, 10) for r, e in rows])) if rows else 0.0
    return {**summarize(rows, ks=(1, 10)), "ndcg@10": ndcg}


def ranked(questions: list[Question], model: Any) -> Rows:
    """Each question's candidates in the order `model` scores them (as search scores them)."""
    columns = list(range(len(FEATURES)))
    return [(train_ranker.ranked_keys(q, model, columns), q.evidence) for q in questions if q.evidence]


def fitted(train: dict[str, list[Question]], equal_families: bool = False) -> Any:
    """Trees on every question of `train` ({family: questions}); `equal_families`: each family
    weighs as much as the others however many questions it has."""
    questions = [q for found in train.values() for q in found]
    weights = None
    if equal_families:
        weights = [len(questions) / (len(train) * len(found)) for found in train.values() for _ in found]
    return train_ranker.fit_tier(questions, weights=weights)


def held_out_by_group(
    target: list[Question], others: dict[str, list[Question]], equal_families: bool = False
) -> dict[str, Rows]:
    """Each group of `target` ranked by trees fitted on its other groups and on all of `others`."""
    out = {}
    for group in sorted({q.conversation for q in target}):
        train = {**others, "target": [q for q in target if q.conversation != group]}
        out[group] = ranked([q for q in target if q.conversation == group], fitted(train, equal_families))
    return out


def held_out(target: list[Question], others: dict[str, list[Question]], equal_families: bool = False) -> Rows:
    return [row for rows in held_out_by_group(target, others, equal_families).values() for row in rows]


def shipped_by_group(found: dict[str, list[Question]]) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """Each family's trees as the shipped file fits them (`train_ranker.shipped_questions`: turns of
    LoCoMo and LongMemEval_S together, LoCoMo's passages, SciFact's documents), each group held out:
    {"family, kind": {group: {"fusion": summary, "ranker": summary}}}."""
    turns = {name: [q for q in found[name] if q.tier == "recall"] for name in ("LoCoMo", "LongMemEval_S")}
    recipes = {
        "LoCoMo, recall": (turns["LoCoMo"], {"other": turns["LongMemEval_S"]}),
        "LongMemEval_S, recall": (turns["LongMemEval_S"], {"other": turns["LoCoMo"]}),
        "LoCoMo, archival": ([q for q in found["LoCoMo"] if q.tier == "archival"], {}),
        "SciFact, documents": (found["SciFact"], {}),
    }
    out = {}
    for name, (target, others) in recipes.items():
        ranked_rows = held_out_by_group(target, others)
        out[name] = {
            group: {
                "fusion": summary([(q.keys, q.evidence) for q in target if q.conversation == group and q.evidence]),
                "ranker": summary(rows),
            }
            for group, rows in ranked_rows.items()
        }
    return out


def experiment(families: dict[str, list[Question]]) -> dict[str, dict[str, dict[str, float]]]:
    """{arm: {family: summary}} for one tier's families."""
    out: dict[str, dict[str, dict[str, float]]] = {
        "fusion (first stage)": {
            name: summary([(q.keys, q.evidence) for q in qs if q.evidence]) for name, qs in families.items()
        }
    }
    for source, questions in families.items():
        only = fitted({source: questions})
        out[f"fitted on {source} only"] = {
            name: summary(held_out(qs, {}) if name == source else ranked(qs, only)) for name, qs in families.items()
        }
    for equal in (False, True):
        arm = "fitted on all, families weighted equally" if equal else "fitted on all"
        out[arm] = {
            name: summary(held_out(qs, {n: q for n, q in families.items() if n != name}, equal))
            for name, qs in families.items()
        }
    return out


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Does the second stage transfer?",
        "",
        "Trees as `make train-ranker` fits them, over the candidates it takes (the best "
        f"{ranker_data.DEPTH} of fusion at session weight {ranker_data.SESSION_WEIGHT}). Held out by group: "
        "a LoCoMo conversation, a fold of LongMemEval_S dev questions "
        f"({results['longmemeval_dev']}), a fold of SciFact training claims. A family a row was not fitted on "
        "is ranked by trees fitted on all of the others. Written by `python -m benchmarks.transfer`.",
    ]
    for tier, arms in results["tiers"].items():
        names = list(next(iter(arms.values())))
        lines += [
            "",
            f"## {tier} tier (nDCG@10 / R@1 / R@10)",
            "",
            "| ranking | " + " | ".join(f"{n} (n={arms['fusion (first stage)'][n]['n']})" for n in names) + " |",
            "|---" * (len(names) + 1) + "|",
        ]
        for arm, by_family in arms.items():
            cells = [f"{m['ndcg@10']:.3f} / {m['recall@1']:.3f} / {m['recall@10']:.3f}" for m in by_family.values()]
            lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## The shipped recipe, group by group (nDCG@10 / R@1, fusion -> ranker held out)",
        "",
        "Turns of LoCoMo and LongMemEval_S fitted together, LoCoMo's passages alone, SciFact's documents "
        "alone (the shipped file fits the documents on folds 1-4 only: fold 0 is `make bench`'s).",
        "",
        "| family | group | n | fusion | ranker |",
        "|---|---|---|---|---|",
    ]
    for name, groups in results["shipped_by_group"].items():
        for group, pair in groups.items():
            f, r = pair["fusion"], pair["ranker"]
            lines.append(
                f"| {name} | {group} | {r['n']} | {f['ndcg@10']:.3f} / {f['recall@1']:.3f} | "
                f"{r['ndcg@10']:.3f} / {r['recall@1']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.transfer", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--longmemeval", type=Path, default=longmemeval.DEFAULT_PATH)
    parser.add_argument("--scifact", type=Path, default=scifact.DEFAULT_PATH)
    parser.add_argument(
        "--per-type", type=int, default=ranker_data.PER_TYPE_DEV, help="LongMemEval_S dev questions of each type"
    )
    parser.add_argument("--model", default=train_ranker.DEFAULT_MODEL)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    embedder = load_embedder(args.model)
    try:
        found = {
            "LoCoMo": ranker_data.locomo_questions(args.locomo, embedder),
            "LongMemEval_S": ranker_data.longmemeval_questions(args.longmemeval, embedder, args.per_type),
            "SciFact": ranker_data.scifact_questions(args.scifact, embedder),
        }
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    tiers = {
        tier: experiment({name: [q for q in found[name] if q.tier in (tier, "documents")] for name in names})
        for tier, names in TIER_FAMILIES.items()
    }
    results = {
        "longmemeval_dev": f"{args.per_type} a type after the first {longmemeval.PER_TYPE_DEFAULT}",
        "tiers": tiers,
        "shipped_by_group": shipped_by_group(found),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "transfer.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "transfer.md").write_text(markdown(results))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
