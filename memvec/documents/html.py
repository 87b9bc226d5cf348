"""HTML to text with its headings, by the standard library's tolerant parser. A page's navigation, and
its banner and footer outside the article, are left out: `Home | Products | Support` answers nothing,
yet its words would make it a chunk found for them (a page that is nothing else keeps them)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from memvec.documents.formats import Block, ParsedDocument, heading_title

_SKIPPED = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object"}
_BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "nav",
    "aside",
    "li",
    "ul",
    "ol",
    "table",
    "tr",
    "td",
    "th",
    "pre",
    "blockquote",
    "br",
    "hr",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "details",
    "summary",
    "address",
    "caption",
}
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_CONTENT = {"article", "main"}  # a header or footer inside one heads or closes the content, and stays
_PAGE_FRAME = {"header", "footer"}
_FRAME_ROLES = {"navigation", "banner", "contentinfo"}
_SPACE = re.compile(r"\s+")


class _Walker(HTMLParser):
    """Collects paragraphs of visible text; a heading element becomes its own block and sets the
    heading path of what follows it (kept while deeper headings come and go)."""

    def __init__(self, *, keep_frame: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.keep_frame = keep_frame
        self.frames: list[str] = []  # the open elements being left out as page frame, innermost last
        self.content = 0
        self.parts: list[str] = []
        self.length = 0
        self.blocks: list[Block] = []
        self.headings: list[tuple[int, str]] = []
        self.skipping = 0
        self.current: list[str] = []
        self.in_heading: int | None = None
        self.in_pre = 0
        self.title: list[str] = []
        self.in_title = False

    def _is_frame(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        if self.keep_frame:
            return False
        role = (dict(attrs).get("role") or "").strip().lower()
        if tag == "nav" or role == "navigation":
            return True
        return not self.content and (tag in _PAGE_FRAME or role in _FRAME_ROLES)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        self.content += tag in _CONTENT
        if (self.frames and tag == self.frames[-1]) or (not self.frames and self._is_frame(tag, attrs)):
            self.frames.append(tag)  # nested elements of the frame's own tag are counted to find its end
            self.flush()
            self.skipping += 1
        elif tag in _SKIPPED:
            self.skipping += 1
        elif tag in _HEADINGS:
            self.flush()
            self.in_heading = _HEADINGS[tag]
        elif tag in _BLOCKS:
            self.flush()
            self.in_pre += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        self.content = max(0, self.content - (tag in _CONTENT))
        if self.frames and tag == self.frames[-1]:
            self.frames.pop()
            self.skipping = max(0, self.skipping - 1)
            if not self.frames:
                self.current = []
        elif tag in _SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif tag in _HEADINGS and self.in_heading is not None:
            title = heading_title(_SPACE.sub(" ", "".join(self.current)))
            level, self.in_heading = self.in_heading, None
            if title:
                self.headings = [h for h in self.headings if h[0] < level] + [(level, title)]
            self.flush()
        elif tag in _BLOCKS:
            self.in_pre = max(0, self.in_pre - (tag == "pre"))
            self.flush()

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if not self.skipping:
            self.current.append(data)

    def flush(self) -> None:
        raw = "".join(self.current)
        self.current = []
        text = raw.strip("\n") if self.in_pre else _SPACE.sub(" ", raw).strip()
        if not text.strip():
            return
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        start = self.length
        self.parts.append(text)
        self.length += len(text)
        self.blocks.append(Block(start, self.length, None, tuple(t for _, t in self.headings)))


def parse_html(markup: str) -> ParsedDocument:
    walker = _walk(markup, keep_frame=False)
    if not walker.blocks:  # a page that is only navigation (or a banner) keeps it
        walker = _walk(markup, keep_frame=True)
    title = _SPACE.sub(" ", "".join(walker.title)).strip() or None
    return ParsedDocument(text="".join(walker.parts), media_type="text/html", blocks=walker.blocks, title=title)


def _walk(markup: str, *, keep_frame: bool) -> _Walker:
    walker = _Walker(keep_frame=keep_frame)
    walker.feed(markup)
    walker.close()
    walker.flush()
    return walker
