"""The derived indexes from the command line: rebuild, verify (exit 3 on a disagreement) and stats."""

from __future__ import annotations

import sys

import click

from memvec.cli.common import EXIT_VERIFY, Context, dump, existing_agent, print_json


@click.command()
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


@click.command()
@click.option("--agent", help="Only this agent.")
@click.option(
    "--repair",
    is_flag=True,
    help="Delete documents whose folder is gone, open every index (replay what it is behind, rebuild "
    "what disagrees) and save.",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def verify(obj: Context, agent: str | None, repair: bool, as_json: bool) -> None:
    """Check every saved index against the store, and that every document has its folder; exit 3 if not.

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
                "orphans": [dump(o) for o in report.orphans],
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
        for orphan in report.orphans:
            click.echo(
                f"document {orphan.document_id} ({orphan.name!r}) belongs to folder {orphan.owner[1:]}, which "
                "no longer exists; --repair deletes it",
                err=True,
            )
        if report.ok:
            click.echo("ok: every index agrees with the store, every document has its folder")
    if not report.ok:
        sys.exit(EXIT_VERIFY)


@click.command()
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
