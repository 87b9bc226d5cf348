"""The memory tools' arguments: pydantic models whose fields, limits and descriptions are the
schema a model sees."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from memvec.types import MAX_ID, MAX_TAGS, MAX_TEXT_CHARS, IdText, MetaText, Tag

Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)]
Label = Annotated[str, Field(min_length=1, max_length=64, description="Core memory block, e.g. 'human' or 'persona'.")]
Tags = Annotated[
    list[Tag] | None, Field(max_length=MAX_TAGS, description="Labels to file the passage under or filter by.")
]
Day = Annotated[date | datetime | None, Field(description="ISO date (whole day) or datetime, inclusive.")]
Query = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="What to look for, in words.")]
SessionId = Annotated[IdText | None, Field(description="Conversation/session the turn belongs to.")]
Count = Annotated[int, Field(ge=1, le=50, description="How many results.")]
MinScore = Annotated[
    float | None,
    Field(
        ge=0.0,
        le=1.0,
        description="Only results at least this likely to be relevant (0-1). Leave it out for the calibrated "
        "default, below which a result is noise; 0 returns the best matches whatever they are.",
    ),
]
OldText = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="Exact text to replace.")]
NewText = Annotated[str, Field(max_length=MAX_TEXT_CHARS, description="Replacement (may be empty).")]


class ToolArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CoreReadArgs(ToolArguments):
    pass


class CoreAppendArgs(ToolArguments):
    label: Label
    content: Text


class CoreReplaceArgs(ToolArguments):
    label: Label
    old_content: OldText
    new_content: NewText


# Letta's block tools once named their text arguments old_str/new_str, now old_string/new_string:
# both are taken (the schema a model sees shows the first)
NEW_STR = AliasChoices("new_str", "new_string")
OLD_STR = AliasChoices("old_str", "old_string")


class MemoryInsertArgs(ToolArguments):
    label: Label
    new_str: Text = Field(validation_alias=NEW_STR)
    insert_line: Annotated[
        int, Field(ge=-1, le=10_000, description="Line to insert before (0 = first); -1 = after the last line.")
    ] = -1


class MemoryReplaceArgs(ToolArguments):  # Letta's names for core_memory_replace's arguments
    label: Label
    old_str: OldText = Field(validation_alias=OLD_STR)
    new_str: NewText = Field(validation_alias=NEW_STR)


class MemoryRethinkArgs(ToolArguments):
    label: Label
    new_memory: Annotated[str, Field(max_length=MAX_TEXT_CHARS, description="The block's whole new value.")]


class ArchivalInsertArgs(ToolArguments):
    content: Text
    tags: Tags = None
    source_url: Annotated[MetaText | None, Field(description="Where the passage came from (cited with it).")] = None
    session_id: SessionId = None


class ArchivalUpdateArgs(ToolArguments):
    id: Annotated[int, Field(ge=1, le=MAX_ID, description="The passage id, as a search returned it.")]
    content: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="The passage's new text.")]
    valid_from: Annotated[
        date | datetime | None, Field(description="Since when the new text holds (ISO date or datetime; default now).")
    ] = None


TagMatch = Annotated[
    Literal["any", "all"],
    Field(description="'any': passages with any of the tags; 'all': only passages with every tag."),
]


class ArchivalSearchArgs(ToolArguments):  # Letta's argument names: start_datetime, end_datetime, tag_match_mode
    query: Query
    top_k: Count = 5
    tags: Tags = None
    tag_match_mode: TagMatch = "any"
    start_datetime: Day = None
    end_datetime: Day = None
    as_of: Annotated[
        date | datetime | None,
        Field(description="What held at this date (ISO date: its end), old versions included; default: current."),
    ] = None
    min_score: MinScore = None


class ConversationSearchArgs(ToolArguments):  # Letta's names; without a query, the newest messages the filters allow
    query: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=MAX_TEXT_CHARS,
            description=(
                "What to look for, in words; leave it out to list the newest messages in the date range or roles."
            ),
        ),
    ] = None
    roles: Annotated[list[str] | None, Field(max_length=16, description="Only these roles, e.g. ['user'].")] = None
    start_date: Day = None
    end_date: Day = None
    session_id: SessionId = None
    limit: Count = 5
    min_score: MinScore = None
    spread_sessions: Annotated[
        bool | None,
        Field(
            description=(
                "Pick the first results from as many past conversations as earn a place: for a question about "
                "several conversations, where one would otherwise fill the list. Left out: done when the query "
                "asks for a count or a total ('how many', 'how much', 'in total')."
            )
        ),
    ] = None


class ArchivalListArgs(ToolArguments):
    limit: Count = 10
    offset: Annotated[int, Field(ge=0, le=100_000, description="How many of the newest passages to skip.")] = 0
    tags: Tags = None


class ArchivalDeleteArgs(ToolArguments):
    id: Annotated[int, Field(ge=1, le=MAX_ID, description="The passage id, as a search or list returned it.")]


class ForgetArgs(ToolArguments):  # at least one criterion: forgetting everything is deleting the agent
    tier: Annotated[Literal["archival", "recall"] | None, Field(description="Only this tier (default: both).")] = None
    tags: Tags = None
    tag_match_mode: TagMatch = "any"
    start_datetime: Day = None
    end_datetime: Day = None
    session_id: SessionId = None


class ConversationRecordArgs(ToolArguments):
    role: Annotated[str, Field(min_length=1, max_length=64, description="Who said it: user, assistant, ...")]
    content: Text
    session_id: SessionId = None
    turn_id: Annotated[IdText | None, Field(description="Position of the message in its session.")] = None
