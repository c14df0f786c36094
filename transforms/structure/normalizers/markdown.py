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
lines that weigh as much: a line opening many lists, a row of a wide table; see
``_window_end``) is parsed a window of top-level blocks at a time, with the same blocks as one
parse. A top-level list or table longer than a window is read a window of items or rows at a
time: its ``children`` are a :class:`~transforms.structure.tree.StreamedChildren` that parses
it again on each iteration (no ``len``, no indexing), so the normalizer's memory follows the
window, not the block. Any other block that no window of ``MAX_WINDOW_CHARS`` holds (a huge
block quote, a list whose one item is huge) is cut where that window ends, with a diagnostic.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from functools import lru_cache
from itertools import islice

from transforms.structure.tree import (
    LINE_BREAK,
    LazyChildren,
    LineStarts,
    Node,
    NormalizedDocument,
    StreamedChildren,
    count_line_breaks,
    streamed_document,
)

__all__ = ["normalize_markdown"]

_BLOCK_RULES = (
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
)
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
                high = np.flatnonzero(high)
                self._continuation = high[(raw[high] & 0xC0) == 0x80].tolist()
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
            self._within = memoryview(within.reshape(-1))
            self._before = memoryview(before)

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
        return Node("heading", start, end, level=int(node.meta.get("level", 1)), title=_inline_text(node))
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
                (_convert_row(part, pos),)
                if part.name == "thead"
                else map(lambda r: _convert_row(r, pos), part.children)
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
    line_breaks = count_line_breaks(content, 0, len(content))
    windowed = len(content) > WINDOW_CHARS or line_breaks > WINDOW_LINES
    deep, nested = _too_deep(content)
    if not windowed:
        # A wide table over many rows, or lines opening many lists, can make the parse tree of a
        # short document as large as a window's may be (see _window_end); what is scanned for
        # here is what a window holds less of then. A table's width is at most its pipes plus one.
        lines = line_breaks + 1
        if (content.count("|") + 1) * lines > WINDOW_CELLS:
            windowed = _widest_delimiter_row(content, 0, len(content)) * lines > WINDOW_CELLS
        if not windowed and (nested or ("\r" in content and content.count("\r") > content.count("\r\n"))):
            # (_too_deep finds such lines after a "\n" only: a lone "\r" is looked at here)
            windowed = lines + sum(extra for _, extra in _nested_lines(content, 0, len(content))) > WINDOW_LINES
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
        return streamed_document(content, _windowed_pairs, source, content_format="markdown", resumable=True)
    try:
        pos = _Positions(source)  # encodes a non-ASCII text to UTF-8: fails on a surrogate
    except UnicodeEncodeError:
        source = _without_surrogates(content)
        pos = _Positions(source)
    blocks = tuple(_kept_blocks(_convert(node, pos, 0) for node in _parser().tree(source).children))
    return NormalizedDocument(text=content, blocks=blocks, content_format="markdown")


def _windowed_pairs(
    source: str, notes: list[str], resume: tuple[int, int, int] | None
) -> Iterator[tuple[tuple[int, int, int] | None, Node]]:
    """The top-level blocks of :func:`_windowed_blocks` as :func:`_kept_blocks` keeps them, each
    with a mark: for a heading, ``(window start, window size, heading start)``, which as
    ``resume`` gives the blocks again from that heading on; ``None`` for any other block."""
    window = [0, 0]
    target = -1 if resume is None else resume[2]
    for block in _kept_blocks(_windowed_blocks(source, notes, window, None if resume is None else resume[:2])):
        if block.start >= target:  # (a resumed pass starts at the heading's window, before it)
            yield ((window[0], window[1], block.start) if block.kind == "heading" else None), block


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


def _windowed_blocks(
    source: str, notes: list[str], window: list[int] | None = None, resume: tuple[int, int] | None = None
) -> Iterator[Node | None]:
    """The top-level blocks of a long document, parsed a window of about :data:`WINDOW_CHARS` at a time.

    ``window``, if given, is set to ``[start, size]`` of the window each block comes from (code
    points); given back as ``resume``, that pair makes the blocks from that window on again
    (the same ones: a window's blocks depend on its start and size only).

    A window ends at a line start; its last two top-level blocks are dropped (the text after the
    window could still extend them) and the next window starts at the line of the first one
    dropped. A top-level block starts in the parser's initial state (only the document open), so
    from there the parse is the same as the whole document's; front matter is recognized in the
    first window only. Each window's top-level blocks are converted and its parse tree freed, so
    memory follows the window, not the document; the children of a block (a list's items, a
    table's rows, a quote's blocks) are parsed again from the block's own text if the packer
    asks for them (see :func:`_detached`), which it does only for a block too large for a chunk.

    A window ends at the first line break past ``WINDOW_CHARS`` code points, or after
    ``WINDOW_LINES`` lines if that comes first (a list of short items or a table of short rows
    makes a parse tree of kilobytes a line; see :func:`_window_end`).

    A window that holds fewer than three blocks ends in a block the window cannot hold. When that
    block is raw (an HTML block, a fenced or an indented code block), its end depends on its
    first line alone, so it is found by :func:`_raw_block_end` (a scan for the closing line, the
    parser's own rule) without parsing the rest of it, and the next window starts after it: a
    raw block of any size costs one window. When it is a list or a GFM table, its extent is
    found by parsing it a window of :data:`STREAM_WINDOW_CHARS` at a time, items or rows, and
    its children are :class:`~transforms.structure.tree.StreamedChildren` that parse it so
    again on every iteration (:func:`_streamed_tail`): a list or table of any size costs one
    window at a time. Any other block (one huge quote or paragraph, a list whose one item is
    longer than a window) doubles the window until it holds three blocks or reaches the end,
    up to :data:`MAX_WINDOW_CHARS`: a block that even that window cannot hold is cut where the
    window ends (its parse stops there and the next window starts a new block; ``notes`` gets
    a diagnostic), so memory stays bounded by that window's tree whatever the document.
    """
    line_starts = LineStarts(source)
    start, size, n = 0, WINDOW_CHARS, len(source)
    if resume is not None:
        start, size = resume
    front = _front_matter(source, line_starts) if start == 0 else None
    if front is not None:
        yield front
        start = _after_line_break(source, front.end)
    while start < n:
        if window is not None:
            window[0], window[1] = start, size
        end = _window_end(source, start, size)
        last = end == n
        nodes = list(_parser(front_matter=start == 0).tree(source[start:end]).children)
        pos = _Positions(source, start, end, line_starts)
        if not last and len(nodes) < 3:
            raw = _raw_tail(source, nodes, pos) or _streamed_tail(source, nodes, pos, line_starts)
            if raw is None and size >= MAX_WINDOW_CHARS:
                yield from _cut_at_window_end(nodes, pos, source, line_starts, notes)
                start, size = end, WINDOW_CHARS
                continue
            if raw is None:
                size *= 2
                continue
            converted, next_start = raw
            for node in nodes[:-1]:
                yield _detached(_convert(node, pos, 0), source, line_starts)
            yield converted
            if next_start >= n:
                return
            start, size = next_start, WINDOW_CHARS
            continue
        if not last:
            dropped = next((node.srcmap for node in nodes[-2:] if node.srcmap is not None), None)
            next_start = line_starts.line_start(pos.interval(dropped)[0]) if dropped else start
            if next_start <= start and size >= MAX_WINDOW_CHARS:
                yield from _cut_at_window_end(nodes, pos, source, line_starts, notes)
                start, size = end, WINDOW_CHARS
                continue
            if next_start <= start:
                size *= 2
                continue
        for node in nodes if last else nodes[:-2]:
            yield _detached(_convert(node, pos, 0), source, line_starts)
        if last:
            return
        start, size = next_start, WINDOW_CHARS


# Front matter's first line (the parser's rule: any indentation, three dashes or more, anything after).
_FRONT_MATTER_OPENING = re.compile(r"[ \t]*(-{3,})")


def _after_line_break(source: str, position: int) -> int:
    """Past the line break at ``position`` (``position`` itself when none is there)."""
    line_break = LINE_BREAK.match(source, position)
    return line_break.end() if line_break else position


def _front_matter(source: str, line_starts: LineStarts) -> Node | None:
    """The front matter of a long document when the first window cannot hold it, else ``None``.

    Front matter is decided by its closing line (a later line of at least as many dashes, any
    indentation, anything after): a first window that ends before it would read ``---`` as a
    thematic break and the front matter as other blocks. The text up to the first such line is
    parsed alone (front matter is one node, whatever its length), if it fits
    :data:`MAX_WINDOW_CHARS`; the next window starts after it.
    """
    opening = _FRONT_MATTER_OPENING.match(source)
    if opening is None:
        return None
    closing = re.compile(r"(?:\r\n?|\n)[ \t]*-{%d,}" % len(opening.group(1))).search(source, opening.end())
    if closing is None:
        return None
    end = _after_line_break(source, _line_end(source, closing.end()))
    if end <= _window_end(source, 0, WINDOW_CHARS) or end > MAX_WINDOW_CHARS:
        return None  # the first window holds it (or it is cut as any huge block)
    nodes = _parser(front_matter=True).tree(source[:end]).children
    if len(nodes) != 1 or nodes[0].name != "front_matter" or nodes[0].srcmap is None:
        return None  # (never expected: the parser's rule is the scan's)
    return _convert(nodes[0], _Positions(source, 0, end, line_starts), 0)


def _cut_at_window_end(
    nodes: list, pos: _Positions, source: str, line_starts: LineStarts, notes: list[str]
) -> Iterator[Node | None]:
    """Every block of a window of :data:`MAX_WINDOW_CHARS`, the last one cut where the window
    ends (the next window starts there, a line start); a diagnostic names the line. The cut
    block's children are :class:`~transforms.structure.tree.StreamedChildren` parsed again from
    its own text on every iteration, so the parts of a huge block are not all kept converted."""
    converted = [_convert(node, pos, 0) for node in nodes]
    last = next((node for node in reversed(converted) if node is not None), None)
    converted = [_detached(node, source, line_starts) if node is not last else node for node in converted]
    if last is not None:
        if last.kind in ("list", "quote", "table"):
            last.children = StreamedChildren(_reparsed_children, last.start, last.end, source, line_starts)
        line = count_line_breaks(source, 0, last.start) + 1
        lines = max(1, WINDOW_LINES * MAX_WINDOW_CHARS // WINDOW_CHARS)
        notes.append(
            f"the block on line {line} is longer than a window of {MAX_WINDOW_CHARS} code points "
            f"or {lines} lines (a line of a wide table or opening many containers weighs more): "
            "cut where each window ends"
        )
    yield from converted


#: A long document's list, quote or table of at least this many code points keeps its children
#: converted (see ``_detached``); a shorter one parses them again if ever asked.
EAGER_CHILDREN_CHARS = 4096
#: Parser node names of raw blocks: their end is decided by their first line (see _raw_block_end).
_RAW = frozenset({"html_block", "fence", "code_block"})
# CommonMark's HTML block kinds 1 to 5 (as markdown-it reads them: kind 4 needs an upper-case
# letter) and the line that ends each; kinds 6 and 7 end before a blank line.
_HTML_ENDS = (
    (
        re.compile(r"<(?:script|pre|style|textarea)(?=\s|>|$)", re.I),
        re.compile(r"</(?:script|pre|style|textarea)>", re.I),
    ),
    (re.compile(r"<!--"), re.compile(r"-->")),
    (re.compile(r"<\?"), re.compile(r"\?>")),
    (re.compile(r"<![A-Z]"), re.compile(r">")),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>")),
)
# A blank line (only spaces and tabs) after a line break: where HTML blocks of kinds 6 and 7 end.
_BLANK_LINE = re.compile(r"(?>\r\n?|\n)[ \t]*(?=[\r\n]|\Z)")
# The first line after a line break indented less than four columns and not blank: what ends an
# indented code block (a tab reaches column four).
_UNINDENTED_LINE = re.compile(r"(?>\r\n?|\n) {0,3}[^ \t\r\n]")


def _line_end(source: str, position: int) -> int:
    """The end of the line holding ``position`` (before its line break)."""
    line_break = LINE_BREAK.search(source, position)
    return line_break.start() if line_break else len(source)


def _raw_block_end(source: str, start: int, name: str, meta) -> int:
    """Where a top-level raw block that starts on the line at ``start`` ends (the end of its last
    line, before the line break; ``len(source)`` when it is never closed).

    The rules are markdown-it's: an HTML block of kinds 1-5 runs through the first line (its
    first included) that holds its end marker, kinds 6 and 7 up to a blank line; a fence
    through the first line indented less than four columns that holds only the same marker
    character, at least as many as the opening, and spaces or tabs; an indented code block
    through its last indented line before a non-blank line indented less than four columns.
    """
    first_end = _line_end(source, start)
    if name == "html_block":
        first_line = source[start:first_end].lstrip(" \t")
        for opening, closing in _HTML_ENDS:
            if opening.match(first_line):
                found = closing.search(source, start)
                return _line_end(source, found.end()) if found else len(source)
        blank = _BLANK_LINE.search(source, first_end)
        return blank.start() if blank else len(source)
    if name == "fence":
        marker, length = str(meta.get("marker", "")), int(meta.get("marker_len", 0))
        if marker not in ("`", "~") or length < 3:
            raise ValueError(f"unexpected fence {meta!r}")
        closing = re.compile(r"(?>\r\n?|\n) {0,3}%s{%d,}[ \t]*(?=[\r\n]|\Z)" % (re.escape(marker), length))
        found = closing.search(source, first_end)
        return found.end() if found else len(source)
    # code_block: back from the line that ends it over blank lines.
    found = _UNINDENTED_LINE.search(source, first_end)
    end = found.start() if found else len(source)
    while end > first_end:
        cut = max(source.rfind("\n", start, end), source.rfind("\r", start, end))
        if source[cut + 1 : end].strip(" \t"):
            break
        end = cut - 1 if source[cut] == "\n" and source[cut - 1] == "\r" else cut
    return end


def _raw_tail(source: str, nodes: list, pos: _Positions) -> tuple[Node, int] | None:
    """When a window's last top-level node is a raw block, that block as a :class:`Node` with its
    real end (found by :func:`_raw_block_end`) and where the next window starts; else ``None``
    (also for an HTML block whose second line is past the window: it could make a table)."""
    if not nodes or nodes[-1].name not in _RAW or nodes[-1].srcmap is None:
        return None
    tail = nodes[-1]
    converted = _convert(tail, pos, 0)
    if converted is None:
        return None
    if tail.name == "html_block" and pos.limit <= _after_line_break(source, _line_end(source, converted.start)):
        # The window ends after the block's first line: a delimiter row on the next line would
        # make that line a table's header (the parser tries tables first), so it must be seen.
        return None
    end = _raw_block_end(source, converted.start, tail.name, tail.meta)
    while end > converted.start and source[end - 1] in "\r\n":
        end -= 1
    if end < converted.end:  # never expected: the parse of the window saw more of the block
        return None
    converted.end = end
    line_break = LINE_BREAK.match(source, end)
    return converted, line_break.end() if line_break else len(source)


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


# -- huge lists and tables: read a window at a time, children streamed --------------------------


class _NotStreamable(Exception):
    """A window's parse is not what streaming a list or table relies on (never expected)."""


def _window_end(source: str, start: int, size: int) -> int:
    """The end of a window from ``start`` (a line start): after the first line break at or past
    ``start + size`` code points, or earlier, at a line start, once the lines with text (not only
    spaces and tabs; blank lines make no parse tree) weigh more than ``WINDOW_LINES * size //
    WINDOW_CHARS``; ``len(source)`` when neither is in the text. The window holds at least one
    line with text.

    A line weighs one, plus half its container markers when it opens :data:`NESTED_LINE_MARKERS`
    or more containers (``"- - - x"``: every list on it is two parser nodes; ``"> > > x"`` after
    a blank line opens as many quotes). When the window holds a
    GFM delimiter row of ``w`` columns or more, each line weighs ``w`` cells, of which it may hold
    ``WINDOW_CELLS`` (more in proportion for a window larger than ``WINDOW_CHARS``; the parser
    gives every row of a table as many cells as its delimiter row has, however short the row).
    """
    n = len(source)
    end = n
    if start + size < n:
        line_break = LINE_BREAK.search(source, start + size)
        end = line_break.end() if line_break else n
    lines = max(1, WINDOW_LINES * size // WINDOW_CHARS)
    end = _after_text_lines(source, start, end, lines)
    # Dense lines are looked for only where the window can still end: it only gets shorter.
    width = _widest_delimiter_row(source, start, end)
    cells = WINDOW_CELLS * max(size, WINDOW_CHARS) // WINDOW_CHARS
    if width * lines > cells:
        lines = max(1, cells // width)
    nested = _nested_lines(source, start, end)
    heavy = next(nested, None)
    if heavy is None:
        return _after_text_lines(source, start, end, lines)
    weight = 0
    for at in _text_lines(source, start, end):
        while heavy is not None and heavy[0] < at:
            heavy = next(nested, None)
        weight += 1 + (heavy[1] if heavy is not None and heavy[0] == at else 0)
        if weight > lines and at > start:
            return at
    return end


def _after_text_lines(source: str, start: int, end: int, lines: int) -> int:
    """The start of the line with text number ``lines + 1`` in ``source[start:end]``, or ``end``."""
    if count_line_breaks(source, start, end) > lines:
        beyond = next(islice(_text_lines(source, start, end), lines, None), None)
        if beyond is not None:
            return beyond
    return end


#: A table of this many cells (in proportion for a window of another size) weighs as much as a
#: window of ``WINDOW_CHARS`` may (see :func:`_window_end`); a cell of the parser's tree takes
#: 500 bytes (a top-level table) to 3 KB (one in a list item), so 2,000 columns over 2,000
#: one-cell rows (16 KB of text) were 1.9 GB.
WINDOW_CELLS = 1 << 16
#: A line opening this many containers or more weighs more than one line (see :func:`_window_end`).
NESTED_LINE_MARKERS = 8

_CONTAINER_MARKER = r"(?:>|[-+*]|\d{1,9}[.)])"
# A line opening NESTED_LINE_MARKERS containers or more (found as _DEEP_CANDIDATE finds lines:
# a literal line break first, and a lookahead that turns most lines away at once).
_NESTED_LINE_BODY = r"(?=[ \t>+*\-\d])(?:[ \t]*%s(?=[ \t>\r\n]|\Z)){%d,}" % (_CONTAINER_MARKER, NESTED_LINE_MARKERS)
_NESTED_LINE = re.compile(r"[\r\n]" + _NESTED_LINE_BODY)
_NESTED_LINE_LF = re.compile(r"\n" + _NESTED_LINE_BODY)  # three times faster: for text without "\r"
_NESTED_LINE_AT = re.compile(_NESTED_LINE_BODY)
#: A table narrower than this never weighs more than its lines: at the default sizes a line of a
#: window may hold WINDOW_CELLS // WINDOW_LINES = 8 cells (a window of other size, more).
WIDE_TABLE_COLUMNS = 9
# A GFM delimiter row (after the ">" of quotes it is in): its pipes bound its columns. Possessive
# quantifiers: a line of many spaces is given up in one pass.
_DELIMITER_ROW_BODY = r"[ \t>]*+\|?[ \t]*+:?-++:?[ \t]*+\|[-:| \t]*+(?=[\r\n]|\Z)"
_DELIMITER_ROW = re.compile(r"[\r\n]" + _DELIMITER_ROW_BODY)
_DELIMITER_ROW_AT = re.compile(_DELIMITER_ROW_BODY)
# What a delimiter row of WIDE_TABLE_COLUMNS columns or more holds, with or without its outer
# pipes: that many cells less two between pipes (a pattern that starts with a literal character
# is searched for fast).
_WIDE_DELIMITER = re.compile(r"\|(?:[ \t]*+:?-++:?[ \t]*+\|){%d}" % (WIDE_TABLE_COLUMNS - 2))


def _line_matches(pattern: re.Pattern, at_start: re.Pattern, source: str, start: int, end: int) -> Iterator[re.Match]:
    """Matches of a line pattern (``at_start``; ``pattern`` is it behind a line break) at the
    lines that start in ``source[start:end]`` (``start`` a line start)."""
    if start == 0:
        first = at_start.match(source, 0, end)
        if first is not None:
            yield first
        yield from pattern.finditer(source, 0, end)
    else:
        yield from pattern.finditer(source, start - 1, end)


def _widest_delimiter_row(source: str, start: int, end: int) -> int:
    """An upper bound on the columns of the widest GFM delimiter row starting in ``source[start:end]``
    (its pipes plus one), 0 when there is none of :data:`WIDE_TABLE_COLUMNS` columns or more."""
    if _WIDE_DELIMITER.search(source, start, end) is None:
        return 0
    return max(
        (m.group().count("|") + 1 for m in _line_matches(_DELIMITER_ROW, _DELIMITER_ROW_AT, source, start, end)),
        default=0,
    )


def _nested_lines(source: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """``(line start, extra weight)``, in order, of the lines in ``source[start:end]`` that open
    :data:`NESTED_LINE_MARKERS` containers or more: half their markers (counted as words:
    ``">>"`` is one)."""
    pattern = _NESTED_LINE if source.find("\r", max(start - 1, 0), end) != -1 else _NESTED_LINE_LF
    for m in _line_matches(pattern, _NESTED_LINE_AT, source, start, end):
        text = m.group()
        at = m.start() + 1 if text[:1] in ("\r", "\n") else m.start()
        yield at, len(text.split()) // 2


#: The start of a line with text: after a line break (or at the text's start), optional spaces
#: and tabs, then anything else.
_TEXT_LINE = re.compile(r"(?:\A|(?<=[\r\n]))(?=[ \t]*[^ \t\r\n])")
# The same after a "\n", for text without "\r" (a literal first character: found 15 times faster).
_TEXT_AFTER_LF = re.compile(r"\n(?=[ \t]*[^ \t\r\n])")
_HAS_TEXT = re.compile(r"[ \t]*[^ \t\r\n]")


def _text_lines(source: str, start: int, end: int) -> Iterator[int]:
    """The starts of the lines with text in ``source[start:end]`` (``start`` a line start), in order."""
    if source.find("\r", start, end) != -1:
        for line in _TEXT_LINE.finditer(source, start, end):
            yield line.start()
        return
    if _HAS_TEXT.match(source, start, end):
        yield start
    for line in _TEXT_AFTER_LF.finditer(source, start, end):
        yield line.end()


def _trimmed_end(source: str, start: int, end: int) -> int:
    while end > start and source[end - 1] in "\r\n":
        end -= 1
    return end


class _Prefixed(_Positions):
    """:class:`_Positions` of ``text[offset:limit]`` parsed behind a synthetic prefix of ``shift``
    UTF-8 bytes: the parser's offsets are moved back by ``shift`` first; an offset inside the
    prefix (a table node starts there) is the window's start."""

    def __init__(self, text: str, offset: int, limit: int, line_starts: LineStarts, shift: int) -> None:
        super().__init__(text, offset, limit, line_starts)
        self.shift = shift

    def interval(self, srcmap) -> tuple[int, int]:
        shift = self.shift
        start, end = srcmap[0] - shift, srcmap[1] - shift
        return super().interval((start if start > 0 else 0, end if end > 0 else 0))


def _parse_window(source: str, start: int, end: int, prefix: str, line_starts: LineStarts):
    """The top-level parser nodes of ``prefix + source[start:end]`` and the positions that map
    their offsets to code points of ``source`` (a node inside the prefix maps before ``start``)."""
    front_matter = start == 0 and not prefix
    nodes = (
        _parser(front_matter=front_matter).tree(prefix + source[start:end] if prefix else source[start:end]).children
    )
    shift = len(prefix.encode("utf-8"))
    pos = _Prefixed(source, start, end, line_starts, shift) if shift else _Positions(source, start, end, line_starts)
    return nodes, pos, shift


def _list_windows(source: str, start: int, size: int, line_starts: LineStarts, convert: bool, loose: str = ""):
    """The items of the top-level list that starts on the line at ``start``, a window at a time.

    Yields ``(items, end, block, pos)`` per window: the window's items as materialized
    :class:`Node` objects (``None`` unless ``convert``), the list's end if it ends in this
    window (else, and always behind ``loose``, ``None``), the window's parser node of the list
    and its positions.

    A window starts on the line of an item of the list (the first: the list's own line) and,
    like :func:`_windowed_blocks`, drops its last two items (the text after the window could
    extend them) unless the list ends inside it; the next window starts at the first dropped
    item's line. From an item's line the parser reads the same items as from the list's start:
    an item's extent depends on its own lines and those after it. The list ends where the
    window's parse shows another block after it (another list when the bullet character or the
    ordered delimiter changes) or at the end of the text. A window's first size is made to reach
    its third item (:func:`_window_for_items`); a window holding fewer than three items doubles
    until it holds three (a single item of more than a window is parsed whole).

    One thing a window does not see is whether the whole list is loose (CommonMark: a blank line
    between two of its items, or between two blocks of one), which decides whether an item's
    paragraphs are paragraphs or bare text with trailing whitespace cut (the parser's tight
    list). A list is loose when any window of it is; ``loose``, when given, is an item of the
    list (``"-    x"``) that :func:`_streamed_tail` found so: every window is then parsed behind
    that item and a blank line, which makes the window's list loose too.
    """
    n = len(source)
    kind = None
    window = _window_for_items(source, start, size)
    prefix = f"{loose}\n\n" if loose else ""
    while True:
        end = _window_end(source, start, window)
        last = end == n
        if not last:
            # The window's last line is read without the line after it, which can make it a
            # table's header instead of an item ("-\t<div>" over "-\t|"): after a blank line,
            # such an item would make the window's list loose (every item parsed so). The window
            # then ends before that blank line (a line followed by a blank line reads as in the
            # whole text).
            last_line = line_starts.line_start(end - 1)
            before = line_starts.line_start(last_line - 1) if last_line > start else start
            if start < before < last_line and not source[before:last_line].strip(" \t\r\n"):
                end = before
        nodes, pos, shift = _parse_window(source, start, end, prefix, line_starts)
        first = nodes[0] if nodes else None
        if first is None or first.name not in ("bullet_list", "ordered_list") or first.srcmap is None:
            raise _NotStreamable(f"no list at {start}")
        this_kind = (first.name, first.meta.get("marker"))
        if kind is None:
            kind = this_kind
        elif this_kind != kind:
            raise _NotStreamable(f"a list of another kind at {start}")
        items = [item for item in first.children if item.srcmap is not None and item.srcmap[0] >= shift]
        if not items or line_starts.line_start(pos.interval(items[0].srcmap)[0]) != start:
            raise _NotStreamable(f"the list does not start at {start}")
        ended = last or len(nodes) > 1
        if not ended:
            if len(items) < 3 or line_starts.line_start(pos.interval(items[-2].srcmap)[0]) <= start:
                if window >= MAX_WINDOW_CHARS:
                    raise _NotStreamable(f"an item at {start} longer than a window")
                window *= 2
                continue
            next_start = line_starts.line_start(pos.interval(items[-2].srcmap)[0])
        kept = items if ended else items[:-2]
        converted = None
        if convert:
            converted = []
            for item in kept:
                node = _convert(item, pos, 1)
                if node is not None:
                    _materialize(node)
                converted.append(node)
        list_end = None
        if ended and not prefix:  # (behind a loose item the list node starts in the prefix: no end)
            block = _convert(first, pos, 0)
            if block is None:
                raise _NotStreamable(f"an empty list at {start}")
            list_end = block.end
        yield converted, list_end, first, pos
        if ended:
            return
        start, window = next_start, _window_for_items(source, next_start, size)


#: The line of a list item: its indentation, then its marker (a bullet, or a number and its delimiter).
_ITEM_LINE = re.compile(r"([ \t]*+)([-+*]|\d{1,9}([.)]))([ \t]*+)(?=[\r\n]|\Z|(?<=[ \t]))")


def _window_for_items(source: str, start: int, size: int) -> int:
    """The size :func:`_list_windows` first parses a window from ``start`` (an item's line) with:
    ``size``, doubled while the window would not reach the line of the third item after the
    first, or of the last one when there are fewer (up to :data:`MAX_WINDOW_CHARS`).

    A window must hold three items to keep one; a list whose items are longer than a window
    would otherwise be parsed at every doubling (a table of contents of 800 KB items: about six
    parses of each window). Items are looked for without parsing, as lines with the first item's
    marker indented less than its content (CommonMark: a sibling's marker, where a more indented
    one opens a nested list): a line so found that is no item (one in a fenced code block) or an
    item so missed (one indented with a tab) only makes the first window smaller or larger than
    needed; the parse still decides, and doubles further if needed. Window sizes stay ``size``
    times a power of two, as the doubling alone makes them.
    """
    first = _ITEM_LINE.match(source, start)
    if first is None:
        return size
    indent, marker, delimiter, spaces = first.groups()
    marker_pattern = re.escape(marker) if delimiter is None else r"\d{1,9}" + re.escape(delimiter)
    if "\t" in indent or "\t" in spaces:
        # (columns of tabs depend on where they stand: the first item's own indentation only)
        item = re.compile(r"(?:\r\n?|\n)%s%s(?=[ \t\r\n]|\Z)" % (re.escape(indent), marker_pattern))
    else:
        # The item's content starts after its marker and one to four spaces (one when it has more,
        # or none: the item is blank or its content is indented code).
        content = len(indent) + len(marker) + (len(spaces) if 1 <= len(spaces) <= 4 else 1)
        item = re.compile(r"(?:\r\n?|\n) {0,%d}%s(?=[ \t\r\n]|\Z)" % (content - 1, marker_pattern))
    found = list(islice(item.finditer(source, first.end(), start + MAX_WINDOW_CHARS), 3))
    if not found:
        return size
    # (With fewer than three items found the list may end sooner: the window reaches the last one.)
    target = found[-1].start()
    # The window's bounds on code points and lines (see _window_end), to reach that line.
    reach, lines = target + 1 - start, count_line_breaks(source, start, target) + 1
    window = size
    while window < MAX_WINDOW_CHARS and (window < reach or WINDOW_LINES * window // WINDOW_CHARS < lines):
        window *= 2
    return window


def _is_loose(parsed, pos: _Positions, source: str, item: str) -> bool:
    """Whether a window's list (``parsed``, the window ``source[pos.offset:pos.limit]``) is loose.

    It is when an item holds a paragraph node (a tight list's paragraphs are bare inline text).
    A window with a blank line whose items hold no paragraph (fenced code, HTML, empty items)
    can still make the list loose: it is parsed again behind ``item`` (an item of the list with
    one line of text, see :func:`_streamed_tail`), whose text is a paragraph node exactly when
    the list is loose.
    """
    if any(child.name == "paragraph" for entry in parsed.children for child in entry.children):
        return True
    # Only a blank line before the list's last text can make it loose (not those after it).
    stop = pos.interval(parsed.srcmap)[1]
    while stop > pos.offset and source[stop - 1] in " \t\r\n":
        stop -= 1
    if _BLANK_LINE.search(source, pos.offset, stop) is None:
        return False
    nodes = _parser(front_matter=False).tree(f"{item}\n{source[pos.offset : pos.limit]}").children
    probe = nodes[0].children[0] if nodes and nodes[0].children else None
    return probe is not None and any(child.name == "paragraph" for child in probe.children)


def _table_windows(source: str, start: int, size: int, line_starts: LineStarts, convert: bool, loose: str = ""):
    """The rows of the top-level table that starts on the line at ``start``, a window at a time.

    Yields as :func:`_list_windows` does (rows: ``table_row`` nodes, the header row first). Rows
    are lines: the first window is parsed from the header line; every later window of body
    lines is parsed behind a one-column table's header and delimiter lines
    (``_TABLE_BODY_PREFIX``: a table body cannot be parsed alone, and where it ends does not
    depend on its header) and the parser's byte offsets are moved back by that prefix's length. The table ends where the parser ends it (a blank line, a
    line that starts another block or is indented four columns; a line without a pipe is still
    a row; the parser has no cap on rows or cells): before a window's last line, or at the end
    of the text. ``loose`` is unused (a list's).
    """
    n = len(source)
    window = size
    prefix = ""
    body_start = start
    block_end = start
    while True:
        end = _window_end(source, body_start, window)
        last = end == n
        nodes, pos, shift = _parse_window(source, body_start, end, prefix, line_starts)
        first = nodes[0] if nodes else None
        if first is None or first.name != "table" or first.srcmap is None:
            if not prefix and not last and window < MAX_WINDOW_CHARS:
                window *= 2  # the window does not reach the delimiter line yet
                continue
            raise _NotStreamable(f"no table at {start}")
        parts = [part for part in first.children if part.srcmap is not None]
        head = parts[0] if parts and parts[0].name == "thead" else None
        if head is None:
            raise _NotStreamable(f"a table without a header at {start}")
        rows = [] if prefix else [head]
        for part in parts:
            if part.name == "tbody":
                rows.extend(row for row in part.children if row.srcmap is not None)
        if first.srcmap[1] > shift:  # else no line of this window is a row: the table ended before it
            block_end = _trimmed_end(source, body_start, pos.interval(first.srcmap)[1])
        ended = last or len(nodes) > 1 or block_end <= line_starts.line_start(end - 1)
        converted = [_convert_row(row, pos) for row in rows] if convert else None
        yield converted, (block_end if ended else None), first, pos
        if ended:
            return
        prefix = _TABLE_BODY_PREFIX
        body_start, window = end, size


#: What a window of a table's body lines is parsed behind: a table of one column. The parser
#: ends a table's body at a line that is blank, indented four columns or starts another block,
#: whatever its header; every row gets as many cells as the header has, so a copy of a wide
#: header would make every row as wide. Its line breaks are "\n", so that a "\r" before the
#: window cannot join the window's first "\n" into one line break.
_TABLE_BODY_PREFIX = "| a |\n|---|\n"


#: A top-level list or table that a window of ``WINDOW_CHARS`` cannot hold is read a window of
#: this many code points at a time (see ``_streamed_tail``): the parser's tree of a dense table
#: takes several hundred bytes per character.
STREAM_WINDOW_CHARS = 1 << 16


def _streamed_tail(source: str, nodes: list, pos: _Positions, line_starts: LineStarts) -> tuple[Node, int] | None:
    """When a window's last top-level node is a list or a table, that block as a :class:`Node`
    with its real end and where the next window starts; else ``None``.

    The block's extent is found by reading it a window of :data:`STREAM_WINDOW_CHARS` at a time
    (:func:`_list_windows`, :func:`_table_windows`). A block that ends in its first window is
    converted as any other block (:func:`_detached`); a longer one gets
    :class:`~transforms.structure.tree.StreamedChildren` that read it again, a window at a time,
    on every iteration, so only one window of its items or rows is alive at a time.
    """
    tail = nodes[-1] if nodes else None
    if tail is None or tail.srcmap is None or tail.name not in ("bullet_list", "ordered_list", "table"):
        return None
    converted = _convert(tail, pos, 0)
    if converted is None:
        return None
    windows = _table_windows if tail.name == "table" else _list_windows
    size = STREAM_WINDOW_CHARS
    block = None
    loose = False
    marker = str(tail.meta.get("marker", ""))
    # An item of the list whose content starts at column five or six: no item line (indented at
    # most three columns) after it can continue it.
    item = f"{marker}    x" if tail.name == "bullet_list" else f"1{marker}    x"
    try:
        for count, (_, end, parsed, window_pos) in enumerate(
            windows(source, converted.start, size, line_starts, False)
        ):
            if end is not None and count == 0:
                block = _detached(_convert(parsed, window_pos, 0), source, line_starts)
            loose = loose or (parsed.name != "table" and _is_loose(parsed, window_pos, source, item))
            del parsed, window_pos
    except _NotStreamable:
        return None
    if block is None:
        item = item if tail.name != "table" and loose else ""
        block = Node(
            converted.kind,
            converted.start,
            end,
            StreamedChildren(_streamed_children, windows, source, converted.start, end, size, line_starts, item),
            level=converted.level,
            header_rows=converted.header_rows,
        )
    line_break = LINE_BREAK.search(source, block.end)
    return block, line_break.end() if line_break else len(source)


def _streamed_children(
    windows, source: str, start: int, end: int, size: int, line_starts: LineStarts, loose: str
) -> Iterator[Node]:
    """The items or rows of a streamed block, in order (filtered as ``_convert_children`` and
    ``_convert_table`` filter them).

    Should a window not parse as the first reading's did (never seen; the loose item it is parsed
    behind is the only difference), the rest of the children come from a parse of the whole block.
    """
    previous_end = None
    try:
        for children, _, _, _ in windows(source, start, size, line_starts, True, loose):
            for child in children:
                if child is None or child.end > end or (previous_end is not None and child.start < previous_end):
                    continue
                previous_end = child.end
                yield child
    except _NotStreamable:
        for child in _reparsed_children(start, end, source, line_starts):
            if previous_end is None or child.start >= previous_end:
                yield child
