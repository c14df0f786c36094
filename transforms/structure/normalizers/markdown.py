"""Markdown into blocks, with a CommonMark parser that reports source positions.

Parsing is markdown-it's (the Rust port, ``markdown-it-pyrs``, which reports each node's byte
interval in the source), with only block rules on: ATX and Setext headings, fenced and indented
code, block quotes, lists, GFM pipe tables, thematic breaks, HTML blocks, paragraphs and YAML
front matter. Inline markup is not interpreted (a heading's ``title`` is its raw inline text with
whitespace collapsed). Link reference definitions stay ordinary paragraphs, so no text is ever
consumed without a block.

A document that nests block quotes or lists more than ``MAX_NESTING`` (100) deep on one line, or
indents a line 400 columns, is read as plain paragraphs instead (the parser would overflow its
stack), with a diagnostic.

So the usual traps of real Markdown are the parser's: a ``#`` line inside a fence is code, an
unclosed fence runs to the end of the document, heading levels may skip, and ``\\r\\n`` and a lone
``\\r`` are line breaks. Intervals are converted from UTF-8 bytes to code points, and every block's
start is moved back to the start of its line (so a block inside a quote or an item starts with
its ``>`` or marker), which is where a chunk may begin.

A document longer than ``WINDOW_CHARS`` code points (or ``WINDOW_LINES`` lines with text, or
lines that weigh as much: a line opening many lists, a row of a wide table) is parsed a window of
top-level blocks at a time, with the same blocks as one parse. A top-level list or table longer
than a window is read a window of items or rows at a time: its ``children`` are a
:class:`~transforms.structure.tree.StreamedChildren` that parses it again on each iteration (no
``len``, no indexing), so the normalizer's memory follows the window, not the block. Any other
block that no window of ``MAX_WINDOW_CHARS`` holds (a huge block quote, a list whose one item is
huge) is cut where that window ends, with a diagnostic.

The modules of this normalizer:

- ``markdown`` (this one): :func:`normalize_markdown`, the entry point the structure chunkers
  call through the registry; the window sizes (``WINDOW_CHARS`` ...: module attributes, read
  when used, so a test or a benchmark may set them here); the parser; byte offsets to code
  points (``_Positions``); parser nodes to :class:`~transforms.structure.tree.Node` objects
  (``_convert``), and a block's children parsed again from its own text (``_detached``). A
  document that needs no window is parsed whole here.
- ``markdown_windows``: the windowed parse (``_windowed_pairs``, taken when
  ``_parsed_in_windows`` says so): top-level blocks a window at a time, front matter longer than
  a window, raw blocks (HTML, code) found by a scan, a block cut where the largest window ends.
- ``markdown_streams``: a top-level list or table longer than a window, read a window of items
  or rows at a time.
- ``markdown_window_bounds``: where a window ends (``_window_end``): its size in code points and
  the weight of its lines.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Literal, get_args

from transforms.structure.tree import (
    LINE_BREAK,
    LazyChildren,
    LineStarts,
    Node,
    NormalizedDocument,
    count_line_breaks,
    streamed_document,
)

__all__ = ["normalize_markdown"]

#: The parser's block rules that are on (markdown-it's rule names).
_BlockRule = Literal[
    "heading",
    "lheading",
    "fence",
    "code",
    "blockquote",
    "list",
    "table",
    "hr",
    "html_block",
    "paragraph",
    "front_matter",
]
_BLOCK_RULES: tuple[_BlockRule, ...] = get_args(_BlockRule)
#: Deepest nesting of block quotes and lists (or indentation) handed to the parser.
MAX_NESTING = 100
# A line that opens more than MAX_NESTING containers ("> > - 1. ..."), or is indented that deep.
_DEEP_LINE = re.compile(
    r"(?:[ \t]*(?:>|[-+*]|\d{1,9}[.)])(?=[ \t>]|$)){%d,}|[ \t]{%d,}\S" % (MAX_NESTING + 1, 4 * MAX_NESTING)
)


# Lines that could: eight container markers in a row, or deep indentation. A pattern that starts
# with a literal line break is scanned fast, and almost no line gets past its first characters
# (the lookahead, a character both alternatives start with, turns most lines away in one test).
_DEEP_CANDIDATE = re.compile(
    r"\n(?=[ \t>+*\-\d])(?:(?:[ \t]*(?:>|[-+*]|\d{1,9}[.)])(?=[ \t>])){8}|[ \t]{%d})" % (4 * MAX_NESTING)
)


def _too_deep(text: str) -> tuple[int | None, bool]:
    """The 1-based number of the first line nesting deeper than ``MAX_NESTING`` (or ``None``),
    and whether some line after a ``"\\n"`` opens eight containers or more."""
    starts = [0] + [m.start() + 1 for m in _DEEP_CANDIDATE.finditer(text)]
    for start in starts:
        end = text.find("\n", start)
        line = text[start : end if end != -1 else len(text)]
        if len(line) > MAX_NESTING and any(_DEEP_LINE.match(part) for part in line.split("\r")):
            return text.count("\n", 0, start) + 1, True
    return None, len(starts) > 1


_SPACE = re.compile(r"\s+")
# A surrogate code point: what makes UTF-8 encoding fail (found without encoding a copy).
_SURROGATE = re.compile("[\ud800-\udfff]")


#: Markdown longer than this many code points, or of more than ``WINDOW_LINES`` lines, is parsed
#: a window of top-level blocks at a time (see ``_windowed_blocks``): the parser's tree takes
#: about 15 bytes per byte of prose, but 2.5 to 7 KB per line of a list of short items or a table
#: of short rows.
WINDOW_CHARS = 1 << 20
#: The most lines (line breaks of any kind) a window of ``WINDOW_CHARS`` holds; a window of
#: another size holds as many in proportion (at least one).
WINDOW_LINES = 1 << 13
#: The largest window (code points; lines in proportion, as for ``WINDOW_CHARS``). A top-level
#: block that no window this size holds, and that is not a raw block, list or table read in
#: windows, is cut where such a window ends (see ``_windowed_blocks``).
MAX_WINDOW_CHARS = 2 * WINDOW_CHARS
#: A long document's list, quote or table of at least this many code points keeps its children
#: converted (see ``_detached``); a shorter one parses them again if ever asked.
EAGER_CHILDREN_CHARS = 4096
#: A table of this many cells (in proportion for a window of another size) weighs as much as a
#: window of ``WINDOW_CHARS`` may (see :func:`_window_end`); a cell of the parser's tree takes
#: 500 bytes (a top-level table) to 3 KB (one in a list item), so 2,000 columns over 2,000
#: one-cell rows (16 KB of text) were 1.9 GB.
WINDOW_CELLS = 1 << 16
#: A top-level list or table that a window of ``WINDOW_CHARS`` cannot hold is read a window of
#: this many code points at a time (see ``_streamed_tail``): the parser's tree of a dense table
#: takes several hundred bytes per character.
STREAM_WINDOW_CHARS = 1 << 16


@lru_cache(maxsize=2)
def _parser(front_matter: bool = True):
    import markdown_it_pyrs

    parser = markdown_it_pyrs.MarkdownIt("zero")
    parser.enable_many([rule for rule in _BLOCK_RULES if front_matter or rule != "front_matter"])
    return parser


class _Positions:
    """Byte offsets of the parsed UTF-8 source (``text[offset:limit]``) to code points of ``text``,
    and line starts."""

    def __init__(
        self, text: str, offset: int = 0, limit: int | None = None, line_starts: LineStarts | None = None
    ) -> None:
        self.text = text
        self.offset = offset
        self.limit = len(text) if limit is None else limit
        window = text if offset == 0 and self.limit == len(text) else text[offset : self.limit]
        self.ascii = window.isascii()
        self.line_start = (line_starts or LineStarts(text)).line_start
        self._continuation: list[int] | None = None
        if not self.ascii:
            import numpy as np

            raw = np.frombuffer(window.encode("utf-8"), dtype=np.uint8)
            self._last = len(raw)
            high = raw >= 0x80
            if np.count_nonzero(high) <= len(raw) >> 5:
                # Few non-ASCII characters (most documents): the code point at byte b is b minus
                # the UTF-8 continuation bytes before it, kept as a sorted list of their offsets
                # (at most one entry per 32 bytes, so a transient of 8 bytes per non-ASCII byte).
                high_at = np.flatnonzero(high)
                self._continuation = high_at[(raw[high_at] & 0xC0) == 0x80].tolist()
                return
            del high
            # The code point at byte b is the number of UTF-8 lead bytes before it: kept as one
            # byte per source byte (the count since the start of its 256-byte block, uint8) plus
            # a total per block, not as a 4-byte running sum per byte.
            lead = np.zeros(-(-(len(raw) + 1) // 256) * 256, dtype=np.uint8)
            np.not_equal(raw & 0xC0, 0x80, out=lead[: len(raw)])
            del raw
            blocks = lead.reshape(-1, 256)
            per_block = blocks.sum(axis=1, dtype=np.int64)
            before = np.cumsum(per_block) - per_block + offset
            del per_block
            # Lead bytes before each position of its block: an inclusive sum minus the byte itself,
            # both modulo 256, which is exact because the result is at most 255.
            within = np.cumsum(blocks, axis=1, dtype=np.uint8)
            within -= blocks
            del lead, blocks
            # Memoryviews index to Python ints several times faster than arrays do.
            self._within = within.reshape(-1).data
            self._before = before.data

    def code_point(self, byte_offset: int) -> int:
        """The code point at a UTF-8 byte offset; offsets past the end (the parser reports some
        after expanding a tab) are the end."""
        b = byte_offset if byte_offset < self._last else self._last
        if self._continuation is not None:
            return self.offset + b - bisect_left(self._continuation, b)
        return self._before[b >> 8] + self._within[b]

    def interval(self, srcmap) -> tuple[int, int]:
        """Code points ``[start, end)`` of a byte interval reported by the parser."""
        start, end = srcmap
        if self.ascii:
            start += self.offset
            end += self.offset
            limit = self.limit
            return (start if start < limit else limit), (end if end < limit else limit)
        last = self._last
        start = start if start < last else last
        end = end if end < last else last
        continuation = self._continuation
        if continuation is not None:
            offset = self.offset
            return (offset + start - bisect_left(continuation, start), offset + end - bisect_left(continuation, end))
        before, within = self._before, self._within
        return before[start >> 8] + within[start], before[end >> 8] + within[end]


def _inline_text(node) -> str:
    children = node.children
    if len(children) == 1:
        # The usual heading (every one of docs.parquet's): one text node, nothing under it.
        only = children[0]
        if only.name == "text" and not only.children:
            return _SPACE.sub(" ", only.meta.get("content", "")).strip()
    parts = [child.meta.get("content", "") for child in node.walk() if child.name == "text"]
    return _SPACE.sub(" ", " ".join(parts)).strip()


def _heading_title(node) -> str:
    """A heading's title: its inline text without a trailing pilcrow, the permalink mark that
    HTML converted to Markdown keeps from Sphinx (``# textwrap — Text wrapping and filling¶``).
    Only the title (the heading path) drops it; the chunk's text keeps the line as written."""
    title = _inline_text(node)
    return title[:-1].rstrip() if title.endswith("\u00b6") and len(title) > 1 else title


# A character that is not whitespace (re's \s for str is str.isspace's set): found without a copy.
_NOT_SPACE = re.compile(r"\S")


def _convert_children(node, pos: _Positions, depth: int, end: int, after: int) -> list[Node]:
    out: list[Node] = []
    last_end = None
    for child in node.children:
        converted = _convert(child, pos, depth)
        if converted is not None and after < converted.start and converted.end <= end:
            if last_end is not None and converted.start < last_end:
                continue  # two blocks on one line (e.g. "> - a"): the first holds the line
            out.append(converted)
            last_end = converted.end
    return out


def _convert(node, pos: _Positions, list_depth: int) -> Node | None:
    """One markdown-it node as a :class:`Node`, or ``None`` for a node without a source interval."""
    srcmap = node.srcmap
    if srcmap is None:
        return None
    text = pos.text
    start, end = pos.interval(srcmap)
    if start and text[start - 1] != "\n":
        start = pos.line_start(start)
    while end > start and text[end - 1] in "\r\n":
        end -= 1
    if end <= start:
        return None
    name = node.name
    if name == "paragraph":
        # A line of only Unicode whitespace CommonMark does not count as blank (form feed,
        # U+00A0, U+2028, ...) is a paragraph to the parser; it holds no text: no block.
        if text[start].isspace() and _NOT_SPACE.search(text, start, end) is None:
            return None
        return Node("paragraph", start, end)
    kind = _KINDS.get(name)
    if kind is None:
        return Node("paragraph", start, end)
    if kind == "heading":
        return Node("heading", start, end, level=int(node.meta.get("level", 1)), title=_heading_title(node))
    if kind == "list":
        return Node(
            "list",
            start,
            end,
            LazyChildren(_convert_children, node, pos, list_depth + 1, end, -1),
            level=list_depth + 1,
        )
    if kind == "list_item":
        return Node("list_item", start, end, LazyChildren(_convert_children, node, pos, list_depth, end, start))
    if kind == "fence":
        line_break = LINE_BREAK.search(text, start, end)  # (a lone "\r" ends the line too)
        first_line = text[start : line_break.start() if line_break else end].strip()
        info = str(node.meta.get("info", "")).strip()
        return Node("code", start, end, fence=first_line, language=info.split()[0] if info else "")
    if kind == "quote":
        return Node("quote", start, end, LazyChildren(_convert_children, node, pos, list_depth, end, -1))
    if kind == "table":
        return _convert_table(node, pos, start, end)
    return Node(kind, start, end)  # code (indented), rule, html


#: Parser node names (other than ``paragraph``) and what :func:`_convert` makes of them; any
#: other name is a paragraph.
_KINDS = {
    "heading": "heading",
    "lheading": "heading",
    "fence": "fence",
    "code_block": "code",
    "blockquote": "quote",
    "bullet_list": "list",
    "ordered_list": "list",
    "list_item": "list_item",
    "table": "table",
    "hr": "rule",
    "front_matter": "rule",
    "html_block": "html",
}


def _convert_table(node, pos: _Positions, start: int, end: int) -> Node:
    parts = node.children
    has_header = any(part.name == "thead" and part.srcmap is not None for part in parts)

    def rows() -> list[Node]:
        out: list[Node] = []
        for part in parts:
            if part.srcmap is None:
                continue
            for row in (
                (_convert_row(part, pos),) if part.name == "thead" else (_convert_row(r, pos) for r in part.children)
            ):
                if row is not None and row.end <= end and (not out or row.start >= out[-1].end):
                    out.append(row)
        return out

    return Node("table", start, end, LazyChildren(rows), header_rows=1 if has_header else 0)


def _convert_row(node, pos: _Positions) -> Node | None:
    if node.srcmap is None:
        return None
    start, end = pos.interval(node.srcmap)
    start = pos.line_start(start)
    while end > start and pos.text[end - 1] in "\r\n":
        end -= 1
    # (A row of only Unicode whitespace, e.g. a form feed line after a table, holds no text.)
    return Node("table_row", start, end) if end > start and not pos.text[start:end].isspace() else None


def normalize_markdown(content: str) -> NormalizedDocument:
    """Normalize Markdown (CommonMark plus GFM pipe tables and front matter) into blocks.

    Args:
        content: The Markdown source.

    Returns:
        A verbatim :class:`NormalizedDocument` (``text`` is ``content``); intervals in code points.
        For a document parsed in windows (see the module docstring) its ``blocks`` are a
        :class:`~transforms.structure.tree.StreamedChildren` (each pass parses the document again,
        a window at a time, so the top-level blocks are never all held) and its ``diagnostics``
        are read from a pass; so are the ``children`` of a top-level list or table longer than a
        window: iterate them, once per pass; every iteration parses the block again.

    Raises nothing for any text (a document too deeply nested for the parser is read as plain
    paragraphs, with a diagnostic).
    """
    source = content
    deep, nested = _too_deep(content)
    windowed = _parsed_in_windows(content, nested)
    if windowed and not content.isascii() and _SURROGATE.search(content):
        source = _without_surrogates(content)
    if deep is not None:
        # The Rust parser recurses once per nesting level and overflows its stack (a crash, not
        # an exception) a few thousand levels down; such a document is read as plain paragraphs.
        from transforms.structure.normalizers.text import normalize_text

        line = deep
        plain = normalize_text(content)
        return NormalizedDocument(
            text=content,
            blocks=plain.blocks,
            content_format="markdown",
            diagnostics=(f"line {line} nests more than {MAX_NESTING} block quotes or lists: read as plain paragraphs",),
        )
    if windowed:
        # Parsed a window at a time on every pass over the blocks: never all held.
        from transforms.structure.normalizers.markdown_windows import _windowed_pairs

        return streamed_document(content, _windowed_pairs, source, content_format="markdown", resumable=True)
    try:
        pos = _Positions(source)  # encodes a non-ASCII text to UTF-8: fails on a surrogate
    except UnicodeEncodeError:
        source = _without_surrogates(content)
        pos = _Positions(source)
    blocks = tuple(_kept_blocks(_convert(node, pos, 0) for node in _parser().tree(source).children))
    return NormalizedDocument(text=content, blocks=blocks, content_format="markdown")


def _parsed_in_windows(content: str, nested: bool) -> bool:
    """Whether ``content`` is parsed a window at a time: it is longer than :data:`WINDOW_CHARS`
    code points or :data:`WINDOW_LINES` lines, or its lines weigh as much (a wide table over many
    rows, lines opening many lists: see ``markdown_window_bounds._window_end``). ``nested``: some
    line after a ``"\\n"`` opens eight containers or more (:func:`_too_deep`)."""
    from transforms.structure.normalizers.markdown_window_bounds import _nested_lines, _widest_delimiter_row

    line_breaks = count_line_breaks(content, 0, len(content))
    if len(content) > WINDOW_CHARS or line_breaks > WINDOW_LINES:
        return True
    # A wide table over many rows, or lines opening many lists, can make the parse tree of a
    # short document as large as a window's may be; what is scanned for here is what a window
    # holds less of then. A table's width is at most its pipes plus one.
    lines = line_breaks + 1
    if (content.count("|") + 1) * lines > WINDOW_CELLS and _widest_delimiter_row(
        content, 0, len(content)
    ) * lines > WINDOW_CELLS:
        return True
    if nested or ("\r" in content and content.count("\r") > content.count("\r\n")):
        # (_too_deep finds such lines after a "\n" only: a lone "\r" is looked at here)
        return lines + sum(extra for _, extra in _nested_lines(content, 0, len(content))) > WINDOW_LINES
    return False


def _kept_blocks(converted: Iterable[Node | None]) -> Iterator[Node]:
    """The converted top-level blocks, in order, without the ``None`` ones and any that starts
    before the end of the one kept before it."""
    last_end = -1
    for block in converted:
        if block is None or block.start < last_end:
            continue
        last_end = block.end
        yield block


def _without_surrogates(content: str) -> str:
    """Lone surrogates cannot cross into the parser; each becomes one "?" so code-point
    positions are unchanged."""
    return content.encode("utf-8", "replace").decode("utf-8")


def _detached(node: Node | None, source: str, line_starts: LineStarts) -> Node | None:
    """``node`` (a top-level block of a window) without references to the window's parse tree.

    A block with children gets them from a parse of its own text, ``source[node.start:node.end]``,
    on first use: a top-level block starts in the parser's initial state and its extent is
    decided, so that parse gives the same children (``tests/test_normalize_markdown.py``
    compares them with a whole parse's). Children are the bulk of a document's nodes, and the
    packer looks into a block only when it does not fit a chunk. A block of
    :data:`EAGER_CHILDREN_CHARS` or more, which is likely not to fit, has its children converted
    now instead (parsing it again would cost a second parse of most of a table-heavy document).
    """
    if node is not None and node.kind in ("list", "quote", "table"):
        if node.end - node.start >= EAGER_CHILDREN_CHARS:
            _materialize(node)  # likely to be split: converted now, from the window's parse
        else:
            node.children = LazyChildren(_reparsed_children, node.start, node.end, source, line_starts)
    return node


class _PastTheEnd(_Positions):
    """:class:`_Positions` for a parse of ``text[offset:limit]`` that stands for a part of a longer
    parse: an end (or start) the parser reports past the parsed text (after expanding a tab) is
    not cut to ``limit`` but goes on into the text after it, as in the longer parse (one code point a byte:
    such an end passes the limit by at most three bytes)."""

    def __init__(self, text: str, offset: int, limit: int, line_starts: LineStarts) -> None:
        super().__init__(text, offset, limit, line_starts)
        self._parsed_bytes = (limit - offset) if self.ascii else self._last

    def interval(self, srcmap) -> tuple[int, int]:
        start, end = super().interval(srcmap)
        past = srcmap[1] - self._parsed_bytes
        if past > 0:
            end = min(self.limit + past, len(self.text))
            past = srcmap[0] - self._parsed_bytes
            if past > 0:  # (a tight item's text after a tab: wholly past the block, as in the longer parse)
                start = min(self.limit + past, len(self.text))
        return start, end


def _reparsed_children(start: int, end: int, source: str, line_starts: LineStarts) -> tuple[Node, ...]:
    pos = _PastTheEnd(source, start, end, line_starts)
    for parsed in _parser(front_matter=False).tree(source[start:end]).children:
        converted = _convert(parsed, pos, 0)
        if converted is not None and converted.start == start:
            _materialize(converted)
            return tuple(converted.children)
    return ()


def _materialize(node: Node) -> None:
    """Convert every lazily converted descendant of ``node`` now (releasing the parser's nodes)."""
    for child in node.children:
        _materialize(child)
