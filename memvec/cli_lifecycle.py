"""`memvec forget` and `memvec sweep`: records leaving memory on purpose (by criteria) or by expiry."""

from __future__ import annotations

from datetime import datetime

import click

from memvec.cli_common import TIER, Context, print_json
from memvec.types import Tier


@click.command()
@click.option("--agent", required=True)
@click.option("--tier", type=TIER, help="Only this tier (default: both).")
@click.option("--id", "ids", type=int, multiple=True, help="These records (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Records with this tag (repeatable; any unless --all-tags).")
@click.option("--all-tags", is_flag=True, help="Records with every --tag.")
@click.option("--since", type=click.DateTime(), help="Records created at or after this time.")
@click.option("--until", type=click.DateTime(), help="Records created at or before this time.")
@click.option("--session", help="Records of this session.")
@click.option("--role", "roles", multiple=True, help="Records with this role (repeatable).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def forget(obj: Context, agent: str, tier: str | None, ids: tuple[int, ...], tags: tuple[str, ...], all_tags: bool,
           since: datetime | None, until: datetime | None, session: str | None, roles: tuple[str, ...],
           as_json: bool) -> None:
    """Delete the records of AGENT matching every criterion given (at least one) and say how many;
    nothing of them stays in the store or the index files. To forget the whole agent, delete it."""
    with obj.open() as mem:
        count = mem.forget(agent, tier=Tier(tier) if tier else None, ids=ids, tags=tags,
                           tag_match="all" if all_tags else "any", start=since, end=until, session_id=session,
                           roles=roles)
    if as_json:
        print_json({"forgotten": count})
    else:
        click.echo(f"forgot {count} record(s) of {agent}")


@click.command()
@click.option("--agent", help="Only this agent.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def sweep(obj: Context, agent: str | None, as_json: bool) -> None:
    """Purge every record past its expiry (--expires-at) or its tier's retention. Reads already hide
    and purge what they touch; run this (e.g. from cron) for what nobody reads."""
    with obj.open() as mem:
        purged = mem.sweep(agent=agent)
    if as_json:
        print_json({"purged": purged})
    else:
        click.echo(f"purged {purged} expired record(s)")
