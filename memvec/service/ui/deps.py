"""What the browser's page modules share: the viewer of a page, the agent it may see, paging."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, TypeVar

from fastapi import Depends, Form, Query, Request

from memvec.service.deps import AgentId, Service, ServiceState, in_scope, visible_agent
from memvec.service.ui.session import Viewer, viewer_of
from memvec.types import AgentSettings, AgentState

PAGE_SIZE = 50
Item = TypeVar("Item")


def page_viewer(request: Request, service: Service) -> Viewer:
    return viewer_of(request, service.keys, service.memory.session_revoked)


PageViewer = Annotated[Viewer, Depends(page_viewer)]


def page_agent(agent_id: AgentId, viewer: PageViewer) -> str:
    """The `{agent_id}` of a page's path, once the viewer's key may see it (404 otherwise)."""
    in_scope(agent_id, viewer.principal)
    return agent_id


PageAgent = Annotated[str, Depends(page_agent)]
PageNumber = Annotated[int, Query(ge=1, le=1_000_000, description="1-based page number")]
# every form that changes something posts it; checked first by session.check_csrf (403 without it)
CsrfField = Annotated[str | None, Form(max_length=128)]


def seen_agent(agent_id: str, viewer: Viewer, service: ServiceState) -> tuple[AgentSettings, AgentState]:
    """The agent, or 404 when it does not exist or the viewer's key may not see it (as the API)."""
    return visible_agent(agent_id, viewer.principal, service)


@dataclass(frozen=True)
class Paging:
    """Page `number` of a listing `size` items at a time; `has_next` from one item fetched beyond."""

    number: int
    size: int = PAGE_SIZE
    has_next: bool = False

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.size

    @property
    def fetch(self) -> int:
        return self.size + 1

    def trimmed(self, items: list[Item]) -> tuple[list[Item], Paging]:
        return items[: self.size], Paging(self.number, self.size, has_next=len(items) > self.size)
