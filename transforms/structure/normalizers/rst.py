"""reStructuredText into blocks, with a fast line-based scanner (no docutils).

The scanner looks at lines and their indentation only; inline markup is never interpreted (a
heading's ``title`` is its raw text with whitespace collapsed). It follows docutils where it can
do so cheaply. Recognized:

- **Section titles**: a title line with an underline of one repeated ASCII punctuation
  character, optionally with an overline of the same character, at column 0 (an overlined title
  may be inset). The underline must be at least 3 characters and at least as long as the title,
  or at least 4 characters (docutils accepts a short underline of 4 or more with a warning; so do
  we, with a diagnostic). Levels follow the order in which each (character, overline or not)
  style first appears, like docutils, capped at 6. ``heading`` covers overline, title and
  underline.
- **Transitions**: a line of 4 or more repeated punctuation characters between blank lines:
  ``rule``.
- **Literal blocks**: the indented block after a paragraph ending in ``::`` (and blank lines) is
  a ``code`` block with ``fence`` and ``language`` empty; the paragraph stays a paragraph.
- **Code directives** ``.. code-block::``, ``.. code::`` and ``.. sourcecode::`` with their
  indented body (options included): ``code`` with ``language`` the directive's argument and
  ``fence`` the directive line as written plus ``"\\n"`` (so a split code block re-opens with the
  directive line and a blank line).
- **Other explicit markup** (any other directive, comments, hyperlink targets, footnotes,
  citations, substitution definitions) with its indented body: one ``rule`` block. Their bodies
  are not parsed (in the Python docs that includes every ``.. function::``/``.. method::`` body).
- **Bullet lists** (``-``, ``*``, ``+``, ``•``, ``‣``, ``⁃``) and **enumerated lists**
  (``1.``, ``#.``, ``a)``, ``(iv)`` ...): ``list`` (``level`` = list nesting depth, 1 outermost)
  of ``list_item``; an item's first paragraph is its own text and its later blocks (nested
  lists, paragraphs, literal blocks ...) are its children. An item ends at the first non-blank
  line not indented past its marker. A different bullet character or enumeration format starts a
  new list. An enumerated item needs a blank, indented or next-item line after it (as in
  docutils, so "A. Smith wrote" is prose).
- **Definition lists**: a one-line term directly followed by a more indented definition: a
  ``list`` whose items are term plus definition, the definition's blocks as children (field
  lists whose body continues on an indented line read the same way).
- **Grid tables** (``+---+`` borders, ``+===+`` ending the header) and **simple tables**
  (``===  ===`` borders of at least two columns): ``table`` of ``table_row``. Grid: the header
  row spans the top border through the ``+===+`` line, each body row its content lines and its
  bottom border; without a header the first row also holds the top border; a row with row spans
  runs to the next full border. Simple: the header row spans the top border through the second
  border, each body row its lines (a line with an empty first column continues the row above, as
  in docutils) and the last row holds the closing border. ``header_rows`` is 1 with a header.
- **Block quotes**: an indented block not after ``::``: ``quote`` with its blocks as children.
- **Paragraphs**: everything else, as maximal runs of non-blank lines (a run is never
  interrupted: as in docutils, a list or title needs a blank line before it).

Not recognized (they read as paragraphs or stay inside other blocks): quoted literal blocks
(unindented lines all starting with the same punctuation, e.g. ``>``), doctest blocks, line
blocks, option lists, field lists as such, inline markup and substitutions, and anything inside
a directive body. Only the three directives above are code: ``.. doctest::``, ``.. testcode::``,
``.. literalinclude::``, ``.. parsed-literal::``, CSV and list tables are ``rule`` like every
other directive. ``.. highlight::`` does not give literal blocks a language. Titles are only
found at column 0, never inside quotes or list items (docutils does not allow them there either).
Quotes, lists and items nested more than 60 deep are kept as one ``rule`` block (a diagnostic
says where).

Lines end at ``"\\n"``, ``"\\r\\n"`` or a lone ``"\\r"`` only. Indentation is measured in columns
with tabs expanded to multiples of 8 (docutils' rule); a line of whitespace only is blank.
``text`` is the content unchanged; every interval is in code points, starts at a line start and
ends at the end of a non-blank line (its line break excluded). Every non-blank line lies inside
some top-level block.

A document longer than ``LARGE_CHARS`` code points is scanned the same way with bounded memory:
its lines, their offsets and indentation are made a page (``PAGE_LINES`` lines or ``PAGE_CHARS``
code points) at a time, a few pages kept, and a list, list item, definition list, quote or table
whose children span more than ``STREAM_CHARS`` code points gets them as a
:class:`~transforms.structure.tree.StreamedChildren` that scans its lines again on each iteration
(no ``len``, no indexing), and so are the top-level blocks themselves (each pass over them scans
the document again). The blocks are the same as in one pass over the whole document.

The modules of this normalizer: ``rst`` (this one) holds :func:`normalize_rst`, the entry point
the structure chunkers call through the registry, the sizes (``LARGE_CHARS`` ...: module
attributes, read when used, so a test or a benchmark may set them here) and a large document's
lines made a page at a time (``_Pages``, ``_Column``, read by ``_large_blocks``, the path taken
past ``LARGE_CHARS``); ``rst_blocks`` holds the block scanner both paths run (``_Scanner``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator

from transforms.structure.normalizers.text import split_lines
from transforms.structure.tree import (
    LINE_BREAK,
    Node,
    NormalizedDocument,
    count_line_breaks,
    streamed_document,
)

__all__ = ["normalize_rst"]

#: A document longer than this many code points is scanned with bounded memory: its lines a page
#: at a time, huge blocks' children streamed (see the module docstring). Shorter ones keep every
#: line (about 110 bytes a line) and every block for the scan, which is faster.
LARGE_CHARS = 1 << 20
#: The most lines in a page of a large document's line data (``_Pages``).
PAGE_LINES = 1 << 12
#: A page of line data ends at the first line start this many code points after its own start
#: (if it has not reached ``PAGE_LINES`` lines before).
PAGE_CHARS = 1 << 18
#: In a large document, a block whose children span more than this many code points (from the
#: first child's start to the last one's end) gets them as a ``StreamedChildren``.
STREAM_CHARS = 1 << 16
#: Pages of line data kept at a time.
_PAGES_KEPT = 4


def normalize_rst(content: str) -> NormalizedDocument:
    """Normalize reStructuredText into blocks with a line-based scanner.

    Args:
        content: The reStructuredText source.

    Returns:
        A verbatim :class:`NormalizedDocument` (``text`` is ``content``); intervals in code points.
        Past ``LARGE_CHARS`` its ``blocks`` are a :class:`~transforms.structure.tree.StreamedChildren`
        (every pass scans the document again, a page at a time; the top-level blocks are never
        all held) and its ``diagnostics`` are read from such a pass.
    """
    if len(content) > LARGE_CHARS:
        # Scanned again on every pass over the blocks: they are never all held.
        return streamed_document(content, _large_blocks, content, content_format="rst", resumable=True)
    from transforms.structure.normalizers.rst_blocks import _Scanner

    lines, starts = split_lines(content)
    scanner = _Scanner(lines, starts, [_indent(line) for line in lines], len(lines), stream=False)
    blocks = tuple(scanner.iter_blocks(0, scanner.count, 0, 0, 0, False))
    return NormalizedDocument(
        text=content,
        blocks=blocks,
        content_format="rst",
        verbatim=True,
        diagnostics=scanner.diagnostics(),
    )


def _large_blocks(content: str, notes: list[str], resume: tuple | None) -> Iterator[tuple[tuple | None, Node]]:
    """The top-level blocks of a large document, from a scan of its lines a page at a time, each
    with a mark (``None``, or for a title ``(its first line, the title styles met before it, the
    scanner's simple-table memo)``, which as ``resume`` scans again from that title on with
    that state); then its diagnostics are added to ``notes``."""
    from transforms.structure.normalizers.rst_blocks import _Scanner

    pages = _Pages(content)
    scanner = _Scanner(_Column(pages, 0), _Column(pages, 1), _Column(pages, 2), pages.count, stream=True)
    first = 0
    if resume is not None:
        first, scanner.styles_met, scanner.simple_table_failure = resume
        scanner.styles = dict(scanner.styles_met)
    for node in scanner.iter_blocks(first, scanner.count, 0, 0, 0, False):
        yield (scanner.top_mark if node.kind == "heading" else None), node
    notes.extend(scanner.diagnostics())


class _Pages:
    """A large document's lines, line starts and indentations, made a page at a time.

    A page holds at most ``PAGE_LINES`` lines and ends at the first line start at least
    ``PAGE_CHARS`` code points after its own (so long lines make pages of fewer lines), as three
    lists (as ``split_lines`` and ``_indent`` make them for the whole text). The last
    ``_PAGES_KEPT`` pages used are kept. Only where each page starts (code point and line number)
    is held for the whole text.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        most, least = PAGE_LINES, max(PAGE_CHARS, 1)
        skip = re.compile((r"(?:[^\r\n]*(?:\r\n?|\n)){%d}" if "\r" in text else r"(?:[^\n]*\n){%d}") % most)
        self.count = count_line_breaks(text, 0, len(text)) + 1  # lines, as split_lines counts them
        page_starts, page_lines = [0], [0]
        start = 0
        while True:
            after = LINE_BREAK.search(text, start + least - 1)
            if after is None:
                if count_line_breaks(text, start, len(text)) < most:
                    break  # the rest is the last page
                end, lines = _skipped(skip, text, start), most
            else:
                end = after.end()
                lines = count_line_breaks(text, start, end)
                if lines > most:
                    end, lines = _skipped(skip, text, start), most
            page_starts.append(end)
            page_lines.append(page_lines[-1] + lines)
            start = end
        self.page_starts, self.page_lines = page_starts, page_lines
        self.kept: dict[int, tuple[list, list, list]] = {}
        self.lo = self.hi = 0  # the line range of the page used last

    def page_of(self, i: int) -> tuple[list, list, list]:
        """The page holding line ``i``, made current."""
        if not 0 <= i < self.count:
            raise IndexError(i)
        p = bisect_right(self.page_lines, i) - 1
        page = self.kept.pop(p, None)
        if page is None:
            page = self.make(p)
            if len(self.kept) >= _PAGES_KEPT:
                del self.kept[next(iter(self.kept))]  # the least recently used
        self.kept[p] = page
        self.lo = self.page_lines[p]
        self.hi = self.lo + len(page[0])
        return page

    def make(self, p: int) -> tuple[list, list, list]:
        text, page_starts = self.text, self.page_starts
        first = page_starts[p]
        last_page = p + 1 >= len(page_starts)
        lines, starts = split_lines(text[first : len(text) if last_page else page_starts[p + 1]])
        if not last_page:
            # The piece ends with its last line's break: split_lines adds an empty line after it.
            lines.pop()
            starts.pop()
        return lines, [start + first for start in starts], [_indent(line) for line in lines]


def _skipped(lines: re.Pattern[str], text: str, start: int) -> int:
    """The end of the match of ``lines`` (a run of line breaks) at ``start``.

    Raises:
        ValueError: ``text`` holds fewer lines after ``start`` than ``lines`` matches (the
            caller counted them first: never expected).
    """
    found = lines.match(text, start)
    if found is None:
        raise ValueError(f"fewer lines than a page at {start}")
    return found.end()


class _Column:
    """One of a ``_Pages``'s three per-line lists (0 lines, 1 starts, 2 indents) as a sequence
    indexed by line number (no negative indices, no slices). It keeps its own current page, so
    the usual access (a line of the page used last) is one comparison and one index."""

    __slots__ = ("field", "hi", "lo", "pages", "values")

    def __init__(self, pages: _Pages, field: int) -> None:
        self.pages = pages
        self.field = field
        self.lo = self.hi = 0
        self.values: list = []

    def __getitem__(self, i: int):
        if self.lo <= i < self.hi:
            return self.values[i - self.lo]
        pages = self.pages
        self.values = pages.page_of(i)[self.field]
        self.lo, self.hi = pages.lo, pages.hi
        return self.values[i - self.lo]

    def __len__(self) -> int:
        return self.pages.count

    def levels(self, lo: int, hi: int) -> Iterator[int]:
        """The values of lines ``[lo, hi)``, a page at a time."""
        pages = self.pages
        while lo < hi:
            values = pages.page_of(lo)[self.field]
            top = min(hi, pages.hi)
            yield from values[lo - pages.lo : top - pages.lo]
            lo = top


def _indent(line: str) -> int:
    """Indentation of ``line`` in columns (tabs to multiples of 8), or -1 when it is blank."""
    if not line:
        return -1
    first = line[0]
    if first != " " and first != "\t" and not first.isspace():
        return 0
    rest = line.lstrip()
    if not rest:
        return -1
    lead = line[: len(line) - len(rest)]
    return len(lead.expandtabs(8)) if "\t" in lead else len(lead)
