"""`memvec mcp`: serve one agent's memory to an MCP host (Claude, Cursor, VS Code, Goose, ...)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from memvec.cli.common import Context, open_when_store_is_up
from memvec.mcp_server.tools import ToolSet
from memvec.service.server import serve_http
from memvec.telemetry.logs import configure as configure_logging


@click.command(name="mcp")
@click.option(
    "--agent",
    "name",
    default="default",
    show_default=True,
    help="Agent whose memory is served (created with persona/human blocks if new).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a host that spawns memvec; http for streamable HTTP at http://HOST:PORT/mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP only.")
@click.option("--port", type=int, default=8284, show_default=True, help="HTTP only.")
@click.option(
    "--keys-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="HTTP only: API keys as for `memvec serve` (KEY or KEY=agent1|agent2); also "
    "MEMVEC_API_KEYS / MEMVEC_API_KEYS_FILE.",
)
@click.option(
    "--tools",
    type=click.Choice(["plain", "letta"]),
    default="plain",
    show_default=True,
    help="plain: one tool per job; letta: also Letta's memory_insert, memory_replace and memory_finish_edits.",
)
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the JSON a desktop host needs to start this server (Claude Desktop's "
    "claude_desktop_config.json, Cursor's mcp.json), with absolute paths, and exit.",
)
@click.option(
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
@click.pass_obj
def mcp(
    obj: Context,
    name: str,
    transport: str,
    host: str,
    port: int,
    keys_file: Path | None,
    tools: ToolSet,
    print_config: bool,
    log_level: str,
) -> None:
    """Serve an agent's memory as a Model Context Protocol server.

    \b
    Tools (Letta's names and arguments where Letta has the tool), each with a title:
      core blocks   core_memory_read, core_memory_append, core_memory_replace, memory_rethink
                    (--tools letta: also memory_insert, memory_replace, memory_finish_edits)
      archival      archival_memory_insert, archival_memory_update, archival_memory_search,
                    archival_memory_list, archival_memory_delete
      conversation  conversation_search, conversation_record
      both tiers    memory_forget
      files         add_file (a path on this computer over stdio; name and content over HTTP)
    and the resource memvec://core-memory. An argument a tool does not take is a tool error.
    Nothing is written to stdout but the protocol."""
    from memvec.mcp_server.server import build_server, http_app
    from memvec.service.auth import KeyRing

    if print_config:
        click.echo(json.dumps(host_config(obj, name, tools), indent=2))
        return

    keys = KeyRing.from_environment(keys_file)
    if transport == "http":  # stdio leaves logging alone: nothing but the protocol on stdout
        configure_logging(log_level, "text")
    with open_when_store_is_up(obj, transport == "http", query_batching=transport == "http") as mem:
        server = build_server(mem, name, tools=tools, local_files=transport == "stdio")
        mem.embedding_dim  # noqa: B018 - load the model now, not on the first tool call
        if transport == "stdio":
            if sys.stdin.isatty():  # a person, not an MCP host: say why nothing happens
                click.echo(
                    "memvec mcp: waiting for an MCP client on stdin/stdout; an MCP host (Claude Desktop, "
                    "Cursor, ...) starts this command itself (see memvec mcp --help). Ctrl-C to stop.",
                    err=True,
                )
            server.run("stdio")
            return
        click.echo(f"memvec: MCP over streamable HTTP at http://{host}:{port}/mcp", err=True)
        serve_http(http_app(server, keys, name, host=host), mem, keys, host=host, port=port, log_level=log_level)


def host_config(obj: Context, agent: str, tools: ToolSet) -> dict[str, Any]:
    """A host starts the server itself, without this shell's PATH or working directory: the interpreter
    and the home by absolute path, and the global options given here."""
    args = ["-m", "memvec", "--home", str(obj.config().home.resolve())]
    args += ["--model", obj.model] if obj.model else []
    args += ["--store", obj.store] if obj.store else []
    args += ["mcp", "--agent", agent] + (["--tools", tools] if tools != "plain" else [])
    server = {"command": str(Path(sys.executable).absolute()), "args": args, "env": {"HF_HUB_OFFLINE": "1"}}
    return {"mcpServers": {"memvec": server}}
