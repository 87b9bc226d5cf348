from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from memvec.types import MAX_TEXT_CHARS, CoreBlock, NewRecord, SearchFilters, Tier, describe_validation_error


def record(**overrides: object) -> NewRecord:
    return NewRecord.model_validate({"agent": "a", "tier": "archival", "text": "hello", **overrides})


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "text is empty"),
        ("   \n ", "text is empty"),
        ("x" * (MAX_TEXT_CHARS + 1), f"the limit is {MAX_TEXT_CHARS}"),
        ("a\x00b", "NUL"),
    ],
)
def test_bad_text_is_rejected_with_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        record(text=text)
    assert message in describe_validation_error(info.value)


@pytest.mark.parametrize(
    "overrides",
    [
        {"agent": "has space"},
        {"agent": "../etc"},
        {"agent": ""},
        {"tier": "core"},
        {"tags": [""]},
        {"tags": ["x" * 65]},
        {"tags": [f"t{i}" for i in range(33)]},
        {"citation": {"session_id": ""}},
        {"citation": {"unknown": "x"}},
        {"surprise": 1},
    ],
)
def test_malformed_records_are_rejected(overrides: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        record(**overrides)


def test_text_is_stripped_tags_deduplicated_and_turn_ids_become_text() -> None:
    rec = record(text="  hi  ", tags=["a", "b", "a"], citation={"turn_id": 7})
    assert rec.text == "hi"
    assert rec.tags == ["a", "b"]
    assert rec.citation.turn_id == "7"


def test_created_at_is_normalized_to_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    rec = record(created_at=datetime(2024, 5, 1, 12, 0, tzinfo=plus_two))
    assert rec.created_at == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    naive = record(created_at=datetime(2024, 5, 1)).created_at
    assert naive is not None and naive.tzinfo is UTC


def test_dedup_key_ignores_case_and_spacing_but_recall_keeps_turns_apart() -> None:
    assert record(text="Hello  World").dedup_key() == record(text="hello world").dedup_key()
    first = record(tier="recall", text="ok", role="user", citation={"turn_id": 1})
    second = record(tier="recall", text="ok", role="user", citation={"turn_id": 2})
    assert first.dedup_key() != second.dedup_key()
    assert first.tier is Tier.RECALL


def test_filter_range_must_be_ordered() -> None:
    with pytest.raises(ValidationError, match="start must not be after end"):
        SearchFilters(start=datetime(2024, 2, 1), end=datetime(2024, 1, 1))


def test_core_block_value_must_fit_its_limit() -> None:
    with pytest.raises(ValidationError, match="limit"):
        CoreBlock(label="human", value="x" * 11, limit=10)
