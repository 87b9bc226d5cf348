"""A LangChain retriever over one agent's archival or recall tier (extra: `memvec[langchain]`).

from memvec import Memory
from memvec.integrations.langchain import MemvecRetriever

retriever = MemvecRetriever(memory=Memory.open("./indexes"), agent="my-app", k=4, min_score=0.2)
# or against a running server: MemvecRetriever(url="http://127.0.0.1:8283", api_key=KEY, agent="my-app")
docs = retriever.invoke("where did we meet?")   # [] when nothing stored is relevant enough
docs[0].metadata["citation"]   # {"session_id": ..., "turn_id": ..., "source_url": ..., "document": ...}

add_documents(memory, "my-app", PyPDFLoader("manual.pdf").load())   # Documents in, as cited chunks
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from memvec.errors import MemvecError
from memvec.integrations.source import (
    HitSource,
    SearchOptions,
    framework_documents,
    hit_metadata,
    hit_origin,
    hit_text,
)
from memvec.memory import Memory
from memvec.types import DocumentReport, Hit, SearchMode, Tier


def add_documents(memory: Memory, agent: str, documents: list[Document]) -> list[DocumentReport | MemvecError]:
    """LangChain `Document`s into the agent's archival memory, each as a document (cut into chunks as
    a file is) whose citation keeps the Document's metadata (`citation.document.metadata`). Named by
    their `source` and `page` metadata: the same ones again add nothing, changed ones replace theirs."""
    items = framework_documents([(d.page_content, d.id, dict(d.metadata)) for d in documents])
    return memory.documents(agent).add_many(items, media_type="text/plain")


class MemvecRetriever(BaseRetriever):
    """Hybrid (BM25 + vector) search of a memvec tier; each `Document` carries its citation.

    Give `memory` (an open `memvec.Memory`) or `url` (+ `api_key`) of a `memvec serve`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    memory: Memory | None = None
    url: str | None = None
    api_key: str | None = None
    timeout: float = 30.0
    agent: str
    tier: Tier = Tier.ARCHIVAL
    k: int = 4
    mode: SearchMode = SearchMode.HYBRID
    tags: list[str] = Field(default_factory=list)
    tag_match: Literal["any", "all"] = "any"
    roles: list[str] = Field(default_factory=list)
    session_id: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    min_score: float | None = Field(
        default=None, description="only hits at least this likely to be relevant (0-1): none may come back"
    )
    fence_untrusted: bool = Field(default=True, description="wrap directive-like text as quoted data")

    def _options(self) -> SearchOptions:
        return SearchOptions(
            agent=self.agent,
            tier=self.tier,
            k=self.k,
            mode=self.mode,
            tags=self.tags,
            tag_match=self.tag_match,
            roles=self.roles,
            session_id=self.session_id,
            start=self.start,
            end=self.end,
            min_score=self.min_score,
        )

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        source = HitSource(memory=self.memory, url=self.url, api_key=self.api_key, timeout=self.timeout)
        hits = source.search(self._options(), query)
        return [
            Document(
                page_content=hit_text(h, fence_untrusted=self.fence_untrusted),
                metadata={**loader_metadata(h), **hit_metadata(h)},
                id=str(h.id),
            )
            for h in hits
        ]


def loader_metadata(hit: Hit) -> dict[str, Any]:
    """`source` and `page` at the top level, as LangChain's loaders set them: the page a Document came in
    with, else PyPDFLoader's (0-based `page`, the printed `page_label`) for a PDF memvec read."""
    given, source, page = hit_origin(hit)
    shown: dict[str, Any] = {"source": source} if source else {}
    if given.get("page") is not None:
        shown["page"] = given["page"]
    elif page is not None:
        shown |= {"page": page - 1, "page_label": str(page)}
    return shown
