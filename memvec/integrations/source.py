"""Where a framework retriever's hits come from: an open `Memory`, or a `memvec serve` over HTTP.

The HTTP side uses only the standard library, so a RAG app needs no client package beyond its
framework. Hits come back as memvec's own `Hit` (validated), whichever way they were fetched.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memvec.errors import ServiceCallError
from memvec.guard import fence
from memvec.memory import Memory
from memvec.types import MAX_K, AgentName, Hit, SearchFilters, SearchMode, SearchRequest, Tier

SEARCH_PATHS = {Tier.ARCHIVAL: "archival-memory/search", Tier.RECALL: "recall-memory/search"}


class SearchOptions(BaseModel):
    """What to search and how: one agent's tier, k results, mode and filters."""

    model_config = ConfigDict(extra="forbid")
    agent: AgentName
    tier: Tier = Tier.ARCHIVAL
    k: int = Field(default=4, ge=1, le=MAX_K)
    mode: SearchMode = SearchMode.HYBRID
    tags: list[str] = Field(default_factory=list, description="archival: only passages with these tags")
    tag_match: Literal["any", "all"] = "any"
    roles: list[str] = Field(default_factory=list, description="recall: only messages from these roles")
    session_id: str | None = Field(default=None, description="recall: only this session")
    start: datetime | None = None
    end: datetime | None = None
    min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="only hits whose relevance (a probability of relevance) is at least this: none may come "
        "back, so the app can say it does not know (`Memory.default_min_score` is the calibrated default)",
    )

    def request(self, query: str) -> SearchRequest:
        filters = SearchFilters(
            tags=self.tags,
            tag_match=self.tag_match,
            start=self.start,
            end=self.end,
            session_id=self.session_id,
            roles=self.roles,
        )
        return SearchRequest(
            agent=self.agent,
            tier=self.tier,
            query=query,
            k=self.k,
            mode=self.mode,
            filters=filters,
            min_score=self.min_score,
        )

    def query_params(self, query: str) -> list[tuple[str, str]]:
        params = [("query", query), ("top_k", str(self.k)), ("mode", self.mode.value)]
        if self.tier is Tier.ARCHIVAL:
            params += [("tags", t) for t in self.tags] + [("tag_match_mode", self.tag_match)]
        else:
            params += [("roles", r) for r in self.roles]
            params += [("session_id", self.session_id)] if self.session_id else []
        params += [("start_datetime", self.start.isoformat())] if self.start else []
        params += [("end_datetime", self.end.isoformat())] if self.end else []
        params += [("min_score", str(self.min_score))] if self.min_score is not None else []
        return params


def search_memory(memory: Memory, options: SearchOptions, query: str) -> list[Hit]:
    return memory.search(options.request(query))


def search_service(
    url: str, api_key: str | None, options: SearchOptions, query: str, *, timeout: float = 30.0
) -> list[Hit]:
    """GET /v1/agents/{agent}/{tier}/search on a running `memvec serve`."""
    address = (
        f"{url.rstrip('/')}/v1/agents/{urllib.parse.quote(options.agent)}/{SEARCH_PATHS[options.tier]}?"
        f"{urllib.parse.urlencode(options.query_params(query))}"
    )
    request = urllib.request.Request(address, headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body: Any = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise ServiceCallError(f"memvec service answered {exc.code}: {_detail(exc)}", status=exc.code) from exc
    except (urllib.error.URLError, TimeoutError) as exc:
        raise ServiceCallError(f"memvec service at {url} could not be reached: {exc}") from exc
    return [_as_hit(result, options) for result in body["results"]]


def _as_hit(result: dict[str, Any], options: SearchOptions) -> Hit:
    """A search result of the service (Letta's shape plus memvec's fields) as memvec's own `Hit`."""
    return Hit.model_validate(
        {**result, "id": int(result["id"]), "text": result["content"], "agent": options.agent, "tier": options.tier}
    )


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read()).get("detail"))
    except (ValueError, AttributeError):
        return exc.reason


def framework_documents(items: list[tuple[str, str | None, dict[str, Any]]]) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, text, metadata) for `Documents.add_many` from a framework's documents given as (text, id,
    metadata): named by their `source` (or `file_path`, `file_name`) and `page`, else their id, each
    name once (a second of the same name gets ` (2)`, so two pages never replace each other); the
    metadata made JSON (what is not JSON becomes its text)."""
    named: list[tuple[str, str, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for position, (text, item_id, metadata) in enumerate(items):
        origin = origin_name(metadata)
        name = origin or item_id or f"document {position + 1}"
        if origin and metadata.get("page") is not None:
            name += f" (page {metadata['page']})"
        seen[name] = seen.get(name, 0) + 1
        name += f" ({seen[name]})" if seen[name] > 1 else ""
        named.append((name[:1024], text, json.loads(json.dumps(metadata, default=str))))
    return named


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A hit's provenance as flat-ish metadata: record id, citation, scores, tags, date, role, flag."""
    return {
        "id": hit.id,
        "agent": hit.agent,
        "tier": hit.tier.value,
        "role": hit.role,
        "tags": list(hit.tags),
        "created_at": hit.created_at.isoformat(),
        "untrusted": hit.untrusted,
        "citation": hit.citation.model_dump(exclude_none=True),
        "score": hit.score,
        "scores": hit.scores.model_dump(exclude_none=True),
        "relevance": hit.relevance,
    }


def hit_origin(hit: Hit) -> tuple[dict[str, Any], str | None, int | None]:
    """Where a hit came from, for the metadata keys the frameworks' own loaders set: the metadata a file
    came in with, its name for people (the name it came in with, else folder/file, else the record's
    source URL) and its 1-based page."""
    cited = hit.citation.document
    if cited is None:
        return {}, hit.citation.source_url, None
    given = dict(cited.metadata)
    return given, origin_name(given) or cited.path(), cited.page


def origin_name(metadata: dict[str, Any]) -> str | None:
    """The name a framework's document gives its file: its `source`, `file_path` or `file_name`."""
    return next((str(metadata[k]) for k in ("source", "file_path", "file_name") if metadata.get(k)), None)


def hit_text(hit: Hit, *, fence_untrusted: bool) -> str:
    """The text a prompt gets: directive-like text fenced as quoted data (as the agent loop does)."""
    return fence(hit.text, record_id=hit.id) if fence_untrusted and hit.untrusted else hit.text


class HitSource(BaseModel):
    """Either an open `Memory` or a server URL (+ key): the two places a retriever can search."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)
    memory: Memory | None = None
    url: str | None = None
    api_key: str | None = None
    timeout: float = Field(default=30.0, gt=0)

    def model_post_init(self, _: Any) -> None:
        if (self.memory is None) == (self.url is None):
            raise ValueError("give exactly one of `memory` (an open memvec.Memory) or `url` (a memvec serve)")

    def search(self, options: SearchOptions, query: str) -> list[Hit]:
        if self.memory is not None:
            return search_memory(self.memory, options, query)
        assert self.url is not None
        return search_service(self.url, self.api_key, options, query, timeout=self.timeout)
