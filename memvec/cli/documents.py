"""`memvec add-file` and `memvec documents`: files into an agent's archival memory as cited chunks."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

import click

from memvec.cli.common import Context, dump, print_json
from memvec.errors import InvalidInputError, MemvecError, NotFoundError
from memvec.types import DocumentReport


@dataclass(frozen=True, slots=True)
class Found:
    path: Path
    name: str  # the document's name: its path under the folder or glob root it was found in
    walked: bool  # found by walking a folder: a file it cannot read is skipped, not an error


def _files(patterns: tuple[str, ...]) -> tuple[list[Found], list[str]]:
    """Each file a pattern names (a file; a folder: every file under it but hidden ones; a glob, where
    `**` crosses folders), each once, and what was left out and why."""
    seen: set[Path] = set()
    found: list[Found] = []
    skipped: list[str] = []
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
            files, hidden = _walk(path)
            skipped += [f"{path / name}: hidden" for name in hidden]
        elif path.exists():
            files = [Found(path, path.name, walked=False)]
        else:
            root = _glob_root(pattern)
            matches = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
            if not matches:
                raise NotFoundError(f"no file matches {pattern!r}")
            files = [Found(p, p.relative_to(root).as_posix(), walked=False) for p in matches]
        for file in files:
            if file.path.resolve() not in seen:
                seen.add(file.path.resolve())
                found.append(file)
    return found, skipped


def _walk(folder: Path) -> tuple[list[Found], list[str]]:
    """The folder's files by their paths under it, in name order; hidden files and folders (a name
    starting with a dot: .git, .DS_Store) are left out and named. Symbolic links to folders are not
    followed (no loops)."""
    files: list[Found] = []
    hidden: list[str] = []
    for root, folders, names in os.walk(folder):
        under = Path(root).relative_to(folder)
        hidden += [f"{(under / name).as_posix()}/" for name in folders if name.startswith(".")]
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in names:
            if name.startswith("."):
                hidden.append((under / name).as_posix())
            else:
                files.append(Found(Path(root) / name, (under / name).as_posix(), walked=True))
    return sorted(files, key=lambda f: f.name), sorted(hidden)


def _glob_root(pattern: str) -> Path:
    """The folder a glob's matches are named under: its leading parts without wildcards."""
    parts = Path(pattern).parts
    fixed = next((n for n, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    return Path(*parts[:fixed]) if fixed else Path()


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
    character offsets and headings. PATHS are files, folders or quoted globs ("docs/**/*.md"). A file
    is known by its path under the folder or glob root given (docs/a/README.md is `a/README.md`), a
    file named directly by its file name: the same content again adds nothing; a changed file of the
    same name replaces the old chunks (the old ones stay visible to searches `--as-of` before).
    memvec reads plain text (any extension), Markdown, HTML and PDF. In a folder, hidden files and
    folders and files it cannot read (binary, empty, too large) are skipped, each named with why. A
    file named directly or by a glob that cannot be read is an error and writes nothing; the exit
    status is then 2. The files' chunks are embedded together, in batches."""
    files, skipped = _files(paths)
    with obj.open() as mem:
        reports = mem.documents(agent).add_many(
            [f.path for f in files], media_type=media_type, tags=tags, names=[f.name for f in files]
        )
    failed = 0
    for file, report in zip(files, reports, strict=True):
        if isinstance(report, MemvecError) and file.walked:
            skipped.append(f"{file.path}: {_reason(report, file)}")
        elif isinstance(report, MemvecError):
            failed += 1
            click.echo(f"error: {report}", err=True)
        elif as_json:
            print_json(dump(report))
        else:
            click.echo(_added(file, report))
    for line in skipped:
        click.echo(f"skipped {line}", err=True)
    if failed:
        raise InvalidInputError(f"{failed} of {len(files)} files could not be read (nothing was written for them)")


def _reason(error: MemvecError, file: Found) -> str:
    """The error without the name it starts with (the line names the file already)."""
    return str(error).removeprefix(f"{file.name}: ").removeprefix(f"{file.path.name}: ")


def _added(file: Found, report: DocumentReport) -> str:
    doc = report.document
    what = (
        "unchanged"
        if not report.created
        else f"replaced document {report.replaced} with"
        if report.replaced
        else "added"
    )
    pages = f", {doc.pages} pages" if doc.pages else ""
    return f"{what} {file.path} as {doc.name!r}: document {doc.id}, {doc.chunks} chunks{pages}"


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
