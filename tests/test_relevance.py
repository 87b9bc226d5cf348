"""A relevance every hit carries, whatever the other hits score, and `min_score` on every surface."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.errors import InvalidInputError
from memvec.index.lexical import BM25Index
from memvec.integrations.langchain import MemvecRetriever as LangChainRetriever
from memvec.integrations.llamaindex import MemvecRetriever as LlamaIndexRetriever
from memvec.mcp_server.server import build_server
from memvec.search.hybrid import coverage
from memvec.search.relevance import Calibration, shipped_calibration
from memvec.types import SearchRequest, Tier
from tests.conftest import run_cli
from tests.service_helpers import Server
from tests.test_mcp import call, run_client

REAL_MODEL = "onnx-int8:all-MiniLM-L6-v2"
MANUAL = [
    "The pump P-200 must be primed with water before its first start; running it dry ruins the seal.",
    "Replace the P-200 shaft seal every 4,000 operating hours, or sooner when it drips.",
    "The warranty covers the pump for two years from the date of purchase, parts and labour.",
    "Error E4 on the P-200 display means the inlet pressure is below 0.5 bar: open the inlet valve.",
]
ASKED = "how often should the shaft seal of the pump be replaced?"
UNRELATED = "recipe for banana bread with walnuts"


def fill(mem: Memory, agent: str = "kb") -> None:
    for text in MANUAL:
        mem.archival(agent).insert(text, source_url="https://example.com/p200")


# -- the parts ------------------------------------------------------------------------------------
def test_coverage_is_the_share_of_the_query_a_record_could_score() -> None:
    index = BM25Index()
    index.add([1, 2, 3], ["red apples and green pears", "green tea", "a blue car"])
    both = index.query_scores("green apples")
    scores = index.scores_for(both, [1, 2, 3])
    shares = coverage(scores, both)
    assert 0 < shares[1] < shares[0] < 1 and shares[2] == 0, "apples is rarer than green: worth more"
    absent = index.query_scores("zebra")
    assert absent.ceiling > 0 and len(absent) == 0, "a word no record holds still counts in the ceiling"
    half = coverage(index.scores_for(index.query_scores("green zebra"), [2]), index.query_scores("green zebra"))
    alone = coverage(index.scores_for(index.query_scores("green"), [2]), index.query_scores("green"))
    assert half[0] < alone[0], "a query word the record lacks lowers its coverage"


def test_a_calibration_reads_and_writes_its_file() -> None:
    calibration = Calibration(
        ("m",), ("vector", "sqrt_coverage", "known", "log_length"), (-4.0, 6.0, 3.0, 1.0, -0.5), 0.1
    )
    again = Calibration.from_json(json.loads(json.dumps(calibration.to_json())))
    assert again == calibration
    logit = -4.0 + 5.4 + 3.0 * np.sqrt(0.8) + 0.5 - 0.5 * np.log(1 + 20)
    assert again.probability([0.0, 0.9], [0.0, 0.8], 0.5, [0, 20]).tolist() == pytest.approx(
        [1 / (1 + np.exp(-(-4.0 + 0.5))), 1 / (1 + np.exp(-logit))]
    )
    with pytest.raises(ValueError, match="one weight per input"):
        Calibration.from_json({**calibration.to_json(), "weights": [1.0]})
    with pytest.raises(ValueError, match="does not know"):
        Calibration.from_json({**calibration.to_json(), "inputs": ["vector", "mood"]})


def test_the_default_model_ships_a_calibration() -> None:
    calibration = shipped_calibration(REAL_MODEL)
    assert calibration is not None and 0 < calibration.min_score < 1
    assert shipped_calibration("hash:64") is None


def test_min_score_needs_a_mode_that_reads_vectors(memory: Memory) -> None:
    with pytest.raises(ValueError, match="min_score needs mode hybrid or vector"):
        SearchRequest(agent="kb", tier=Tier.ARCHIVAL, query="x", mode="bm25", min_score=0.2)
    memory.archival("kb").insert("a note")
    with pytest.raises(InvalidInputError, match="no relevance calibration for the model 'hash:64'"):
        memory.archival("kb").search("note", min_score=0.2)
    assert memory.default_min_score is None
    assert memory.archival("kb").search("note")[0].relevance is None, "no calibration: no relevance"


@pytest.fixture
def calibrated(home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fast home whose hashing model has a calibration: relevance is the BM25 coverage, squashed."""
    fitted = Calibration(("hash:64",), ("coverage",), (-3.0, 10.0), 0.5)
    monkeypatch.setattr("memvec.memory.door.shipped_calibration", lambda model: fitted if model == "hash:64" else None)
    mem = Memory.open(home, embedder=HashingEmbedder(64))
    yield mem
    mem.close()


def test_min_score_drops_the_hits_below_it_on_every_path(calibrated: Memory) -> None:
    archival = calibrated.archival("kb")
    for text in ("red apples and green pears", "green tea leaves", "a blue car in the garage"):
        archival.insert(text)
    assert calibrated.default_min_score == 0.5
    every = archival.search("green apples", k=3)
    relevance = [h.relevance if h.relevance is not None else -1.0 for h in every]
    assert min(relevance) >= 0 and max(relevance) > 0.5 > min(relevance), "some pass, some do not"
    kept = archival.search("green apples", k=3, min_score=0.5)
    assert [h.id for h in kept] == [h.id for h in every if (h.relevance or 0) >= 0.5]
    assert archival.search("green apples", k=3, min_score=1.0) == []
    per_document = archival.search("green apples", k=3, per_document=True, min_score=0.5)
    assert [h.id for h in per_document] == [h.id for h in kept]
    dated = archival.search("green apples yesterday", k=3)  # a period in the query: two rankings merged
    assert all(h.relevance is not None for h in dated)


# -- the real model -------------------------------------------------------------------------------
@pytest.mark.slow
def test_relevance_does_not_depend_on_the_other_hits(real_memory: Memory) -> None:
    fill(real_memory)
    archival = real_memory.archival("kb")
    alone = archival.search(ASKED, k=1)[0]
    among = {h.id: h for h in archival.search(ASKED, k=4)}
    assert among[alone.id].relevance == pytest.approx(alone.relevance)
    assert alone.text == MANUAL[1] and alone.relevance is not None
    assert alone.relevance >= (real_memory.default_min_score or 1.0), "the answer passes the default"
    unrelated = archival.search(UNRELATED, k=4)
    assert unrelated[0].score >= 0.5, "a fused score is scaled over the query's candidates: high for noise too"
    assert all(h.relevance is not None and h.relevance < (real_memory.default_min_score or 0) for h in unrelated)
    vector = archival.search(ASKED, k=1, mode="vector")[0]
    assert vector.id == alone.id and vector.relevance == pytest.approx(alone.relevance, abs=1e-6)
    assert archival.search(ASKED, k=1, mode="bm25")[0].relevance is None


@pytest.mark.slow
def test_min_score_on_python_tools_and_retrievers(real_memory: Memory) -> None:
    fill(real_memory)
    threshold = real_memory.default_min_score
    assert threshold is not None
    archival = real_memory.archival("kb")
    kept = archival.search(ASKED, k=4, min_score=threshold)
    assert kept and kept[0].text == MANUAL[1] and all((h.relevance or 0) >= threshold for h in kept)
    assert archival.search(UNRELATED, k=4, min_score=threshold) == []
    assert len(archival.search(UNRELATED, k=4, min_score=0.0)) == 4, "0 keeps everything"

    async def session(client: Any) -> list[Any]:
        asked: list[dict[str, Any]] = [{"query": UNRELATED}, {"query": ASKED}, {"query": UNRELATED, "min_score": 0}]
        return [json.loads((await call(client, "archival_memory_search", **args))[1]) for args in asked]

    nothing, found, forced = run_client(build_server(real_memory, "kb"), session)
    assert nothing["count"] == 0 and "No relevant memory" in nothing["message"], "the tool uses the default"
    assert found["results"][0]["text"] == MANUAL[1] and found["results"][0]["relevance"] >= threshold
    assert forced["count"] > 0, "the model may ask for the best matches whatever they are"
    assert LangChainRetriever(memory=real_memory, agent="kb", min_score=threshold).invoke(UNRELATED) == []
    docs = LangChainRetriever(memory=real_memory, agent="kb", min_score=threshold).invoke(ASKED)
    assert docs[0].page_content == MANUAL[1] and docs[0].metadata["relevance"] >= threshold
    nodes = LlamaIndexRetriever(memory=real_memory, agent="kb", min_score=threshold).retrieve(ASKED)
    assert nodes[0].score == pytest.approx(nodes[0].node.metadata["relevance"]), "a node's score is its relevance"
    assert LlamaIndexRetriever(memory=real_memory, agent="kb", min_score=threshold).retrieve(UNRELATED) == []


@pytest.mark.slow
def test_min_score_through_the_cli_and_the_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, model=REAL_MODEL) as mem:
        # searched first, its one passage shares words with ASKED: its score is 1.0 there, as the seal's is in kb
        mem.archival("aaa").insert("The cafeteria menu is replaced every week; soup is served often.")
        fill(mem)
        threshold = mem.default_min_score
    empty = run_cli(
        "search", UNRELATED, "--agent", "kb", "--tier", "archival", "--min-score", str(threshold), home=home
    )
    assert empty.stdout.strip() == f"no relevant memory (no hit reached --min-score {threshold})"
    found = run_cli("search", ASKED, "--agent", "kb", "--tier", "archival", "--min-score", str(threshold), home=home)
    assert "relevance=" in found.stdout.splitlines()[0] and "shaft seal" in found.stdout
    refused = run_cli(
        "search",
        ASKED,
        "--agent",
        "kb",
        "--tier",
        "archival",
        "--mode",
        "bm25",
        "--min-score",
        "0.1",
        home=home,
        check=False,
    )
    assert refused.returncode != 0 and "min_score needs mode hybrid or vector" in refused.stderr
    srv = Server(home, model=REAL_MODEL, keys="admin-key-1").start()
    try:
        _check_server(srv.url, {"Authorization": "Bearer admin-key-1"}, threshold)
    finally:
        srv.stop()


def _check_server(url: str, headers: dict[str, str], threshold: Any) -> None:
    search = f"{url}/v1/agents/kb/archival-memory/search"
    none = httpx.get(search, params={"query": UNRELATED, "min_score": threshold}, headers=headers)
    assert none.status_code == 200 and none.json() == {"count": 0, "results": []}
    some = httpx.get(search, params={"query": ASKED, "min_score": threshold}, headers=headers).json()
    assert some["results"][0]["content"] == MANUAL[1] and some["results"][0]["relevance"] >= threshold
    bad = httpx.get(search, params={"query": ASKED, "min_score": 2}, headers=headers)
    assert bad.status_code == 422
    merged = httpx.post(f"{url}/v1/passages/search", json={"query": UNRELATED, "min_score": threshold}, headers=headers)
    assert merged.status_code == 200 and merged.json() == []
    both = httpx.post(f"{url}/v1/passages/search", json={"query": ASKED, "limit": 2}, headers=headers).json()
    assert [hit["passage"]["text"] for hit in both][:1] == [MANUAL[1]], "agents merged by relevance, not score"
    assert both[0]["relevance"] > both[1]["relevance"]
