"""HTML pages of ``STREAM_DOCUMENT_CHARS`` code points or more, read in windows with libxml2's push parser.

:func:`transforms.structure.normalizers.html.normalize_html` takes this path for a long page
(:func:`_normalize_streamed`; the page is read whole when this gives ``None``). The source is fed
``STREAM_WINDOW_CHARS`` at a time (:func:`_source_windows`); after each window, :class:`_Stream`
reads every child of the open top-level frames (containers, lists, tables: :class:`_Frame`) that
is complete, renders it with the same reader and writer as the whole path (``html_blocks``,
``html_markdown``) and frees it. The nodes are kept compact (:class:`_Nodes`) and made into
:class:`~transforms.structure.tree.Node` objects on every pass over the blocks. The sizes are
attributes of :mod:`transforms.structure.normalizers.html`, read when used.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import cast

from lxml import etree

from transforms.structure.normalizers import html
from transforms.structure.normalizers.html_blocks import (
    _LAYOUT_ROLES,
    _SECTIONS,
    _block_row,
    _Collector,
    _first_number,
    _header_row,
    _layout_row,
    _ListState,
    _part_rows,
    _Reader,
    _reader_notes,
    _TableState,
    _wide_row,
)
from transforms.structure.normalizers.html_elements import (
    _CONTAINER,
    _INLINE,
    _KINDS,
    _LIST,
    _MAX_DEPTH,
    _NOT_XML,
    _PARSER_OPTIONS,
    _TABLE,
    _collapse,
    _holds_h1,
    _is_navigation,
    _prepared,
    _remove_navigation,
)
from transforms.structure.normalizers.html_exclude import ExcludeSelectors
from transforms.structure.normalizers.html_markdown import _Writer
from transforms.structure.tree import Node, NormalizedDocument, StreamedChildren, streamed_document

# -- compact nodes ----------------------------------------------------------------------------

_CODES = ("paragraph", "heading", "code", "list", "list_item", "table", "table_row", "quote", "rule")
_CODE_OF = {kind: code for code, kind in enumerate(_CODES)}
_STREAMED = 15  # a top-level list or table whose children are kept in their own _Nodes


class _Nodes:
    """Nodes kept compact, in pre-order, as integers (four bytes each up to 2**31), the rare
    strings aside; made into :class:`Node` objects when read. A node of kind ``leaf`` without
    children, level or strings is two integers (``~start``, end): 8 bytes a plain list item or
    table row instead of about 200; any other is three (kind, level and number of children packed
    in one, start, end).
    """

    __slots__ = ("ints", "leaf", "streamed", "strings", "text")

    def __init__(self, leaf: str, *, top: bool = False) -> None:
        self.leaf = leaf
        self.ints = array("i")
        self.strings: dict[int, tuple[str, str, str]] = {}  # record position -> (title, language, fence)
        self.streamed: list[tuple[str, _Nodes]] = []
        # With ``top`` (the page's top-level blocks, written without a prefix): the rendering, set
        # once written; a heading's title is read from it (its line is "#" * level, a space and
        # the title), not kept.
        self.text: str | None = "" if top else None

    def add(self, node: Node, nested: bool = False) -> None:
        # Streamed children come through add_streamed; a node given here holds its children.
        children = cast("Sequence[Node]", node.children)
        if node.kind == "heading" and self.text is not None and not (nested or node.language or node.fence):
            pass  # (its title is read back from the rendering)
        elif node.title or node.language or node.fence:
            self.strings[len(self.ints)] = (node.title, node.language, node.fence)
        elif not children and node.kind == self.leaf and not node.level:
            self._put([~node.start, node.end])
            return
        self._put([_CODE_OF[node.kind] | node.level << 4 | len(children) << 16, node.start, node.end])
        for child in children:
            self.add(child, True)

    def add_streamed(self, kind: str, start: int, end: int, level: int, children: _Nodes) -> None:
        if end - start <= html.STREAM_BLOCK_CHARS:
            # Read back with plain children anyway: kept inline, not as a _Nodes of its own (a
            # few hundred bytes each, for a page of many short lists or tables).
            self.add(Node(kind, start, end, tuple(children.nodes(0)), level=level))
            return
        self._put([_STREAMED | level << 4 | len(self.streamed) << 16, start, end])
        self.streamed.append((kind, children))

    def _put(self, values: list[int]) -> None:
        try:
            self.ints.fromlist(values)  # (unchanged when it raises)
        except OverflowError:  # past 2**31: eight bytes each from now on
            self.ints = array("q", self.ints)
            self.ints.fromlist(values)

    def nodes(self, shift: int) -> Iterator[Node]:
        """The nodes at the top of this sequence, each with its descendants, moved by ``shift``."""
        for _, node in self.marked(shift):
            yield node

    def marked(self, shift: int, index: int = 0) -> Iterator[tuple[int, Node]]:
        """:meth:`nodes` from the record at ``index`` (one at the top), each with its record's index."""
        size = len(self.ints)
        while index < size:
            at = index
            node, index = self._node(index, shift)
            yield at, node

    def _node(self, index: int, shift: int, top: bool = True) -> tuple[Node, int]:
        ints = self.ints
        head = ints[index]
        if head < 0:
            return Node(self.leaf, ~head + shift, ints[index + 1] + shift), index + 2
        code, level, count = head & 15, (head >> 4) & 0xFFF, head >> 16
        start, end = ints[index + 1] + shift, ints[index + 2] + shift
        if code == _STREAMED:
            kind, inner = self.streamed[count]
            children: Sequence[Node] | StreamedChildren
            if end - start > html.STREAM_BLOCK_CHARS:
                children = StreamedChildren(inner.nodes, shift)
            else:
                children = tuple(inner.nodes(shift))
            return Node(kind, start, end, children, level=level, header_rows=int(kind == "table")), index + 3
        kind = _CODES[code]
        strings = self.strings.get(index) if self.strings else None
        index += 3
        nodes = []
        for _ in range(count):
            child, index = self._node(index, shift, False)
            nodes.append(child)
        node = Node(kind, start, end, tuple(nodes), level=level, header_rows=int(kind == "table"))
        if strings is not None:
            node.title, node.language, node.fence = strings
        elif kind == "heading" and self.text and top:
            node.title = self.text[start + level + 1 : end]
        return node, index


# -- reading the page as the parser goes ------------------------------------------------------


def _check_merge(before: str | None, tail: str) -> str:
    """``before + tail`` as the windowed path reads it, or ``ValueError`` when the whole tree's
    path would change it (:func:`_joined_tail`): that path then reads the page."""
    merged = (before or "") + tail
    if _NOT_XML.search(merged) is not None:
        raise ValueError("a control character next to left-out navigation")
    return merged


class _Frame:
    """An element whose children are read one at a time, as each is complete (``_Stream.advance``).

    A child is *settled* when its tail is final (a later sibling exists, or this element is
    complete): then it is read (``unit``) unless it is itself a frame or left-out navigation, and
    freed.
    """

    def __init__(self, stream: _Stream, element, depth: int) -> None:
        self.stream = stream
        self.element = element
        self.depth = depth
        self.text_done = False
        self.pending = None  # the last child, not settled yet
        self.pending_nav = False
        self.pending_frame: _Frame | None = None
        self.last = None  # the last settled child still in the tree
        self.cursor = None  # the last child seen (pending, or settled and still in the tree)
        # The string a navigation child's tail would be appended to on the whole tree: the tail
        # of the child before it, or this element's text (see ``_check_merge``).
        self.before: str | None = None

    def before_child(self) -> None:
        """A child follows or this element is complete: its text, and the child before, are final."""
        if not self.text_done:
            self.text_done = True
            self.before = text = self.element.text
            self.on_text(text)
        child = self.pending
        if child is None:
            return
        self.pending = None
        stream = self.stream
        keep = False
        tail = child.tail
        if self.pending_nav:
            stream.dropped += 1 + _remove_navigation(
                child, stream.exclude
            )  # (as the whole tree's path does: see _check_merge)
            if tail:
                self.before = _check_merge(self.before, tail)
                self.merge(tail)
        else:
            self.before = tail
            if self.pending_frame is not None:
                self.child_tail(tail)
                keep = self.pending_frame.holds_stray()
            else:
                if len(child):  # (navigation inside it; not the child itself)
                    stream.dropped += _remove_navigation(child, stream.exclude)
                stream.saw(child, self)
                keep = self.unit(child)
        # Free what was read; the last settled child stays (cleared, its tail kept) so the parser
        # sees the siblings it would see (libxml2 looks at the last child for blank text).
        if self.last is not None:
            self.element.remove(self.last)
            self.last = None
        if not keep:
            child.clear(keep_tail=True)
            self.last = child

    def on_text(self, text: str | None, /) -> None:
        raise NotImplementedError

    def open(self, child) -> _Frame | None:
        """A child was met (not navigation): its frame, or ``None`` to read it whole once settled."""
        return None

    def unit(self, child) -> bool:
        """Read a settled child (whole, tail final); ``True`` to keep it in the tree."""
        raise NotImplementedError

    def merge(self, tail: str | None, /) -> None:
        """The tail of a left-out navigation child (it joins the text before the child)."""
        raise NotImplementedError

    def child_tail(self, tail: str | None, /) -> None:
        """The tail of a child that was a frame."""
        raise NotImplementedError

    def close(self) -> None:
        """This element ended (its last child settled)."""

    def holds_stray(self) -> bool:
        """This element, settled, must stay in the tree: an element under it is read later."""
        return False


class _Container(_Frame):
    """The root or a container at the top (``div``, ``section``, ``body`` ...): transparent."""

    def on_text(self, text: str | None) -> None:
        if text:
            self.stream.top.inline.append(text)

    merge = child_tail = on_text

    def open(self, child) -> _Frame | None:
        depth = self.depth + 1
        if depth > _MAX_DEPTH:
            return None
        kind = _KINDS.get(child.tag, _INLINE)
        frame: type[_Frame]
        if kind == _CONTAINER:
            frame = _Container
        elif kind == _LIST:
            frame = _ListFrame
        elif kind == _TABLE:
            frame = _TableFrame
        else:
            return None
        self.stream.top.flush()
        return frame(self.stream, child, depth)

    def unit(self, child) -> bool:
        self.stream.reader.child(child, self.stream.top, self.depth + 1)
        return False

    def close(self) -> None:
        if self.depth:
            self.stream.top.flush()


class _ListFrame(_Frame):
    """A top-level list: each item written as soon as it is complete."""

    def __init__(self, stream: _Stream, element, depth: int) -> None:
        super().__init__(stream, element, depth)
        self.state = _ListState(stream.reader, depth, self.emit)
        self.ordered = element.tag == "ol"
        self.first_number = _first_number(element, self.ordered)
        self.items = _Nodes("list_item")
        self.count = 0
        self.start = 0

    def on_text(self, text: str | None) -> None:
        self.state.text(text)

    merge = on_text

    def unit(self, child) -> bool:
        self.state.child(child)
        return False

    def emit(self, blocks: list[object]) -> None:
        writer = self.stream.writer
        if self.count:
            writer.write("\n")
        else:
            if self.stream.top.blocks:
                self.stream.drain()
            self.stream.separate()
            self.start = writer.position
        self.items.add(writer.item(blocks, self.ordered, self.first_number + self.count, "", 1))
        self.count += 1

    def close(self) -> None:
        self.state.finish()
        # (The state's emit is this frame's method: a reference cycle, which the chunker, with
        # the cycle collector paused, would keep for every top-level list of the page.)
        self.state.emit = None
        if self.count:
            self.stream.nodes.add_streamed("list", self.start, self.stream.writer.position, 1, self.items)


class _TableFrame(_Frame):
    """A top-level table: rows kept packed, written when it ends (the widest row sets the width)."""

    def __init__(
        self, stream: _Stream, element, depth: int, state: _TableState | None = None, section: str = "tbody"
    ) -> None:
        super().__init__(stream, element, depth)
        if state is None and element.get("role") in _LAYOUT_ROLES:
            raise ValueError("a layout table")
        self.state = state or _TableState(stream.reader, stream.top, depth)
        self.section = section
        self.is_section = state is not None
        self.level = depth if self.is_section else depth + 1  # of its parts
        self.strays = len(self.state.stray)  # moved out of the table before this element

    def on_text(self, text: str | None) -> None:
        self.state.text(text)

    child_tail = on_text

    def merge(self, tail: str | None) -> None:
        self.state.merge_tail(tail)

    def open(self, child) -> _Frame | None:
        if child.tag in _SECTIONS:
            return _TableFrame(self.stream, child, self.level + 1, self.state, child.tag)
        return None

    def unit(self, child) -> bool:
        # A layout table (``html_blocks._is_layout``) is read as its cells' blocks: the page is
        # then read whole (raising here ends the windowed reading).
        state = self.state
        for tr in _part_rows(child, self.level):
            state.header_rows = state.header_rows or _header_row(tr)
            state.wide_rows = state.wide_rows or _wide_row(tr)
            state.layout_rows = state.layout_rows or _layout_row(tr)
            state.block_rows = state.block_rows or _block_row(tr)
        stray = self.state.stray
        count = len(stray)
        self.state.part(child, self.section, self.level)
        return len(stray) > count

    def holds_stray(self) -> bool:
        # A section's stray elements are read when its table ends, as on the whole tree: with
        # their parent and grandparent (a code block's language may come from their class).
        return self.is_section and len(self.state.stray) > self.strays

    def close(self) -> None:
        if self.is_section:
            return  # its table writes the rows
        state = self.state
        if not state.header_rows and (state.layout_rows or (state.block_rows and not state.wide_rows)):
            raise ValueError("a layout table")
        state.finish(self.emit)

    def emit(self) -> None:
        stream = self.stream
        if stream.top.blocks:  # a caption read in its last part
            stream.drain()
        stream.separate()
        rows = _Nodes("table_row")
        start = stream.writer.position
        stream.writer.table(self.state, "", rows.add)
        stream.nodes.add_streamed("table", start, stream.writer.position, 0, rows)


class _Stream:
    """The state of one page read in windows (see :func:`_normalize_streamed`)."""

    def __init__(self, exclude: ExcludeSelectors | None = None) -> None:
        self.exclude = exclude
        self.reader = _Reader()
        self.writer = _Writer()
        self.top = _Collector(nested=False)
        self.nodes = _Nodes("paragraph", top=True)  # the top-level blocks written
        self.blocks = 0
        self.dropped = 0  # navigation elements left out
        self.has_h1 = False
        self.head = None  # the first head element under the root: its title, if any
        self.title = ""
        self.frame: _Frame | None = None  # the root's

    def advance(self, frame: _Frame, final: bool) -> None:
        """Read the children of ``frame`` that are complete (a later sibling exists), then those of
        its last child if that is a frame; ``final``: the element is complete, read it all."""
        element = frame.element
        while True:
            cursor = frame.cursor
            following = cursor.getnext() if cursor is not None else (element[0] if len(element) else None)
            if following is None:
                break
            if frame.pending_frame is not None:
                self.advance(frame.pending_frame, True)
            frame.before_child()
            nav = _is_navigation(following, self.exclude)
            frame.pending, frame.pending_nav, frame.cursor = following, nav, following
            frame.pending_frame = None if nav else frame.open(following)
            if self.top.blocks:
                self.drain()
        if final:
            if frame.pending_frame is not None:
                self.advance(frame.pending_frame, True)
            frame.before_child()
            frame.close()
        elif frame.pending_frame is not None:
            self.advance(frame.pending_frame, False)
        if self.top.blocks:
            self.drain()

    def drain(self) -> None:
        """Write the top-level blocks read so far."""
        writer, nodes = self.writer, self.nodes
        for block in self.top.blocks:
            self.separate()
            nodes.add(writer.block(block, "", 0))
        self.top.blocks.clear()

    def separate(self) -> None:
        """A top-level block starts: the blank line after the one before."""
        if self.blocks:
            self.writer.write("\n\n")
        self.blocks += 1

    def saw(self, element, frame: _Frame) -> None:
        """A child of ``frame`` to be read whole, before it is read (every element of the page that
        is not a frame is one or under one): note whether it holds an ``h1`` that counts
        (:func:`_holds_h1`) and, first under the root, a ``head``."""
        if not self.has_h1 and _holds_h1(element):
            self.has_h1 = True
        if self.head is None and element.tag == "head" and frame.depth == 0:
            self.head = element
            title = element.find("title")
            self.title = _collapse("".join(title.itertext())) if title is not None else ""

    def pack(self) -> None:
        """Keep fewer, larger strings (called between windows)."""
        self.writer.pack()
        inlines = [self.top.inline]
        frame = self.frame
        while frame is not None:
            if type(frame) is _ListFrame:
                inlines.append(frame.state.stray.inline)
            frame = frame.pending_frame
        for inline in inlines:
            if len(inline) > 64:
                inline[:] = ["".join(inline)]


def _source_windows(content: str) -> Iterator[str]:
    """``content`` as the whole path prepares it (line breaks, NUL, ``</body>``), a window at a time.

    A window ends before a ``<`` (an end tag is never cut) and never between ``\\r`` and ``\\n``.
    """
    size, start = len(content), 0
    while start < size:
        end = start + html.STREAM_WINDOW_CHARS
        if end >= size:
            end = size
        else:
            cut = content.rfind("<", start + 1, end)
            if cut > start:
                end = cut
            elif content[start] == "<":  # the window's only tag could run past it
                close = content.find(">", start)
                end = size if close < 0 else max(end, close + 1)
            if end < size and content[end - 1] == "\r" and content[end] == "\n":
                end += 1
        yield _prepared(content[start:end])
        start = end


def _normalize_streamed(content: str, exclude: ExcludeSelectors | None = None) -> NormalizedDocument | None:
    """:func:`normalize_html` reading the page in windows with libxml2's push parser (see the
    module docstring); ``None`` when the page must be read whole instead (the parser refuses it,
    stops early, or finds no element, or lxml refuses a string the whole path would set).
    """
    stream = _Stream(exclude)
    # Only the root's start event: the tree itself shows what is complete (an element with a later
    # sibling); an event per element would cost more than the parse.
    parser = etree.HTMLPullParser(events=("start",), tag="html", **_PARSER_OPTIONS)
    blank = True
    try:
        for window in _source_windows(content):
            if blank and window and not window.isspace():
                blank = False
            parser.feed(window.encode("utf-8", "replace"))
            for _, element in parser.read_events():
                if stream.frame is None:
                    stream.frame = _Container(stream, element, 0)
                elif element is not stream.frame.element:
                    return None  # a second root
            if stream.frame is not None:
                stream.advance(stream.frame, False)
                stream.pack()
        root = parser.close()
        if blank:
            return NormalizedDocument(text="", blocks=(), content_format="html", verbatim=False)
        if any(entry.level_name == "FATAL" for entry in parser.feed_error_log) or root is None:
            return None
        if stream.frame is None:
            stream.frame = _Container(stream, root, 0)  # (no start event: text without tags)
        elif stream.frame.element is not root:
            return None
        stream.advance(stream.frame, True)
    except (etree.LxmlError, ValueError):
        return None
    stream.frame = None  # (its frames refer to the stream: a cycle that would hold the writer's strings)
    return _streamed_result(stream)


def _streamed_result(stream: _Stream) -> NormalizedDocument:
    """The document of a page read to its end: the last top-level blocks written, the
    ``<title>`` heading put first when no ``h1`` that counts was met, the top-level nodes kept
    compact and made into nodes on every pass over them."""
    top = stream.top
    top.flush()
    if top.blocks:
        stream.drain()
    diagnostics: list[str] = []
    if stream.dropped:
        diagnostics.append(f"{stream.dropped} navigation elements left out")
    diagnostics.extend(_reader_notes(stream.reader))
    heading: list[Node] = []
    lead = ""
    if not stream.has_h1 and stream.title:
        lead = "# " + stream.title
        heading.append(Node("heading", 0, len(lead), level=1, title=stream.title))
        if stream.blocks:
            lead += "\n\n"
    if not heading and not stream.blocks:
        text = ""
    else:
        text = "".join([lead, *stream.writer.text(), "\n"])
    # The top-level blocks stay compact (``_Nodes``), made into nodes on every pass over them.
    stream.nodes.text = text
    return streamed_document(
        text,
        _top_level_nodes,
        tuple(heading),
        stream.nodes,
        len(lead),
        tuple(diagnostics),
        content_format="html",
        verbatim=False,
        resumable=True,
    )


def _top_level_nodes(
    heading: tuple[Node, ...],
    nodes: _Nodes,
    shift: int,
    diagnostics: tuple[str, ...],
    notes: list[str],
    resume: int | None,
) -> Iterator[tuple[int | None, Node]]:
    """The ``<title>`` heading put first (if any), then the top-level nodes moved by ``shift``, each
    with a mark: for a heading, the index of its record in ``nodes`` (-1 for the title heading),
    which as ``resume`` gives them again from that heading on; then ``notes`` gets ``diagnostics``."""
    if resume is None or resume < 0:
        for node in heading:
            yield -1, node
        resume = 0
    for index, node in nodes.marked(shift, resume):
        yield (index if node.kind == "heading" else None), node
    notes.extend(diagnostics)
