"""A top-level Markdown list or table longer than a window, read a window of items or rows at a time.

When a window of the windowed parse (``markdown_windows._windowed_blocks``) holds fewer than
three top-level blocks and its last one is a list or a GFM table, :func:`_streamed_tail` finds
that block's extent by reading it a window of ``STREAM_WINDOW_CHARS`` at a time
(:func:`_list_windows`, :func:`_table_windows`), and gives it children that are a
:class:`~transforms.structure.tree.StreamedChildren` reading it so again on every iteration
(:func:`_streamed_children`): only one window of its items or rows is alive at a time. Should a
window's parse not be what this relies on (never seen), :class:`_NotStreamable` is raised and
the block is read as any other block.

The sizes are attributes of :mod:`transforms.structure.normalizers.markdown`, read when used.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice

from transforms.structure.normalizers import markdown
from transforms.structure.normalizers.markdown import (
    _convert,
    _convert_row,
    _detached,
    _materialize,
    _Positions,
    _reparsed_children,
)
from transforms.structure.normalizers.markdown_window_bounds import _BLANK_LINE, _window_end
from transforms.structure.tree import LINE_BREAK, LineStarts, Node, StreamedChildren, count_line_breaks


class _NotStreamable(Exception):
    """A window's parse is not what streaming a list or table relies on (never expected)."""


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
        markdown._parser(front_matter=front_matter)
        .tree(prefix + source[start:end] if prefix else source[start:end])
        .children
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
            end = _before_last_blank_line(source, start, end, line_starts)
        nodes, pos, shift = _parse_window(source, start, end, prefix, line_starts)
        first, kind, items = _window_list(nodes, pos, shift, start, kind, line_starts)
        ended = last or len(nodes) > 1
        if not ended:
            if len(items) < 3 or line_starts.line_start(pos.interval(items[-2].srcmap)[0]) <= start:
                if window >= markdown.MAX_WINDOW_CHARS:
                    raise _NotStreamable(f"an item at {start} longer than a window")
                window *= 2
                continue
            next_start = line_starts.line_start(pos.interval(items[-2].srcmap)[0])
        kept = items if ended else items[:-2]
        converted = _materialized_items(kept, pos) if convert else None
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


def _window_list(nodes: list, pos: _Positions, shift: int, start: int, kind: tuple | None, line_starts: LineStarts):
    """The list a window of :func:`_list_windows` parsed (``nodes``, behind a prefix of ``shift``
    bytes), its kind (node name and marker: ``kind`` when given) and its items after the prefix.

    Raises:
        _NotStreamable: The window holds no list, a list of another kind than ``kind``, or one
            whose first item does not start on the line at ``start``.
    """
    first = nodes[0] if nodes else None
    if first is None or first.name not in ("bullet_list", "ordered_list") or first.srcmap is None:
        raise _NotStreamable(f"no list at {start}")
    this_kind = (first.name, first.meta.get("marker"))
    if kind is not None and this_kind != kind:
        raise _NotStreamable(f"a list of another kind at {start}")
    items = [item for item in first.children if item.srcmap is not None and item.srcmap[0] >= shift]
    if not items or line_starts.line_start(pos.interval(items[0].srcmap)[0]) != start:
        raise _NotStreamable(f"the list does not start at {start}")
    return first, this_kind, items


def _before_last_blank_line(source: str, start: int, end: int, line_starts: LineStarts) -> int:
    """The end of a window of a list's items from ``start``: ``end``, or the start of the blank
    line before the window's last line.

    The window's last line is read without the line after it, which can make it a table's header
    instead of an item (``"-\\t<div>"`` over ``"-\\t|"``): after a blank line, such an item would
    make the window's list loose (every item parsed so). The window then ends before that blank
    line (a line followed by a blank line reads as in the whole text).
    """
    last_line = line_starts.line_start(end - 1)
    before = line_starts.line_start(last_line - 1) if last_line > start else start
    if start < before < last_line and not source[before:last_line].strip(" \t\r\n"):
        return before
    return end


def _materialized_items(items: list, pos: _Positions) -> list[Node | None]:
    """A window's list items as :class:`Node` objects, every descendant converted."""
    converted: list[Node | None] = []
    for item in items:
        node = _convert(item, pos, 1)
        if node is not None:
            _materialize(node)
        converted.append(node)
    return converted


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
    found = list(islice(item.finditer(source, first.end(), start + markdown.MAX_WINDOW_CHARS), 3))
    if not found:
        return size
    # (With fewer than three items found the list may end sooner: the window reaches the last one.)
    target = found[-1].start()
    # The window's bounds on code points and lines (see _window_end), to reach that line.
    reach, lines = target + 1 - start, count_line_breaks(source, start, target) + 1
    window = size
    while window < markdown.MAX_WINDOW_CHARS and (
        window < reach or markdown.WINDOW_LINES * window // markdown.WINDOW_CHARS < lines
    ):
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
    nodes = markdown._parser(front_matter=False).tree(f"{item}\n{source[pos.offset : pos.limit]}").children
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
            if not prefix and not last and window < markdown.MAX_WINDOW_CHARS:
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
    size = markdown.STREAM_WINDOW_CHARS
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
