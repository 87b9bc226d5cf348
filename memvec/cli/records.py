"""Records from the command line: add, ingest, search, list and delete."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from memvec.cli.common import TIER, TIMESTAMP, Context, dump, existing_agent, input_lines, print_json
from memvec.errors import InvalidInputError
from memvec.limits import JSONLimitError, load_json
from memvec.types import (
    Fusion,
    Hit,
    NewRecord,
    SearchFilters,
    SearchMode,
    SearchRequest,
    Tier,
    describe_validation_error,
)

INGEST_BATCH = 256
_INGEST_FIELDS = {"text", "role", "session_id", "turn_id", "source_url", "tags", "created_at"}

MODE = click.Choice([m.value for m in SearchMode])


def _citation(session: str | None, turn: str | None, source: str | None) -> dict[str, str | None]:
    return {"session_id": session, "turn_id": turn, "source_url": source}


@click.command()
@click.argument("text")
@click.option("--agent", required=True, help="Agent (namespace) the record belongs to.")
@click.option("--tier", type=TIER, required=True)
@click.option("--role", help="Speaker/role of a recall message (user, assistant, a name...).")
@click.option("--session", help="Citation: session id.")
@click.option("--turn", help="Citation: turn id within the session.")
@click.option("--source", help="Citation: source URL.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--created-at", type=TIMESTAMP, help="When it was said/written (default: now, UTC).")
@click.option("--expires-at", type=TIMESTAMP, help="From then on (UTC) it is never returned and is purged.")
@click.option("--valid-from", type=TIMESTAMP, help="Event time: since when it holds (default: --created-at).")
@click.option("--valid-to", type=TIMESTAMP, help="Event time: until when it holds (default: open).")
@click.option("--supersedes", type=int, help="Id of the current version this record replaces (see `memvec update`).")
@click.option("--json", "as_json", is_flag=True, help="Print the stored record as JSON.")
@click.pass_obj
def add(
    obj: Context,
    text: str,
    agent: str,
    tier: str,
    role: str | None,
    session: str | None,
    turn: str | None,
    source: str | None,
    tags: tuple[str, ...],
    created_at: datetime | None,
    expires_at: datetime | None,
    valid_from: datetime | None,
    valid_to: datetime | None,
    supersedes: int | None,
    as_json: bool,
) -> None:
    """Add one record (archival passage or recall message)."""
    record = NewRecord.model_validate(
        {
            "agent": agent,
            "tier": tier,
            "text": text,
            "role": role,
            "tags": list(tags),
            "created_at": created_at,
            "expires_at": expires_at,
            "valid_from": valid_from,
            "valid_to": valid_to,
            "supersedes": supersedes,
            "citation": _citation(session, turn, source),
        }
    )
    with obj.open() as mem:
        result = mem.insert([record])[0]
    if as_json:
        print_json({**dump(result.record), "created": result.created})
    else:
        click.echo(f"{'added' if result.created else 'duplicate of'} record {result.record.id}")


def _jsonl_objects(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for each non-blank line; a line that is not UTF-8 JSON (with
    bounded nesting) is an input error naming the file and line."""
    for number, raw in enumerate(input_lines(path), start=1):
        if not raw.strip():
            continue
        try:
            yield number, load_json(raw, what="the line")
        except JSONLimitError as exc:
            raise InvalidInputError(f"{path}:{number}: {exc}") from exc


def _ingest_record(data: Any, agent: str, tier: str, role: str | None) -> NewRecord:
    if not isinstance(data, dict):
        raise ValueError("each line must be a JSON object")
    unknown = set(data) - _INGEST_FIELDS
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}; allowed: {sorted(_INGEST_FIELDS)}")
    return NewRecord.model_validate(
        {
            "agent": agent,
            "tier": tier,
            "text": data.get("text"),
            "role": data.get("role", role),
            "tags": data.get("tags", []),
            "created_at": data.get("created_at"),
            "citation": _citation(data.get("session_id"), data.get("turn_id"), data.get("source_url")),
        }
    )


def _read_jsonl(path: Path, agent: str, tier: str, role: str | None) -> Iterator[NewRecord]:
    for number, data in _jsonl_objects(path):
        try:
            yield _ingest_record(data, agent, tier, role)
        except ValidationError as exc:
            raise InvalidInputError(f"{path}:{number}: {describe_validation_error(exc)}") from exc
        except ValueError as exc:
            raise InvalidInputError(f"{path}:{number}: {exc}") from exc


def _batches(records: Iterator[NewRecord], size: int) -> Iterator[list[NewRecord]]:
    batch: list[NewRecord] = []
    for record in records:
        batch.append(record)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--agent", required=True)
@click.option("--tier", type=TIER, required=True)
@click.option("--role", help="Default role for lines that have none.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@click.pass_obj
def ingest(obj: Context, file: Path, agent: str, tier: str, role: str | None, as_json: bool) -> None:
    """Ingest a JSONL file: one object per line with `text` and optional `role, session_id,
    turn_id, source_url, tags, created_at`. The whole file is validated before anything is
    written; records are then embedded and committed in batches of 256."""
    from tqdm import tqdm

    total = sum(1 for _ in _read_jsonl(file, agent, tier, role))  # validate everything first
    added = duplicates = 0
    with obj.open() as mem, tqdm(total=total, unit="rec", file=sys.stderr, disable=None) as bar:
        for batch in _batches(_read_jsonl(file, agent, tier, role), INGEST_BATCH):
            results = mem.insert(batch)
            added += sum(r.created for r in results)
            duplicates += sum(not r.created for r in results)
            bar.update(len(batch))
    summary = {"file": str(file), "records": total, "added": added, "duplicates": duplicates}
    if as_json:
        print_json(summary)
    else:
        click.echo(f"ingested {total} records from {file}: {added} added, {duplicates} duplicates skipped")


def _format_hit(rank: int, hit: Hit) -> str:
    """Three lines for people: rank, id, score and the parts the hit has; its text; where it came from
    and when (the file's hash and the full citation only with --json)."""
    scores = " ".join(f"{k}={v:.3f}" for k, v in hit.scores.model_dump().items() if v is not None)
    text = " ".join(hit.text.split())  # a chunk's paragraphs on the one line of its text
    text = text if len(text) <= 200 else text[:197] + "..."
    who = f"{hit.role}: " if hit.role else ""
    flag = " untrusted" if hit.untrusted else ""
    cited = " · ".join(filter(None, [hit.citation.one_line(), hit.created_at.strftime("%Y-%m-%d %H:%M")]))
    relevance = "" if hit.relevance is None else f" relevance={hit.relevance:.2f}"
    return f"{rank:>3}. [{hit.id}] score={hit.score:.3f}{relevance} ({scores}){flag}\n     {who}{text}\n     {cited}"


def _search_queries(file: Path) -> Iterator[tuple[Any, str]]:
    for number, data in _jsonl_objects(file):
        try:
            yield data["id"], str(data["query"])
        except (KeyError, TypeError) as exc:
            raise InvalidInputError(f'{file}:{number}: expected {{"id": ..., "query": "..."}}: {exc}') from exc


@click.command()
@click.argument("query", required=False)
@click.option("--agent", required=True)
@click.option("--tier", type=TIER, required=True)
@click.option("-k", "k", type=int, default=10, show_default=True, help="Number of hits.")
@click.option("--mode", type=MODE, default="hybrid", show_default=True)
@click.option("--fusion", type=click.Choice([f.value for f in Fusion]), help="Hybrid fusion (default: convex).")
@click.option("--vector-weight", type=float, help="Convex fusion weight of the vector side, 0..1 (default 0.5).")
@click.option(
    "--session-weight",
    type=float,
    help="Weight of the session-level score in hybrid search, 0 turns it off (default: 2.0 with the "
    "learned ranker, else 1.0).",
)
@click.option(
    "--rerank/--no-rerank",
    default=None,
    help="Hybrid: re-order the best candidates with the learned ranker (default: when it was "
    "fitted for the home's model and the fusion, convex) or rank by fusion alone.",
)
@click.option("--tag", "tags", multiple=True, help="Only records with this tag (repeatable).")
@click.option("--all-tags", is_flag=True, help="Require all --tag values instead of any.")
@click.option("--role", "roles", multiple=True, help="Only records with this role (repeatable).")
@click.option("--session", help="Only records of this session id.")
@click.option("--since", type=TIMESTAMP, help="Only records created at or after this time (UTC).")
@click.option("--until", type=TIMESTAMP, help="Only records created at or before this time (UTC).")
@click.option(
    "--as-of",
    type=TIMESTAMP,
    help="The versions that held at this event time (UTC), superseded ones included (default: current).",
)
@click.option(
    "--dates-in-query",
    is_flag=True,
    help="Only records from the period a time expression in the query names ('yesterday', 'two weeks "
    "ago', 'last May', 'in 2023'), within --since/--until.",
)
@click.option(
    "--no-date-boost",
    is_flag=True,
    help="Hybrid: do not lift records from the period the query names (lifted by default, unless "
    "--dates-in-query keeps only them).",
)
@click.option(
    "--reference-time", type=TIMESTAMP, help="What a time expression in the query resolves against (default: now)."
)
@click.option("--per-document", is_flag=True, help="The best chunk of each document only (-k documents).")
@click.option(
    "--spread-sessions/--no-spread-sessions",
    default=None,
    help="The first 5 hits spread over sessions, for a question about several (default: when the query "
    "asks for a count or a total: 'how many', 'how much', 'in total').",
)
@click.option(
    "--min-score",
    type=click.FloatRange(0.0, 1.0),
    help="Only hits whose relevance (a probability of relevance, comparable across queries) is at least "
    "this; none may come back: the memory holds nothing relevant. hybrid and vector modes.",
)
@click.option(
    "--queries",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='Batch mode: JSONL of {"id", "query"}; prints one {"id", "hits"} line per query.',
)
@click.option("--json", "as_json", is_flag=True, help="Print hits as JSON.")
@click.pass_obj
def search(
    obj: Context,
    query: str | None,
    agent: str,
    tier: str,
    k: int,
    mode: str,
    fusion: str | None,
    vector_weight: float | None,
    session_weight: float | None,
    rerank: bool | None,
    tags: tuple[str, ...],
    all_tags: bool,
    roles: tuple[str, ...],
    session: str | None,
    since: datetime | None,
    until: datetime | None,
    as_of: datetime | None,
    dates_in_query: bool,
    no_date_boost: bool,
    reference_time: datetime | None,
    per_document: bool,
    spread_sessions: bool | None,
    min_score: float | None,
    queries: Path | None,
    as_json: bool,
) -> None:
    """Search one tier of an agent's memory with QUERY (or many queries with --queries)."""
    if (query is None) == (queries is None):
        raise click.UsageError("give exactly one of QUERY or --queries FILE")
    filters = SearchFilters.model_validate(
        {
            "tags": list(tags),
            "tag_match": "all" if all_tags else "any",
            "roles": list(roles),
            "session_id": session,
            "start": since,
            "end": until,
            "as_of": as_of,
        }
    )

    def request(text: str) -> SearchRequest:
        return SearchRequest.model_validate(
            {
                "agent": agent,
                "tier": tier,
                "query": text,
                "k": k,
                "mode": mode,
                "fusion": fusion,
                "vector_weight": vector_weight,
                "session_weight": session_weight,
                "rerank": rerank,
                "filters": filters,
                "dates_in_query": dates_in_query,
                "boost_dates_in_query": not no_date_boost,
                "reference_time": reference_time,
                "per_document": per_document,
                "spread_sessions": spread_sessions,
                "min_score": min_score,
            }
        )

    request(query if query is not None else "-")  # bad options are refused before the home is opened
    with obj.open() as mem:
        existing_agent(mem, agent)
        if queries is not None:
            for query_id, text in _search_queries(queries):
                print_json({"id": query_id, "hits": [dump(h) for h in mem.search(request(text))]})
            return
        assert query is not None
        hits = mem.search(request(query))
    if as_json:
        print_json([dump(h) for h in hits])
    elif not hits:
        click.echo("no hits" if min_score is None else f"no relevant memory (no hit reached --min-score {min_score})")
    else:
        click.echo("\n".join(_format_hit(rank, hit) for rank, hit in enumerate(hits, start=1)))


@click.command(name="list")
@click.option("--agent", required=True)
@click.option("--tier", type=TIER, required=True)
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
@click.option("--newest-first", is_flag=True)
@click.pass_obj
def list_command(obj: Context, agent: str, tier: str, limit: int, offset: int, newest_first: bool) -> None:
    """List records of one tier in time order, as JSON lines."""
    with obj.open() as mem:
        rows = mem.tier(existing_agent(mem, agent), Tier(tier)).list(
            limit=limit, offset=offset, newest_first=newest_first
        )
    for record in rows:
        print_json(dump(record))


@click.command()
@click.argument("record_id", type=int)
@click.option("--agent", required=True)
@click.pass_obj
def delete(obj: Context, record_id: int, agent: str) -> None:
    """Delete one record by id."""
    with obj.open() as mem:
        record = mem.delete_record(agent, record_id)
    click.echo(f"deleted record {record.id} ({record.tier.value})")
