"""`memvec agent`, `memvec chat`, `memvec blocks` and `memvec import`: the commands about agents."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

from memvec.cli.common import Context, dump, existing_agent, print_json, read_input_file
from memvec.types import AgentSettings


@click.group()
def agent() -> None:
    """Create, list, inspect and delete agents (an LLM, a context budget, persona/human core blocks)."""


@agent.command(name="create")
@click.argument("name")
@click.option("--model", "llm", help="litellm model for chat, e.g. openai/gpt-4o-mini or ollama/llama3.")
@click.option("--persona", default="", help="Initial persona block.")
@click.option("--human", default="", help="Initial human block.")
@click.option("--context-window", type=int, default=8192, show_default=True, help="Token budget of the main context.")
@click.option("--max-steps", type=int, default=8, show_default=True, help="Model calls per reply.")
@click.option("--page-in-budget", type=int, default=3, show_default=True, help="Memory searches per reply.")
@click.pass_obj
def agent_create(
    obj: Context,
    name: str,
    llm: str | None,
    persona: str,
    human: str,
    context_window: int,
    max_steps: int,
    page_in_budget: int,
) -> None:
    """Create (or update) agent NAME."""
    settings = AgentSettings.model_validate(
        {
            "name": name,
            "model": llm,
            "context_window": context_window,
            "max_steps": max_steps,
            "page_in_budget": page_in_budget,
        }
    )
    from memvec.agent.models import model_problem  # litellm only when a model is named

    if llm and (problem := model_problem(llm)) is not None:
        raise click.BadParameter(problem, param_hint="--model")
    with obj.open() as mem:
        mem.create_agent(settings, exist_ok=True, actor="cli")
        for label, value in (("persona", persona), ("human", human)):
            if value:
                mem.core(name, actor="cli").rewrite(label, value)
    click.echo(f"agent {name} ready" + (f" (model {llm})" if llm else ""))


@agent.command(name="show")
@click.argument("name")
@click.pass_obj
def agent_show(obj: Context, name: str) -> None:
    """Print an agent's settings, state and core memory as JSON."""
    with obj.open() as mem:
        settings, state = mem.get_agent(name)
        blocks = [dump(b) for b in mem.core(name).blocks()]
    print_json({"settings": dump(settings), "state": dump(state), "core_memory": blocks})


@agent.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per agent: name, model, records per tier.")
@click.pass_obj
def agent_list(obj: Context, as_json: bool) -> None:
    """List the home's agents with their model and how many records each tier holds."""
    with obj.open() as mem:
        counts = {(p.agent, p.tier.value): p.records for p in mem.partition_stats()}
        rows = [(name, mem.get_agent(name)[0].model) for name in sorted(mem.agents())]
    for name, llm in rows:
        recall, archival = counts.get((name, "recall"), 0), counts.get((name, "archival"), 0)
        if as_json:
            print_json({"name": name, "model": llm, "recall": recall, "archival": archival})
        else:
            click.echo(f"{name}  model {llm or '-'}  recall {recall}  archival {archival}")


@agent.command(name="delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask (for scripts).")
@click.pass_obj
def agent_delete(obj: Context, name: str, yes: bool) -> None:
    """Delete agent NAME: its settings, core blocks and their history, every record of both tiers
    (gone from the store's files and the indexes). Asks first unless --yes."""
    with obj.open() as mem:
        existing_agent(mem, name)
        if not yes:
            click.confirm(f"delete agent {name} and all its memory?", abort=True, err=True)
        deleted = mem.delete_agent(name)
    click.echo(f"deleted agent {name} ({deleted} records)")


@click.group()
def blocks() -> None:
    """Core memory blocks: the history of every change, and undo."""


@blocks.command(name="history")
@click.argument("name")
@click.argument("label", required=False)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def blocks_history(obj: Context, name: str, label: str | None, as_json: bool) -> None:
    """Every change of agent NAME's blocks (or of block LABEL), oldest first: when, who, what."""
    with obj.open() as mem:
        changes = mem.core(name).history(label)
    if as_json:
        print_json([dump(c) for c in changes])
        return
    for c in changes:
        before = repr(c.old.value) if c.old else "(none)"
        after = repr(c.new.value) if c.new else "(deleted)"
        undone = f"  [undone by #{c.undone_by}]" if c.undone_by else ""
        click.echo(
            f"#{c.seq} {c.changed_at:%Y-%m-%d %H:%M:%S} {c.label} {c.op} by {c.actor}: {before} -> {after}{undone}"
        )


@blocks.command(name="undo")
@click.argument("name")
@click.argument("label")
@click.pass_obj
def blocks_undo(obj: Context, name: str, label: str) -> None:
    """Revert block LABEL of agent NAME to before its latest change not yet undone (again: further back)."""
    with obj.open() as mem:
        block = mem.core(name, actor="cli").undo(label)
    click.echo(f"{label}: {block.value!r}" if block is not None else f"{label}: removed (the undone change created it)")


@click.command()
@click.option("--agent", "name", required=True, help="Agent to talk to (see `memvec agent create`).")
@click.option("--model", "llm", help="litellm model for this chat (overrides the agent's).")
@click.option("--session", help="Session id recorded in citations (default: one per chat).")
@click.option("--message", "messages", multiple=True, help="Send this message and exit (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print each reply and its trace as JSON.")
@click.pass_obj
def chat(
    obj: Context, name: str, llm: str | None, session: str | None, messages: tuple[str, ...], as_json: bool
) -> None:
    """Chat with an agent that manages its own memory. Without --message it reads lines from stdin.
    The model's address and key come from litellm's usual settings (e.g. OPENAI_API_BASE)."""
    from memvec.agent import Agent

    with obj.open() as mem:
        bot = Agent(mem, name, model=llm, session_id=session)
        inputs = messages or _stdin_lines()
        for text in inputs:
            reply = bot.reply(text)
            if as_json:
                print_json(dump(reply))
            else:
                click.echo(reply.message if reply.message is not None else f"(no reply: {reply.trace.stopped_by})")


def _stdin_lines() -> Iterator[str]:
    while True:
        try:
            line = input("you> " if sys.stdin.isatty() else "")
        except EOFError:
            return
        if line.strip():
            yield line


@click.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", help="Import the (single) agent under this name.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def import_command(obj: Context, file: Path, name: str | None, as_json: bool) -> None:
    """Import a Letta Agent File (.af) or a memvec export (JSON): blocks, settings and messages with
    citations; what memvec has no use for (tools, sources, ...) is reported as skipped."""
    import json

    from memvec.exchange.agentfile import import_document, parse_document, read_document

    data = parse_document(read_input_file(file), what=str(file))
    plan = read_document(data, name=name)
    with obj.open() as mem:
        report = import_document(mem, plan)
    if as_json:
        print_json(dump(report))
        return
    for done in report.imported:
        click.echo(f"imported agent {done.agent}: {done.messages} messages, {done.passages} passages")
    skipped = {k: v for k, v in report.skipped.items() if v}
    if skipped:
        click.echo(f"skipped (memvec has no use for them): {json.dumps(skipped)}")
