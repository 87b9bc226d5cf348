"""A LlamaIndex retriever over one agent's archival or recall tier (extra: `memvec[llamaindex]`).

from memvec import Memory
from memvec.integrations.llamaindex import MemvecRetriever

retriever = MemvecRetriever(memory=Memory.open("./indexes"), agent="my-app", k=4, min_score=0.2)
# or against a running server: MemvecRetriever(url="http://127.0.0.1:8283", api_key=KEY, agent="my-app")
for found in retriever.retrieve("where did we meet?"):
    print(found.score, found.node.metadata["citation"], found.node.get_content())  # score: the relevance

add_nodes(memory, "my-app", SimpleDirectoryReader("docs").load_data())   # nodes in, as cited chunks
"""

from __future__ import annotations

from typing import Any

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle, TextNode

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
from memvec.types import DocumentReport, Hit


def add_nodes(memory: Memory, agent: str, nodes: list[BaseNode]) -> list[DocumentReport | MemvecError]:
    """LlamaIndex documents or nodes into the agent's archival memory, each as a document (cut into
    chunks as a file is) whose citation keeps the node's metadata (`citation.document.metadata`);
    named by their `file_path`/`file_name` and `page` metadata, else their id."""
    items = framework_documents(
        [(n.get_content(metadata_mode=MetadataMode.NONE), n.node_id, dict(n.metadata)) for n in nodes]
    )
    return memory.documents(agent).add_many(items, media_type="text/plain")


# shown to the LLM with the text; the rest of the metadata stays for the app (and the embedder)
_LLM_METADATA = {"citation", "created_at", "role", "untrusted", "file_name", "page_label", "source"}


class MemvecRetriever(BaseRetriever):
    """Hybrid (BM25 + vector) search of a memvec tier; each node carries its citation.

    Give `memory` (an open `memvec.Memory`) or `url` (+ `api_key`) of a `memvec serve`; the other
    keywords are `SearchOptions` (agent, tier, k, mode, tags, tag_match, roles, session_id, start, end,
    min_score). A node's score is the hit's relevance (a probability, so LlamaIndex's similarity
    cutoffs mean the same on every query), its rank score where there is none (bm25 mode)."""

    def __init__(
        self,
        *,
        memory: Memory | None = None,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        fence_untrusted: bool = True,
        **options: Any,
    ) -> None:
        self.source = HitSource(memory=memory, url=url, api_key=api_key, timeout=timeout)
        self.options = SearchOptions.model_validate(options)
        self.fence_untrusted = fence_untrusted
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = []
        for hit in self.source.search(self.options, query_bundle.query_str):
            metadata = {**reader_metadata(hit), **hit_metadata(hit)}
            text = hit_text(hit, fence_untrusted=self.fence_untrusted)
            node = TextNode(
                id_=f"memvec:{hit.agent}:{hit.id}",
                text=text,
                metadata=metadata,
                excluded_llm_metadata_keys=[k for k in metadata if k not in _LLM_METADATA],
                excluded_embed_metadata_keys=list(metadata),
            )
            found.append(NodeWithScore(node=node, score=hit.score if hit.relevance is None else hit.relevance))
        return found


def reader_metadata(hit: Hit) -> dict[str, Any]:
    """`file_name`, `file_path` and `page_label` at the top level, as LlamaIndex's readers set them (the
    ones a node came in with first), and `source` for a record cited by its URL."""
    given, source, page = hit_origin(hit)
    cited = hit.citation.document
    if cited is None:
        return {"source": source} if source else {}
    shown: dict[str, Any] = {"file_name": str(given.get("file_name") or cited.file_name)}
    if given.get("file_path"):
        shown["file_path"] = str(given["file_path"])
    label = given.get("page_label") or (str(page) if page is not None else None)
    return shown | ({"page_label": str(label)} if label else {})
