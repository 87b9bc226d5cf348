"""Every LoCoMo ranking in every search mode, written to one JSON file, so a refactor that must not
change behaviour can be checked whole: `python -m benchmarks.same_rankings OUT.json` before and after,
then compare the two files (`cmp`). Ids, order, scores and every score part (as repr'd floats) are
recorded, at k=10 and k=100, each question asked at its own time (as `make bench` asks it), so the
period a question names is lifted as the benchmark lifts it."""

from __future__ import annotations

import argparse
import itertools
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import datasets
from benchmarks.datasets import Query
from benchmarks.harness import load_task
from benchmarks.quality import MODES
from memvec import Hit, SearchRequest
from memvec.embed import load_embedder


def rankings(locomo: Path, model: str) -> dict[str, list[list[tuple[str, str]]]]:
    embedder = load_embedder(model)
    out: dict[str, list[list[tuple[str, str]]]] = {}
    samples = datasets.load_locomo(locomo)
    tasks = [datasets.locomo_recall_task(s) for s in samples] + [datasets.locomo_archival_task(s) for s in samples]
    for task in tasks:
        agent = re.sub(r"[^A-Za-z0-9_.-]", "-", task.name)
        with tempfile.TemporaryDirectory() as tmp:
            mem = load_task(Path(tmp), embedder, task, agent)
            for (name, fields), k in itertools.product(MODES.items(), (10, 100)):
                out[f"{task.name} {name} k={k}"] = [
                    [_shown(hit) for hit in mem.search(_request(agent, task.tier, query, k, fields))]
                    for query in task.queries
                ]
            mem.close()
    return out


def _request(agent: str, tier: str, query: Query, k: int, fields: dict[str, Any]) -> SearchRequest:
    asked = {"reference_time": query.asked_at} if query.asked_at else {}
    return SearchRequest.model_validate({"agent": agent, "tier": tier, "query": query.text, "k": k, **asked, **fields})


def _shown(hit: Hit) -> tuple[str, str]:
    parts = hit.scores.model_dump(exclude_none=True)
    return hit.citation.turn_id or "", " ".join(repr(value) for value in [hit.score, *sorted(parts.items())])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--locomo", type=Path, default=datasets.DEFAULT_LOCOMO)
    parser.add_argument("--model", default="onnx-int8:all-MiniLM-L6-v2")
    args = parser.parse_args()
    found = rankings(args.locomo, args.model)
    args.out.write_text(json.dumps(found, sort_keys=True))
    print(f"{sum(len(v) for v in found.values())} rankings written to {args.out}")


if __name__ == "__main__":
    main()
