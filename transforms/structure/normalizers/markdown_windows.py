"""The windowed Markdown parse: a long document's top-level blocks, parsed a window at a time.

:func:`transforms.structure.normalizers.markdown.normalize_markdown` takes this path for a
document longer than ``WINDOW_CHARS`` code points or ``WINDOW_LINES`` lines (or whose lines weigh
as much, see ``markdown_window_bounds``): the document's ``blocks`` are then a
:class:`~transforms.structure.tree.StreamedChildren` made by :func:`_windowed_pairs`, which
parses the document again, a window at a time, on every pass, so its top-level blocks are never
all held.

A window's blocks are the same as a whole parse's (see :func:`_windowed_blocks`). A window that
ends in a block it cannot hold reads that block another way: a raw block (an HTML block, fenced
or indented code) by a scan for its closing line (:func:`_raw_tail`); a list or table a window
of items or rows at a time (``markdown_streams._streamed_tail``); any other block by doubling the
window up to ``MAX_WINDOW_CHARS``, where it is cut (:func:`_cut_at_window_end`). Front matter
longer than the first window is parsed alone (:func:`_front_matter`).

The sizes are attributes of :mod:`transforms.structure.normalizers.markdown`, read when used.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator

from transforms.structure.normalizers import markdown
from transforms.structure.normalizers.markdown import _convert, _detached, _kept_blocks, _Positions, _reparsed_children
from transforms.structure.normalizers.markdown_streams import _streamed_tail
from transforms.structure.normalizers.markdown_window_bounds import _BLANK_LINE, _window_end
from transforms.structure.tree import LINE_BREAK, LineStarts, Node, StreamedChildren, count_line_breaks


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
    start, size, n = 0, markdown.WINDOW_CHARS, len(source)
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
        nodes = list(markdown._parser(front_matter=start == 0).tree(source[start:end]).children)
        pos = _Positions(source, start, end, line_starts)
        following = yield from _blocks_of_window(source, nodes, pos, start, end, size, line_starts, notes)
        if following is None:
            return
        start, size = following


def _blocks_of_window(
    source: str,
    nodes: list,
    pos: _Positions,
    start: int,
    end: int,
    size: int,
    line_starts: LineStarts,
    notes: list[str],
) -> Generator[Node | None, None, tuple[int, int] | None]:
    """The blocks a window (``source[start:end]`` of ``size``, parsed into ``nodes``) gives, as
    :func:`_windowed_blocks` keeps them; returns the next window's ``(start, size)``, or ``None``
    after the last one."""
    n = len(source)
    if end == n:
        for node in nodes:
            yield _detached(_convert(node, pos, 0), source, line_starts)
        return None
    if len(nodes) < 3:
        tail = _raw_tail(source, nodes, pos) or _streamed_tail(source, nodes, pos, line_starts)
        if tail is not None:
            block, next_start = tail
            for node in nodes[:-1]:
                yield _detached(_convert(node, pos, 0), source, line_starts)
            yield block
            return None if next_start >= n else (next_start, markdown.WINDOW_CHARS)
        next_start = start  # (a block the window cannot hold: a larger window, or a cut)
    else:
        dropped = next((node.srcmap for node in nodes[-2:] if node.srcmap is not None), None)
        next_start = line_starts.line_start(pos.interval(dropped)[0]) if dropped else start
    if next_start <= start:
        if size < markdown.MAX_WINDOW_CHARS:
            return start, size * 2
        yield from _cut_at_window_end(nodes, pos, source, line_starts, notes)
        return end, markdown.WINDOW_CHARS
    for node in nodes[:-2]:
        yield _detached(_convert(node, pos, 0), source, line_starts)
    return next_start, markdown.WINDOW_CHARS


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
    if end <= _window_end(source, 0, markdown.WINDOW_CHARS) or end > markdown.MAX_WINDOW_CHARS:
        return None  # the first window holds it (or it is cut as any huge block)
    nodes = markdown._parser(front_matter=True).tree(source[:end]).children
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
        lines = max(1, markdown.WINDOW_LINES * markdown.MAX_WINDOW_CHARS // markdown.WINDOW_CHARS)
        notes.append(
            f"the block on line {line} is longer than a window of {markdown.MAX_WINDOW_CHARS} code points "
            f"or {lines} lines (a line of a wide table or opening many containers weighs more): "
            "cut where each window ends"
        )
    yield from converted


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
