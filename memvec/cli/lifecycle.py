"""Records changing and leaving memory: `memvec update`/`history` (versions of a passage), `memvec forget`
(by criteria), `memvec sweep` (by expiry) and `memvec consolidate` (sleep-time, by the agent's model);
the whole home copied out and back: `memvec backup` and `memvec restore`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from memvec.agent.consolidate import consolidate as run_consolidation
from memvec.cli.common import TIER, TIMESTAMP, Context, dump, existing_agent, print_json
from memvec.exchange.consolidation import ConsolidationRun
from memvec.exchange.reports import ForgetApplied
from memvec.memory import STORE_SCHEMA_VERSION, Memory
from memvec.types import Tier


@click.command()
@click.option("--agent", required=True)
@click.option("--tier", type=TIER, help="Only this tier (default: both).")
@click.option("--id", "ids", type=int, multiple=True, help="These records (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Records with this tag (repeatable; any unless --all-tags).")
@click.option("--all-tags", is_flag=True, help="Records with every --tag.")
@click.option("--since", type=TIMESTAMP, help="Records created at or after this time.")
@click.option("--until", type=TIMESTAMP, help="Records created at or before this time.")
@click.option("--session", help="Records of this session.")
@click.option("--role", "roles", multiple=True, help="Records with this role (repeatable).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def forget(
    obj: Context,
    agent: str,
    tier: str | None,
    ids: tuple[int, ...],
    tags: tuple[str, ...],
    all_tags: bool,
    since: datetime | None,
    until: datetime | None,
    session: str | None,
    roles: tuple[str, ...],
    as_json: bool,
) -> None:
    """Delete the records of AGENT matching every criterion given (at least one) and say how many;
    nothing of them stays in the store or the index files. To forget the whole agent, delete it."""
    with obj.open() as mem:
        count = mem.forget(
            existing_agent(mem, agent),
            tier=Tier(tier) if tier else None,
            ids=ids,
            tags=tags,
            tag_match="all" if all_tags else "any",
            start=since,
            end=until,
            session_id=session,
            roles=roles,
        )
    if as_json:
        print_json({"forgotten": count})
    else:
        click.echo(f"forgot {count} record(s) of {agent}")


@click.command()
@click.option("--dry-run", is_flag=True, help="Only say what would be migrated; change nothing.")
@click.pass_obj
def upgrade(obj: Context, dry_run: bool) -> None:
    """Bring the home's store to this memvec's schema (opening it with any command does the same,
    with a warning); --dry-run lists what that would apply. Take a `memvec backup` first: an older
    memvec cannot open the home afterwards."""
    config = obj.config()
    steps = Memory.pending_migrations(config)
    if steps is None:
        click.echo(
            "nothing to migrate here: a PostgreSQL store is brought up to date when opened, a new home "
            f"is made at schema {STORE_SCHEMA_VERSION}"
        )
        return
    if not steps:
        click.echo(f"up to date: store schema {STORE_SCHEMA_VERSION}")
        return
    for version, what in steps:
        click.echo(f"{'would apply' if dry_run else 'applying'} schema {version}: {what}")
    if not dry_run:
        with obj.open():
            pass
        click.echo(f"upgraded: store schema {STORE_SCHEMA_VERSION}")


@click.command()
@click.option("--agent", help="Only this agent.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def sweep(obj: Context, agent: str | None, as_json: bool) -> None:
    """Purge every record past its expiry (--expires-at) or its tier's retention. Reads already hide
    and purge what they touch; run this (e.g. from cron) for what nobody reads."""
    with obj.open() as mem:
        purged = mem.sweep(agent=agent and existing_agent(mem, agent))
    if as_json:
        print_json({"purged": purged})
    else:
        click.echo(f"purged {purged} expired record(s)")


@click.command()
@click.argument("record_id", type=int)
@click.argument("text")
@click.option("--agent", required=True)
@click.option("--tag", "tags", multiple=True, help="The new version's tags (repeatable; default: the old ones).")
@click.option("--valid-from", type=TIMESTAMP, help="Since when the new text holds (UTC; default: now).")
@click.option("--session", help="Citation of the new version: session id.")
@click.option("--turn", help="Citation of the new version: turn id.")
@click.option("--source", help="Citation of the new version: source URL.")
@click.option("--json", "as_json", is_flag=True, help="Print the new version as JSON.")
@click.pass_obj
def update(
    obj: Context,
    record_id: int,
    text: str,
    agent: str,
    tags: tuple[str, ...],
    valid_from: datetime | None,
    session: str | None,
    turn: str | None,
    source: str | None,
    as_json: bool,
) -> None:
    """Write TEXT as the new version of archival passage RECORD_ID (its current version): the old one
    leaves search (it stays in `memvec history` and in searches --as-of a time it held)."""
    with obj.open() as mem:
        result = mem.archival(agent).update(
            record_id,
            text,
            tags=list(tags) or None,
            valid_from=valid_from,
            session_id=session,
            turn_id=turn,
            source_url=source,
        )
    if as_json:
        print_json(dump(result.record))
    else:
        click.echo(f"record {result.record.id} supersedes {record_id}")


@click.command()
@click.argument("record_id", type=int)
@click.option("--agent", required=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON line per version.")
@click.pass_obj
def history(obj: Context, record_id: int, agent: str, as_json: bool) -> None:
    """Every version of the archival passage RECORD_ID, oldest first, with when each held."""
    with obj.open() as mem:
        versions = mem.archival(agent).history(record_id)
    for record in versions:
        if as_json:
            print_json(dump(record))
            continue
        until = record.valid_to.isoformat() if record.valid_to else "now"
        since = record.valid_from.isoformat() if record.valid_from else "?"
        click.echo(f"[{record.id}] {since} .. {until}: {record.text}")


@click.command()
@click.option("--agent", required=True)
@click.option("--model", "llm", help="litellm model to consolidate with (default: the agent's model).")
@click.option("--list", "list_runs", is_flag=True, help="Show the agent's runs (what each changed, and why).")
@click.option("--undo", "undo", type=int, metavar="RUN", help="Undo run RUN whole.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def consolidate(obj: Context, agent: str, llm: str | None, list_runs: bool, undo: int | None, as_json: bool) -> None:
    """Sleep-time consolidation: the model reads AGENT's messages since the last run and writes facts
    to archival memory (citing the messages), supersedes facts they contradict and rewrites core
    blocks, as one run that --list shows and --undo reverts. A model that fails or answers garbage
    changes nothing."""
    with obj.open() as mem:
        if list_runs:
            runs = mem.consolidation_runs(agent)
        elif undo is not None:
            runs = [mem.undo_consolidation(agent, undo)]
        else:
            done = run_consolidation(mem, agent, model=llm)
            runs = [done] if done is not None else []
    if as_json:
        print_json([dump(run) for run in runs])
    elif not runs:
        click.echo("nothing to consolidate" if not list_runs else f"no consolidation runs for {agent}")
    for run in [] if as_json else runs:
        click.echo(_describe(run))


def _describe(run: ConsolidationRun) -> str:
    state = f" (undone {run.undone_at:%Y-%m-%d %H:%M})" if run.undone_at else ""
    lines = [
        f"run {run.id} by {run.model} at {run.started_at:%Y-%m-%d %H:%M}, through message {run.through_message}{state}"
    ]
    for fact in run.facts:
        what = f"supersedes [{fact.supersedes}]" if fact.supersedes else "added" if fact.created else "repeated"
        lines.append(f"  fact [{fact.id}] {what}: {fact.text}  (from {fact.sources}; {fact.reason})")
    for block in run.blocks:
        lines.append(f"  block {block.label}: {block.old!r} -> {block.new!r}  ({block.reason})")
    return "\n".join(lines)


@click.command()
@click.argument("dest", type=click.Path(path_type=Path, file_okay=False))
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def backup(obj: Context, dest: Path, as_json: bool) -> None:
    """Copy the home's store into the new or empty folder DEST while servers keep running (SQLite's
    online backup: what is still in the write-ahead log is included), with DEST/backup.json (version,
    schema, model, counts, sha256). Indexes are not copied: `memvec restore` rebuilds them. A
    PostgreSQL store is backed up with pg_dump (docs/operations.md)."""
    with obj.open(recorded_model=True) as mem:
        manifest = mem.backup(dest)
    if as_json:
        print_json(dump(manifest))
    else:
        click.echo(
            f"backed up {manifest.records} record(s) of {manifest.agents} agent(s) to {dest} "
            f"({manifest.bytes} bytes, sha256 {manifest.sha256[:12]}...)"
        )


@click.command()
@click.argument("src", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--forget-log",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Another home's forgotten.jsonl to apply (default: the home's own, if it has one).",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def restore(obj: Context, src: Path, forget_log: Path | None, as_json: bool) -> None:
    """Make the home (--home / MEMVEC_HOME, which must not have a store yet) from the backup folder
    SRC: its copy is checked against its manifest, put in place, and every index rebuilt, so
    `memvec verify` passes at once. The home keeps the backup's model.

    Forget means gone, also here: what the forget log (`forgotten.jsonl` beside the store, which
    outlives it; or --forget-log) says was deleted or forgotten after the backup was taken is deleted
    again, and said. Restoring into a new home without a log brings back everything the backup holds."""
    config = obj.config()
    with Memory.restore(src, config.home, store=config.store, forget_log=forget_log) as mem:
        result, applied = mem.stats(), mem.forget_applied
    records = sum(p.records for p in result.partitions)
    if as_json:
        print_json(
            {
                "home": result.home,
                "model": result.model_id,
                "records": records,
                "indexes": len(result.partitions),
                "forget_log": dump(applied) if applied else None,
            }
        )
        return
    click.echo(
        f"restored {records} record(s) into {result.home}; {len(result.partitions)} index(es) rebuilt, "
        f"model {result.model_id}"
    )
    click.echo(_forgotten_again(applied))


def _forgotten_again(applied: ForgetApplied | None) -> str:
    if applied is None:
        return (
            "no forget log here: anything deleted or forgotten after the backup was taken is back "
            "(restore into the home it came from, or pass --forget-log)"
        )
    return (
        f"applied {applied.log}: {applied.tombstones} deletion(s) after the backup "
        f"({applied.backup_taken_at:%Y-%m-%d %H:%M:%S} UTC) removed again {applied.records} record(s), "
        f"{applied.documents} document(s), {applied.agents} agent(s), {applied.block_histories} block history(ies)"
    )
