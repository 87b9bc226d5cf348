"""Near-duplicate merging on LoCoMo observations: does the default merge what it should and nothing else?

Every observation of a conversation is inserted as an archival passage (distinct facts: a merge here
is a false one). Then, for every third observation, two variants are inserted:
- a **repeat** that should merge: lower-cased without its final stop, a filler word added, or a
  one-letter typo in a long word;
- a **changed fact** that must not: a name swapped for another of the conversation, a number
  changed, or a negation added ("is" -> "is not").
Precision: merges that were repeats / all merges (load included); recall: repeats merged / repeats.
Through `Memory.insert` with each cosine threshold, lexical check on; and, for comparison, what the
cosine alone (variant to its own observation) would merge at that threshold.
"""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.datasets import locomo_archival_task
from memvec import Memory, NewRecord, Tier
from memvec.config import DedupSettings
from memvec.embed import Embedder
from memvec.index.tokenize import STOPWORDS

THRESHOLDS = (0.80, 0.85, 0.90, 0.93, 0.95, 0.97)
MIN_PRECISION = 0.99  # the rule a threshold is chosen by: the best recall at this precision or above
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
_NUMBER = re.compile(r"\b\d+\b")
_COPULA = re.compile(r"\b(is|was|has|had|can|will)\b")


def repeat(text: str, rng: random.Random) -> str:
    """The same fact, written a little differently."""
    kind = rng.randrange(3)
    if kind == 0:
        return text.lower().rstrip(".")
    words = text.split()
    if kind == 1 and len(words) > 2:
        return " ".join([words[0], "also", *words[1:]])
    long = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
    if not long:
        return text.lower().rstrip(".")
    i = rng.choice(long)
    word = words[i]
    at = rng.randrange(1, len(word) - 2)
    words[i] = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    return " ".join(words)


def changed(text: str, names: list[str], rng: random.Random) -> str | None:
    """The fact with one detail changed (None: nothing to change)."""
    if numbers := _NUMBER.findall(text):
        old = rng.choice(numbers)
        return re.sub(rf"\b{old}\b", str(int(old) + rng.randint(1, 9)), text, count=1)
    present = [n for n in _NAME.findall(text)[1:] if n in names]
    others = [n for n in names if n not in text]
    if present and others:
        return text.replace(rng.choice(present), rng.choice(others), 1)
    if _COPULA.search(text):
        return _COPULA.sub(lambda m: f"{m.group(1)} not", text, count=1)
    return None


def variants(texts: list[str], seed: int) -> list[tuple[int, str, bool]]:
    """(index of the observation, variant text, should merge) for every third observation."""
    rng = random.Random(seed)
    names = sorted({n for t in texts for n in _NAME.findall(t)[:1] if n.casefold() not in STOPWORDS})
    out = []
    for i in range(0, len(texts), 3):
        out.append((i, repeat(texts[i], rng), True))
        if (other := changed(texts[i], names, rng)) is not None:
            out.append((i, other, False))
    return out


def _through_memvec(
    embedder: Embedder, agent: str, texts: list[str], tried: list[tuple[int, str, bool]], threshold: float
) -> dict[str, Any]:
    counts: dict[str, Any] = {"load_merges": 0, "true_merges": 0, "false_merges": 0, "repeats": 0, "examples": []}
    with (
        tempfile.TemporaryDirectory() as tmp,
        Memory.open(Path(tmp) / "home", embedder=embedder, dedup=DedupSettings(near_cosine=threshold)) as mem,
    ):
        loaded = mem.insert([NewRecord(agent=agent, tier=Tier.ARCHIVAL, text=t) for t in texts])
        counts["load_merges"] = sum(1 for r in loaded if r.duplicate_of is not None)
        for index, text, should in tried:
            result = mem.insert([NewRecord(agent=agent, tier=Tier.ARCHIVAL, text=text)])[0]
            merged = result.duplicate_of is not None
            right = merged and result.duplicate_of == loaded[index].record.id
            counts["repeats"] += int(should)
            counts["true_merges"] += int(should and right)
            if merged and not (should and right):
                counts["false_merges"] += 1
                counts["examples"].append([text, result.record.text])
    return counts


def _rates(counts: dict[str, Any]) -> dict[str, float]:
    true, false = counts["true_merges"], counts["false_merges"] + counts["load_merges"]
    merges = true + false
    return {
        "precision": true / merges if merges else 1.0,
        "recall": true / counts["repeats"] if counts["repeats"] else 0.0,
    }


def _pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    pooled = {key: sum(run[key] for run in runs) for key in ("load_merges", "true_merges", "false_merges", "repeats")}
    return {**pooled, **_rates(pooled), "examples": [e for run in runs for e in run["examples"]][:5]}


def choose(per_conversation: list[dict[float, dict[str, Any]]]) -> float:
    """The threshold with the best pooled recall at MIN_PRECISION or above (ties: the higher one)."""
    rates = {t: _pooled([conv[t] for conv in per_conversation]) for t in THRESHOLDS}
    fit = [t for t in THRESHOLDS if rates[t]["precision"] >= MIN_PRECISION] or [max(THRESHOLDS)]
    return max(fit, key=lambda t: (rates[t]["recall"], t))


def run(samples: list[dict[str, Any]], embedder: Embedder, seed: int = 11) -> dict[str, Any]:
    """Precision/recall of merging per threshold (through memvec; and by the cosine alone), and the
    threshold chosen leave-one-conversation-out: each conversation judged with the one chosen on the others."""
    per_conversation: list[dict[float, dict[str, Any]]] = []
    cosine_alone: dict[float, dict[str, int]] = {t: {"true_merges": 0, "false_merges": 0} for t in THRESHOLDS}
    repeats = changes = 0
    for n, sample in enumerate(samples):
        texts = list(dict.fromkeys(d.text for d in locomo_archival_task(sample).docs))
        tried = variants(texts, seed + n)
        repeats += sum(1 for _, _, should in tried if should)
        changes += sum(1 for _, _, should in tried if not should)
        per_conversation.append({t: _through_memvec(embedder, f"conv-{n}", texts, tried, t) for t in THRESHOLDS})
        originals = embedder.embed_documents([texts[i] for i, _, _ in tried])
        cosines = np.sum(originals * embedder.embed_documents([t for _, t, _ in tried]), axis=1)
        for threshold in THRESHOLDS:
            for (_, _, should), cosine in zip(tried, cosines.tolist(), strict=True):
                if cosine >= threshold:
                    cosine_alone[threshold]["true_merges" if should else "false_merges"] += 1
    held_out, chosen = [], []
    for n in range(len(per_conversation)):
        threshold = choose(per_conversation[:n] + per_conversation[n + 1 :])
        chosen.append(threshold)
        held_out.append(per_conversation[n][threshold])
    return {
        "observations": sum(len(locomo_archival_task(s).docs) for s in samples),
        "repeats": repeats,
        "changed": changes,
        "default": DedupSettings().near_cosine,
        "chosen_on_all": choose(per_conversation),
        "memvec": {str(t): _pooled([conv[t] for conv in per_conversation]) for t in THRESHOLDS},
        "cosine_alone": {
            str(t): {**c, **_rates({**c, "load_merges": 0, "repeats": repeats})} for t, c in cosine_alone.items()
        },
        "leave_one_out": {**_pooled(held_out), "chosen": chosen},
    }
