"""`make train-ranker`: fit the learned ranker and report it on LoCoMo leave-one-conversation-out
(every number is from a conversation the model was not fitted on).

Questions come from `benchmarks.ranker_data`: each question's best `DEPTH` fused candidates with
their features, computed by the engine exactly as a search computes them; a candidate is relevant
when it cites the question's evidence. The model is a LightGBM ensemble of small boosted trees per
kind of record (binary objective, one thread, fixed seed: the same data give the same file), written
in memvec's own node-table format so that search needs no training library:
- recall: conversation turns, fitted on LoCoMo's five dev conversations and the LongMemEval_S dev
  questions (not those `make bench` reports);
- archival: passages in sessions, fitted on LoCoMo's observation facts;
- documents: archival records without sessions, fitted on SciFact's training claims of folds 1-4
  (fold 0 is `make bench`'s).
`--families locomo` fits the first two on LoCoMo alone (the quality profile's ranker: its vectors
for the other families would take hours on 2 cores). `python -m benchmarks.transfer` reports every
family held out by group and each one ranked by trees fitted on the others.

    python -m benchmarks.train_ranker [--locomo PATH] [--model ID] [--families LIST] [--out memvec/search/ranker.json]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks import longmemeval, ranker_data, scifact
from benchmarks.datasets import DEFAULT_LOCOMO
from benchmarks.metrics import summarize
from benchmarks.ranker_data import DEPTH, SESSION_WEIGHT, Question, dev_questions
from memvec.config import SearchSettings
from memvec.embed import load_embedder, split_model_id
from memvec.embed.locate import DEFAULT_MODEL_ALIASES
from memvec.search.compiled_trees import compile_ranker
from memvec.search.rerank import (
    FEATURES,
    RANKER_FILE,
    RANKER_VERSION,
    Ranker,
    compiled_name,
    context_support,
    probabilities,
)
from memvec.search.trees import TreeEnsemble, from_nested_trees

TIERS = ("recall", "archival")  # the tiers LoCoMo's report covers
MODELS = ("recall", "archival", "documents")  # the kinds of record a shipped ranker may have trees for
FAMILIES = ("locomo", "longmemeval", "scifact")
# Small trees, a slow rate and large leaves: the dev set is five conversations, and a ranker that
# learned their quirks would not carry over (chosen leave-one-conversation-out, not tuned further).
TREE_PARAMS: dict[str, Any] = {
    "objective": "binary",
    "learning_rate": 0.05,
    "num_leaves": 7,
    "min_data_in_leaf": 50,
    "use_missing": False,
    "seed": 1,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "verbose": -1,
}
ROUNDS = 200
# All else equal, a record closer to the query (by its own scores and ranks, or spoken by the
# person the query names) never scores lower. Without this the trees learned LoCoMo patterns that
# turned upside down on a tiny tier (the turn before the answer ranked above the answer itself).
MONOTONE = {
    "vector": 1,
    "vector_gap": 1,
    "bm25_share": 1,
    "fused": 1,
    "fused_gap": 1,
    "speaker_named": 1,
    "other_speaker_named": -1,
}
DEFAULT_MODEL = "onnx-int8:all-MiniLM-L6-v2"
ROOT = Path(__file__).resolve().parents[1]
Matrix = npt.NDArray[np.float64]


def labels(questions: list[Question]) -> tuple[Matrix, Matrix]:
    x = np.vstack([q.features for q in questions])
    y = np.concatenate([[1.0 if key in q.evidence else 0.0 for key in q.keys] for q in questions])
    return x, y


def fit_tier(
    questions: list[Question], features: tuple[str, ...] = FEATURES, weights: list[float] | None = None
) -> TreeEnsemble:
    """Boosted trees on one tier's candidates, relevant (cites the evidence) or not, over
    `features` (a subset of FEATURES, in their order, for the ablation); `weights`: one a question
    (its candidates share it), else all alike."""
    import lightgbm  # training only: search evaluates the trees itself

    x, y = labels(questions)
    x = x[:, [FEATURES.index(name) for name in features]]
    params = {**TREE_PARAMS, "monotone_constraints": [MONOTONE.get(name, 0) for name in features]}
    row_weights = None if weights is None else np.repeat(weights, [len(q.keys) for q in questions])
    data = lightgbm.Dataset(x, y, weight=row_weights, params={"verbose": -1})
    booster = lightgbm.train(params, data, num_boost_round=ROUNDS)
    return from_nested_trees([tree["tree_structure"] for tree in booster.dump_model()["tree_info"]])


def fit(questions: list[Question], models: tuple[str, ...]) -> Ranker:
    """Trees for each kind of record the questions hold (`MODELS`), each fitted on its questions, and
    the kind of candidate sets it then ranks (those like its questions' candidate sets)."""
    kinds = [kind for kind in MODELS if any(q.tier == kind for q in questions)]
    tiers = {kind: fit_tier([q for q in questions if q.tier == kind]) for kind in kinds}
    support = {kind: context_support([q.context for q in questions if q.tier == kind]) for kind in kinds}
    return Ranker(
        version=RANKER_VERSION,
        features=FEATURES,
        models=models,
        tiers=tiers,
        depth=DEPTH,
        fusion=SearchSettings().fusion.value,
        session_weight=SESSION_WEIGHT,
        support=support,
    )


def ranked_keys(question: Question, model: TreeEnsemble, columns: list[int]) -> list[str]:
    """The candidates' keys as `model` (over the feature `columns`) orders them, scored as search
    scores them."""
    scores = probabilities(model.raw_scores(question.features[:, columns]))
    return [question.keys[i] for i in np.argsort(-scores, kind="stable")]


def leave_one_out(questions: list[Question], ranked: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """The first stage's order and the held-out rankings (`held_out(questions)`) side by side,
    overall and per conversation."""

    def fusion(tier: str, conversation: str | None = None) -> dict[str, float]:
        return summarize(
            [
                (q.keys, q.evidence)
                for q in questions
                if q.tier == tier and conversation in (None, q.conversation) and q.evidence
            ],
            ks=(1, 3, 5, 10),
        )

    conversations = sorted({q.conversation for q in questions})
    return {
        "overall": {tier: {"fusion": fusion(tier), "ranker": ranked[tier]["all"]} for tier in TIERS},
        "per_conversation": {
            name: {tier: {"fusion": fusion(tier, name), "ranker": ranked[tier][name]} for tier in TIERS}
            for name in conversations
        },
    }


SHIPPED = "all features (shipped)"
FEATURE_GROUPS = {
    "the text features (time words, a time question, a question asked)": (
        "time_words",
        "asks_time",
        "ends_question",
        "has_question",
    ),
    "the neighbouring turns": ("prev_vector", "next_vector", "neighbour_bm25_share", "prev_has_question"),
    "the session features": (
        "session_vector",
        "session_bm25_share",
        "session_best_vector",
        "session_best_bm25_share",
        "session_candidates_log",
    ),
    "the speaker features": ("speaker_named", "other_speaker_named"),
    "the length": ("length_log",),
}


def held_out(questions: list[Question], features: tuple[str, ...] = FEATURES) -> dict[str, dict[str, dict[str, float]]]:
    """{tier: {"all" or a held-out conversation: summary}}: each conversation ranked by trees over
    `features` fitted on the other conversations."""
    out = {}
    columns = [FEATURES.index(name) for name in features]
    for tier in TIERS:
        per_conversation: dict[str, list[tuple[list[str], set[str]]]] = {}
        for name in sorted({q.conversation for q in questions}):
            model = fit_tier([q for q in questions if q.tier == tier and q.conversation != name], features)
            per_conversation[name] = [
                (ranked_keys(q, model, columns), q.evidence)
                for q in questions
                if q.tier == tier and q.conversation == name and q.evidence
            ]
        per_conversation["all"] = [row for rows in per_conversation.values() for row in rows]
        out[tier] = {name: summarize(rows, ks=(1, 3, 5, 10)) for name, rows in per_conversation.items()}
    return out


def ablation(questions: list[Question]) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """Leave-one-conversation-out rankings with each group of features left out, and with the
    raw scores alone: what each group adds, judged on conversations not fitted on.
    {variant: {tier: {"all" or a held-out conversation: summary}}}."""
    variants: dict[str, tuple[str, ...]] = {SHIPPED: FEATURES}
    variants.update(
        {f"without {group}": tuple(f for f in FEATURES if f not in names) for group, names in FEATURE_GROUPS.items()}
    )
    grouped = {name for names in FEATURE_GROUPS.values() for name in names}
    variants["the scores alone"] = tuple(f for f in FEATURES if f not in grouped)
    return {variant: held_out(questions, features) for variant, features in variants.items()}


def ablation_markdown(result: dict[str, dict[str, dict[str, dict[str, float]]]]) -> list[str]:
    lines = [
        "",
        "Feature ablation (each group left out, refitted; leave-one-conversation-out, R@1 / R@10 / MRR@10):",
        "",
        "| features | recall tier | archival tier |",
        "| --- | --- | --- |",
    ]
    for variant, tiers in result.items():
        cells = [
            f"{m['recall@1']:.3f} / {m['recall@10']:.3f} / {m['mrr@10']:.3f}"
            for m in (tiers["recall"]["all"], tiers["archival"]["all"])
        ]
        lines.append(f"| {variant} | {cells[0]} | {cells[1]} |")
    return lines


def report_markdown(result: dict[str, Any], ranker: Ranker) -> str:
    lines = [
        "# Learned ranker (leave-one-conversation-out on the LoCoMo dev conversations)",
        "",
        f"For `{', '.join(ranker.models)}`: boosted trees per tier "
        f"({ROUNDS} trees of up to {TREE_PARAMS['num_leaves']} leaves, monotone in "
        f"{', '.join(MONOTONE)}) over "
        f"{len(ranker.features)} features of the best {ranker.depth} fused "
        "candidates; each conversation ranked by a model fitted on "
        f"the other four. The fusion rows are the order of its first stage (session weight {ranker.session_weight}"
        "; without the ranker search fuses with 1.0, `latest.md`). Written by `make train-ranker`.",
        "",
        "| tier | ranking | R@1 | R@3 | R@5 | R@10 | MRR@10 | questions |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for tier, by_method in result["overall"].items():
        for method, m in by_method.items():
            lines.append(
                f"| {tier} | {method} | {m['recall@1']:.3f} | {m['recall@3']:.3f} | {m['recall@5']:.3f} | "
                f"{m['recall@10']:.3f} | {m['mrr@10']:.3f} | {m['n']} |"
            )
    lines += [
        "",
        "Per held-out conversation (R@1 / R@10 / MRR@10, fusion -> ranker):",
        "",
        "| conversation | recall tier | archival tier |",
        "| --- | --- | --- |",
    ]
    for name, tiers in result["per_conversation"].items():
        cells = []
        for tier in ("recall", "archival"):
            f, r = tiers[tier]["fusion"], tiers[tier]["ranker"]
            cells.append(
                f"{f['recall@1']:.3f}/{f['recall@10']:.3f}/{f['mrr@10']:.3f} -> "
                f"{r['recall@1']:.3f}/{r['recall@10']:.3f}/{r['mrr@10']:.3f}"
            )
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    splits = {
        kind: np.bincount(ranker.tiers[kind].feature[ranker.tiers[kind].feature >= 0], minlength=len(ranker.features))
        for kind in MODELS
        if kind in ranker.tiers
    }
    lines += [
        "",
        f"Splits on each feature in the shipped models (fitted on {', '.join(result['families'])}: "
        "`benchmarks/ranker_data.py` says which part of each):",
        "",
        "| feature | " + " | ".join(splits) + " |",
        "| --- |" + " --- |" * len(splits),
    ]
    lines += [
        f"| {name} | " + " | ".join(str(counts[n]) for counts in splits.values()) + " |"
        for n, name in enumerate(ranker.features)
    ]
    if "ablation" in result:
        lines += ablation_markdown(result["ablation"])
    return "\n".join(lines) + "\n"


def fold_rankers(samples: list[dict[str, Any]], embedder: Any) -> dict[str, Ranker]:
    """For each conversation, a ranker fitted on all the others (what `make bench` ranks it with)."""
    questions = dev_questions(samples, embedder)
    models = ranked_models(embedder.model_id)
    return {
        name: fit([q for q in questions if q.conversation != name], models)
        for name in sorted({q.conversation for q in questions})
    }


def ranked_models(model_id: str) -> tuple[str, ...]:
    """The model ids a ranker fitted on `model_id`'s vectors serves: both ONNX precisions of one
    model (int8 vectors agree with fp32 ones to cosine 0.99, or int8 is refused at export and the
    home embeds in fp32), else the id alone."""
    backend, name = split_model_id(model_id)
    if backend in ("onnx", "onnx-int8"):
        return (f"onnx-int8:{name}", f"onnx:{name}")
    return (model_id,)


def ranker_file(model_id: str) -> str:
    """`ranker.json` for the default model, `ranker-<name>.json` for another (the package ships both)."""
    name = split_model_id(model_id)[1]
    if name in DEFAULT_MODEL_ALIASES:
        return RANKER_FILE
    return "ranker-" + re.sub(r"[^A-Za-z0-9_.-]", "-", Path(name).name) + ".json"


def shipped_questions(args: argparse.Namespace, embedder: Any, locomo: list[Question]) -> list[Question]:
    """What the shipped file is fitted on: LoCoMo, and the other families' dev parts when asked."""
    questions = list(locomo)
    if "longmemeval" in args.families:
        questions += ranker_data.longmemeval_questions(args.longmemeval, embedder)
    if "scifact" in args.families:
        dev = {f"{ranker_data.SCIFACT_GROUP} {fold}" for fold in ranker_data.SCIFACT_DEV_FOLDS}
        questions += [q for q in ranker_data.scifact_questions(args.scifact, embedder) if q.conversation in dev]
    return questions


def families(text: str) -> tuple[str, ...]:
    chosen = tuple(name.strip() for name in text.split(",") if name.strip())
    if "locomo" not in chosen or not set(chosen) <= set(FAMILIES):
        raise argparse.ArgumentTypeError(f"a comma-separated list of {', '.join(FAMILIES)}, locomo among them")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--longmemeval", type=Path, default=longmemeval.DEFAULT_PATH)
    parser.add_argument("--scifact", type=Path, default=scifact.DEFAULT_PATH)
    parser.add_argument(
        "--families",
        type=families,
        default=FAMILIES,
        help=f"what the shipped file is fitted on (default: {','.join(FAMILIES)})",
    )
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--out", type=Path, help="default: memvec/search/ranker[-<model>].json")
    parser.add_argument("--report", type=Path, help="default: benchmarks/results/ranker[-<model>].{md,json}")
    args = parser.parse_args(argv)
    file_name = ranker_file(args.model)
    args.out = args.out or ROOT / "memvec" / "search" / file_name
    args.report = args.report or ROOT / "benchmarks" / "results" / Path(file_name).stem
    embedder = load_embedder(args.model)
    try:
        questions = ranker_data.locomo_questions(args.locomo, embedder)
        ranker = fit(shipped_questions(args, embedder, questions), ranked_models(embedder.model_id))
    except FileNotFoundError as exc:
        print(f"error: {exc}")
        return 2
    ablated = ablation(questions)
    result = {**leave_one_out(questions, ablated[SHIPPED]), "ablation": ablated, "families": list(args.families)}
    args.out.write_text(json.dumps(ranker.to_json(), separators=(",", ":")) + "\n")  # ~150 kB on one line
    write_compiled(args.out, ranker)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.report.with_suffix(".md").write_text(report_markdown(result, ranker))
    print(report_markdown(result, ranker))
    return 0


def write_compiled(ranker_path: Path, ranker: Ranker) -> None:
    """Each tier's compiled trees beside the ranker file (stale ones from older files removed)."""
    for stale in ranker_path.parent.glob(ranker_path.name.removesuffix(".json") + ".*onnx"):
        stale.unlink()
    for tier, graph in compile_ranker(ranker.tiers, len(FEATURES)).items():
        ranker_path.with_name(compiled_name(ranker_path.name, tier)).write_bytes(graph)


if __name__ == "__main__":
    raise SystemExit(main())
