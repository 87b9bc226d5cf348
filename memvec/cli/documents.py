"""`memvec add-file` and `memvec documents`: files into an agent's archival memory as cited chunks."""

from __future__ import annotations

import glob
from collections.abc import Iterator
from pathlib import Path

import click

from memvec.cli.common import Context, dump, print_json
from memvec.documents.formats import MEDIA_TYPES
from memvec.errors import InvalidInputError, MemvecError, NotFoundError


def _files(patterns: tuple[str, ...]) -> Iterator[Path]:
    """Each file a pattern names: a file, a folder (its readable files, recursively) or a glob
    (`**` crosses folders), each file once, in name order within a pattern."""
    seen: set[Path] = set()
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MEDIA_TYPES)
        elif path.exists():
            found = [path]
        else:
            found = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
            if not found:
                raise NotFoundError(f"no file matches {pattern!r}")
        for file in found:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                yield file


@click.command(name="add-file")
@click.argument("paths", nargs=-1, required=True)
@click.option("--agent", required=True, help="Agent whose archival memory gets the files' chunks.")
@click.option("--tag", "tags", multiple=True, help="A tag for every chunk (repeatable).")
@click.option(
    "--media-type",
    help="Read every file as this type (text/plain, text/markdown, text/html, "
    "application/pdf) instead of by its extension.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON report per file.")
@click.pass_obj
def add_file(
    obj: Context, paths: tuple[str, ...], agent: str, tags: tuple[str, ...], media_type: str | None, as_json: bool
) -> None:
    """Add files to an agent's archival memory: each is cut into chunks that cite its name, page,
    character offsets and headings. PATHS are files, folders (their .txt, .md, .html and .pdf files)
    or quoted globs ("docs/**/*.md"). The same content again adds nothing; a changed file of the same
    name replaces the old chunks (the old ones stay visible to searches `--as-of` before). A file
    that cannot be read is reported and writes nothing; the exit status is then 2. The files' chunks
    are embedded together, in batches."""
    files = list(_files(paths))
    with obj.open() as mem:
        reports = mem.documents(agent).add_many(files, media_type=media_type, tags=tags)
    failed = 0
    for path, report in zip(files, reports, strict=True):
        if isinstance(report, MemvecError):
            failed += 1
            click.echo(f"error: {report}", err=True)
        elif as_json:
            print_json(dump(report))
        else:
            doc = report.document
            what = (
                "unchanged"
                if not report.created
                else f"replaced document {report.replaced} with"
                if report.replaced
                else "added"
            )
            click.echo(
                f"{what} {path}: document {doc.id}, {doc.chunks} chunks" + (f", {doc.pages} pages" if doc.pages else "")
            )
    if failed:
        raise InvalidInputError(f"{failed} of {len(files)} files could not be read (nothing was written for them)")


@click.group(name="documents")
def documents() -> None:
    """List, read and delete the files added to an agent (`memvec add-file`)."""


@documents.command(name="list")
@click.option("--agent", required=True)
@click.option("--all-versions", is_flag=True, help="Also the versions changed files replaced.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def list_documents(obj: Context, agent: str, all_versions: bool, as_json: bool) -> None:
    """The agent's documents, oldest first."""
    with obj.open() as mem:
        found = mem.documents(agent).list(include_replaced=all_versions)
    for doc in found:
        if as_json:
            print_json(dump(doc))
        else:
            replaced = f" (replaced by {doc.replaced_by})" if doc.replaced_by else ""
            click.echo(
                f"{doc.id}\t{doc.name}\t{doc.media_type}\t{doc.chunks} chunks\t{doc.size_bytes} bytes"
                f"\t{doc.content_hash[:12]}{replaced}"
            )


@documents.command(name="text")
@click.argument("document_id", type=int)
@click.option("--agent", required=True)
@click.pass_obj
def document_text(obj: Context, document_id: int, agent: str) -> None:
    """Print the document's text (what its chunks' offsets count)."""
    with obj.open() as mem:
        click.echo(mem.documents(agent).text(document_id))


@documents.command(name="delete")
@click.argument("document_id", type=int)
@click.option("--agent", required=True)
@click.pass_obj
def delete_document(obj: Context, document_id: int, agent: str) -> None:
    """Delete a document, the earlier versions of its file and all their chunks."""
    with obj.open() as mem:
        deleted = mem.documents(agent).delete(document_id)
    click.echo(f"deleted document {document_id} and {deleted} chunks")
