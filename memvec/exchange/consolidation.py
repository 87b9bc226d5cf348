"""Sleep-time consolidation as data: what a model proposes (`ConsolidationProposal`, parsed from its
JSON answer) and what a run did (`ConsolidationRun`, the reviewable diff an undo reverts)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from memvec.types import LABEL_PATTERN, MAX_ID, MAX_META_CHARS, MAX_TEXT_CHARS, MetaText, Utf8Text


class ProposedFact(BaseModel):
    """A fact a consolidation model proposes, citing the recall messages it comes from."""

    model_config = ConfigDict(extra="forbid")

    text: MetaText
    sources: list[Annotated[int, Field(ge=1, le=MAX_ID)]] = Field(min_length=1, max_length=50)
    supersedes: int | None = Field(
        default=None, ge=1, le=MAX_ID, description="a current archival passage this fact contradicts and replaces"
    )
    reason: Utf8Text = Field(default="", max_length=MAX_META_CHARS)


class ProposedBlock(BaseModel):
    """A whole new value for a core block, proposed by a consolidation model."""

    model_config = ConfigDict(extra="forbid")

    label: Annotated[str, StringConstraints(pattern=LABEL_PATTERN)]
    value: Utf8Text = Field(max_length=MAX_TEXT_CHARS)
    reason: Utf8Text = Field(default="", max_length=MAX_META_CHARS)


class ConsolidationProposal(BaseModel):
    """What a consolidation model answers (JSON): facts to write and block rewrites."""

    model_config = ConfigDict(extra="forbid")

    facts: list[ProposedFact] = Field(default_factory=list, max_length=100)
    blocks: list[ProposedBlock] = Field(default_factory=list, max_length=20)


class ConsolidatedFact(BaseModel):
    id: int = Field(description="the archival passage written (or, not created, the one it repeated)")
    text: str
    sources: list[int] = Field(description="recall message ids it came from")
    supersedes: int | None = None
    previous_valid_to: datetime | None = Field(
        default=None, description="the superseded version's valid_to before the run (undo restores it)"
    )
    created: bool = True
    reason: str = ""


class ConsolidatedBlock(BaseModel):
    label: str
    seq: int = Field(description="the block_history change it made")
    old: str
    new: str
    reason: str = ""


class ConsolidationRun(BaseModel):
    """One consolidation run as a reviewable diff: what it added, superseded and edited, and why."""

    id: int
    agent: str
    model: str
    started_at: datetime
    through_message: int | None = Field(description="the last recall message it read; the next run starts after")
    facts: list[ConsolidatedFact] = Field(default_factory=list)
    blocks: list[ConsolidatedBlock] = Field(default_factory=list)
    undone_at: datetime | None = None
