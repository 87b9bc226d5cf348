"""`GET /v1/tags`: the tags of the agents the caller can see (Letta's tags listing)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query

from memvec.service.deps import Caller, Service, api_router, visible_settings
from memvec.types import MAX_TAG_CHARS

router = api_router()


@router.get("/v1/tags", response_model=list[str], tags=["agents"])
def list_tags(
    principal: Caller,
    service: Service,
    after: Annotated[str | None, Query(max_length=MAX_TAG_CHARS, description="cursor: tags after this one")] = None,
    before: Annotated[str | None, Query(max_length=MAX_TAG_CHARS, description="cursor: tags before this one")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    name: Annotated[str | None, Query(max_length=MAX_TAG_CHARS, description="only this tag")] = None,
    query_text: Annotated[str | None, Query(max_length=MAX_TAG_CHARS, description="tags containing this")] = None,
    order: Literal["asc", "desc"] = "asc",
    order_by: Literal["name"] = "name",
) -> list[str]:
    """Every tag of an agent the caller can see, once, in name order (`after` / `before` take a tag)."""
    found = {tag for settings in visible_settings(principal, service) for tag in settings.tags}
    wanted = sorted(
        (t for t in found if name in (None, t) and (query_text is None or query_text.lower() in t.lower())),
        reverse=order == "desc",
    )
    if after is not None:
        wanted = [t for t in wanted if (t < after if order == "desc" else t > after)]
    if before is not None:
        wanted = [t for t in wanted if (t > before if order == "desc" else t < before)]
    return wanted[:limit]
