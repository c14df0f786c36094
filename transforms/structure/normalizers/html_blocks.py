"""HTML elements into intermediate blocks: paragraphs, headings, code, lists, tables, quotes, rules.

:class:`_Reader` walks an element (the whole tree on the whole path; one settled child at a time
on the windowed path, ``html_stream``) and appends the blocks it finds to a :class:`_Collector`;
lists and tables are read by :class:`_ListState` and :class:`_TableState`, which the windowed
path also drives an item or a row at a time. The blocks are rendered as Markdown by
``html_markdown._Writer``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lxml import etree

from transforms.structure.normalizers.html_elements import (
    _BREAK,
    _CODE,
    _CONTAINER,
    _HEADING,
    _INLINE,
    _KINDS,
    _LINK,
    _LIST,
    _MAX_DEPTH,
    _QUOTE,
    _RULE,
    _SKIP,
    _SKIP_TAGS,
    _TABLE,
    _collapse,
)

_LINE_BREAK_MARK = "\x00"  # stands for <br> while inline text is gathered (NUL never reaches the tree)
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang|highlight)-([A-Za-z0-9_+#.-]+)")


# -- the intermediate blocks ------------------------------------------------------------------


@dataclass(slots=True)
class _Paragraph:
    lines: list[str]


@dataclass(slots=True)
class _Heading:
    level: int
    title: str


@dataclass(slots=True)
class _Code:
    language: str
    lines: list[str]


@dataclass(slots=True)
class _List:
    ordered: bool
    first_number: int
    items: list[list[object]]


@dataclass(slots=True)
class _Quote:
    blocks: list[object]


@dataclass(slots=True)
class _Rule:
    pass


@dataclass(slots=True)
class _Collector:
    """Blocks found so far in one container, and the inline text not yet made a paragraph."""

    nested: bool
    blocks: list[object] = field(default_factory=list)
    inline: list[str] = field(default_factory=list)

    def flush(self) -> None:
        if not self.inline:
            return
        joined = "".join(self.inline)
        self.inline.clear()
        lines = [_collapse(line) for line in joined.split(_LINE_BREAK_MARK)]
        lines = [line for line in lines if line]
        if lines:
            self.blocks.append(_Paragraph(lines))

    def finish(self) -> list[object]:
        self.flush()
        return self.blocks


# -- from the element tree to blocks ----------------------------------------------------------


class _Reader:
    """Turns lxml elements into intermediate blocks."""

    def __init__(self) -> None:
        self.headerless_tables = 0
        self.flattened = 0
        self.layout_tables = 0
        self.link_cells = 0

    def walk(self, element, out: _Collector, depth: int) -> None:
        """Add ``element``'s content (not its tail) to ``out``."""
        text = element.text
        if text:
            out.inline.append(text)
        for child in element:
            self.child(child, out, depth + 1)

    def child(self, child, out: _Collector, depth: int) -> None:
        """Add one child element and its tail to ``out``."""
        tag = child.tag
        if isinstance(tag, str):
            kind = _KINDS.get(tag, _INLINE)
            if depth > _MAX_DEPTH and kind != _SKIP:
                self.flattened += 1
                out.flush()
                out.inline.append(_deep_text(child))
                out.flush()
            elif kind == _INLINE:
                self.walk(child, out, depth)
            elif kind == _LINK:
                if not _is_control_link(child):
                    self.walk(child, out, depth)
            elif kind == _BREAK:
                out.inline.append(_LINE_BREAK_MARK)
            elif kind == _CONTAINER:
                out.flush()
                self.walk(child, out, depth)
                out.flush()
            elif kind == _HEADING:
                out.flush()
                title = _collapse(self.flat_text(child, depth))
                if title:
                    level = int(tag[1])
                    if out.nested:
                        out.blocks.append(_Paragraph(["#" * level + " " + title]))
                    else:
                        out.blocks.append(_Heading(level, title))
            elif kind == _CODE:
                out.flush()
                out.blocks.extend(self.codes(child, depth))
            elif kind == _LIST:
                out.flush()
                listed = self.read_list(child, depth, ordered=tag == "ol")
                if listed is not None:
                    out.blocks.append(listed)
            elif kind == _TABLE:
                out.flush()
                self.table(child, out, depth)
            elif kind == _QUOTE:
                out.flush()
                inner = _Collector(nested=True)
                self.walk(child, inner, depth)
                blocks = inner.finish()
                if blocks:
                    out.blocks.append(_Quote(blocks))
            elif kind == _RULE:
                out.flush()
                out.blocks.append(_Rule())
        tail = child.tail
        if tail:
            out.inline.append(tail)

    def flat_text(self, element, depth: int, *, verbatim: bool = False) -> str:
        """``element``'s text with markup removed: ``<br>`` a line break when ``verbatim``, else a space."""
        parts: list[str] = []
        self._flat(element, parts, depth, verbatim)
        return "".join(parts)

    def _flat(self, element, parts: list[str], depth: int, verbatim: bool) -> None:
        text = element.text
        if text:
            parts.append(text)
        for child in element:
            tag = child.tag
            if isinstance(tag, str):
                kind = _KINDS.get(tag, _INLINE)
                if kind == _SKIP or (kind == _LINK and _is_control_link(child)):
                    pass
                elif kind == _BREAK:
                    parts.append("\n" if verbatim else " ")
                elif depth >= _MAX_DEPTH:
                    self.flattened += 1
                    parts.append(_deep_text(child))
                elif kind in (_INLINE, _LINK):
                    self._flat(child, parts, depth + 1, verbatim)
                else:  # a block inside inline or verbatim text still separates words (or lines)
                    gap = "\n" if verbatim else " "
                    parts.append(gap)
                    self._flat(child, parts, depth + 1, verbatim)
                    parts.append(gap)
            tail = child.tail
            if tail:
                parts.append(tail)

    def codes(self, pre, depth: int) -> list[_Code]:
        """The code blocks of a ``pre``: one, or one per ``code`` child when it holds two or more
        and nothing else with text (alternatives shown as tabs, e.g. a sample as ES module and as
        CommonJS, one of which a page shows at a time)."""
        parts = [child for child in pre if child.tag == "code"]
        if len(parts) > 1 and self._only_codes(pre, depth):
            found = [self.code(part, depth + 1, pre) for part in parts]
            return [code for code in found if code is not None]
        code = self.code(pre, depth)
        return [code] if code is not None else []

    def _only_codes(self, pre, depth: int) -> bool:
        """Whether the text of ``pre`` is all inside its ``code`` children."""
        if (pre.text or "").strip():
            return False
        for child in pre:
            if (child.tail or "").strip():
                return False
            if child.tag != "code" and _KINDS.get(child.tag) != _SKIP and self.flat_text(child, depth + 1).strip():
                return False
        return True

    def code(self, pre, depth: int, block=None) -> _Code | None:
        """One code block of ``pre``'s text; ``block``: the ``pre`` when ``pre`` is one of its
        ``code`` children (the language is looked for on the child first)."""
        code = self.flat_text(pre, depth, verbatim=True)
        lines = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        first, last = 0, len(lines)
        while first < last and not lines[first].strip():
            first += 1
        while last > first and not lines[last - 1].strip():
            last -= 1
        if first == last:
            return None
        return _Code(_language(pre) if block is None else (_language(pre, ()) or _language(block)), lines[first:last])

    def read_list(self, element, depth: int, *, ordered: bool) -> _List | None:
        items: list[list[object]] = []
        state = _ListState(self, depth, items.append)
        state.text(element.text)
        for child in element:
            state.child(child)
        state.finish()
        if not items:
            return None
        return _List(ordered, _first_number(element, ordered), items)

    def table(self, table, out: _Collector, depth: int) -> None:
        if _is_layout(table, depth):
            # Read as the containers it stands for: each cell's blocks in order.
            self.layout_tables += 1
            for cell in _link_cells(table, depth):
                self.link_cells += 1
                _remove_keeping_tail(cell)
            out.flush()
            self.walk(table, out, depth)
            out.flush()
            return
        state = _TableState(self, out, depth)
        state.text(table.text)
        state.parts(table, "tbody", depth + 1)
        state.finish(lambda: out.blocks.append(state))

    def row(self, tr, depth: int) -> tuple[list[str], bool]:
        cells: list[str] = []
        all_th = True
        for cell in tr:
            tag = cell.tag
            if tag != "td" and tag != "th":
                continue
            all_th = all_th and tag == "th"
            text = _collapse(self.flat_text(cell, depth + 1)).replace("|", "\\|")
            cells.append(text)
            try:
                span = int(cell.get("colspan") or 1)
            except ValueError:
                span = 1
            cells.extend([""] * (max(1, min(span, 100)) - 1))
        return cells, all_th and bool(cells)


def _first_number(element, ordered: bool) -> int:
    """An ordered list's first number (its ``start``, 0 to 10**9; 1 when absent or not a number)."""
    try:
        first_number = int(element.get("start") or 1) if ordered else 1
    except ValueError:
        first_number = 1
    return max(0, min(first_number, 10**9))


class _ListState:
    """One list being read, its children given one at a time (each whole, its tail final).

    ``emit`` gets each item's blocks once no later content can join it (content directly inside
    the list, outside any ``li``, joins the item before it).
    """

    __slots__ = ("depth", "emit", "pending", "reader", "stray")

    def __init__(self, reader: _Reader, depth: int, emit) -> None:
        self.reader = reader
        self.depth = depth
        self.emit = emit
        self.stray = _Collector(nested=True)  # content directly inside the list, outside any li
        self.pending: list[object] | None = None

    def text(self, text: str | None) -> None:
        """Text directly inside the list (its own text, the tail of a left-out element)."""
        if text:
            self.stray.inline.append(text)

    def child(self, child) -> None:
        if child.tag == "li" and self.depth < _MAX_DEPTH:
            loose = self.stray.finish()
            if loose:
                self._attach(loose)
                self.stray = _Collector(nested=True)
            item = _Collector(nested=True)
            self.reader.walk(child, item, self.depth + 1)
            blocks = item.finish()
            if blocks:
                self._push(blocks)
            if child.tail:
                self.stray.inline.append(child.tail)
        else:
            self.reader.child(child, self.stray, self.depth + 1)

    def _attach(self, blocks: list[object]) -> None:
        if self.pending is not None:
            self.pending.extend(blocks)
        else:
            self._push(blocks)

    def _push(self, blocks: list[object]) -> None:
        if self.pending is not None:
            self.emit(self.pending)
        self.pending = blocks

    def finish(self) -> None:
        loose = self.stray.finish()
        if loose:
            self._attach(loose)
        if self.pending is not None:
            self.emit(self.pending)
            self.pending = None


_SECTIONS = ("thead", "tbody", "tfoot")
_PACK_ROWS = 1024  # table rows joined into one string at a time (cells hold no "\n" and no NUL)


class _TableState:
    """One table being read, its parts given one at a time (each whole, its tail final).

    Body rows are kept packed (cells joined by NUL, rows by ``"\\n"``, one string per
    :data:`_PACK_ROWS` rows), and only rows with text (a row without text is dropped); header
    rows from ``thead`` are kept as they are.
    """

    def __init__(self, reader: _Reader, out: _Collector, depth: int) -> None:
        self.reader = reader
        self.out = out
        self.depth = depth
        self.header: list[list[str]] = []
        self.packed: list[str] = []  # body rows with text, packed
        self.rows: list[str] = []  # the last ones, one string a row
        self.count = 0  # body rows with text
        self.lead = 0  # leading body rows (with text) of th cells only
        self.leading = True
        self.width = 0
        self.has_text = False
        self.head_rows = 0  # body rows made the header (no thead)
        # What a browser would move out of a table ("foster parenting"): text between rows and
        # elements that are not rows, e.g. everything after a missing </table>. Rendered after it.
        self.stray: list = []
        self.stray_text: list[str] = []
        self.last_stray = False  # the last part seen went to ``stray``
        # For the windowed path's layout test (``_is_layout``): a header row, a row of two or
        # more cells, a row with a cell that holds a table or a heading, one with a block.
        self.header_rows = self.wide_rows = self.layout_rows = self.block_rows = False

    def text(self, text: str | None) -> None:
        """Text that is in no cell, in document order (a table's or section's text, a part's tail)."""
        text = text or ""
        stray_text = self.stray_text
        if stray_text and not stray_text[-1].strip():
            stray_text[-1] = text  # only words count: they are joined by spaces, then collapsed
        else:
            stray_text.append(text)
        self.last_stray = False

    def merge_tail(self, tail: str | None) -> None:
        """The tail of a left-out navigation element: it joins the text before the element."""
        if not tail:
            return
        if self.last_stray:
            element = self.stray[-1]
            element.tail = (element.tail or "") + tail
        else:
            self.stray_text[-1] += tail

    def parts(self, container, section: str, level: int) -> None:
        for part in container:
            self.part(part, section, level)

    def part(self, part, section: str, level: int) -> None:
        tag = part.tag
        if not isinstance(tag, str):
            self.text(part.tail)
            return
        if tag == "caption":
            caption = _collapse(self.reader.flat_text(part, level))
            if caption:
                self.out.blocks.append(_Paragraph([caption]))
        elif tag == "tr":
            row, all_th = self.reader.row(part, level)
            self.row(row, all_th, section == "thead")
        elif tag in _SECTIONS:
            self.text(part.text)
            self.parts(part, tag, level + 1)
        elif tag in ("colgroup", "col"):
            pass
        elif part.find(".//tr") is not None and level < _MAX_DEPTH and _KINDS.get(tag) != _SKIP:
            # A wrapper around rows (a form, a div); a skipped one (a template ...) is skipped with
            # its rows, as anywhere else.
            self.text(part.text)
            self.parts(part, section, level + 1)
        else:
            self.stray.append(part)
            self.last_stray = True
            return
        self.text(part.tail)

    def row(self, row: list[str], all_th: bool, head: bool) -> None:
        if head:
            self.header.append(row)
            self.width = max(self.width, len(row))
            self.has_text = self.has_text or any(row)
            return
        if not any(row):
            return
        self.has_text = True
        self.width = max(self.width, len(row))
        if self.leading:
            if all_th:
                self.lead += 1
            else:
                self.leading = False
        self.count += 1
        self.rows.append("\x00".join(row))
        if len(self.rows) >= _PACK_ROWS:
            self.packed.append("\n".join(self.rows))
            self.rows.clear()

    def _body(self) -> Iterator[list[str]]:
        for packed in self.packed:
            for row in packed.split("\n"):
                yield row.split("\x00")
        for row in self.rows:
            yield row.split("\x00")

    def lines(self) -> tuple[list[str], Iterator[str]]:
        """The header's pipe-table lines and the body's, rows padded to the widest."""
        width = self.width or 1
        rows = self._body()
        header = self.header or [next(rows) for _ in range(self.head_rows)]

        def line(row: list[str]) -> str:
            if len(row) < width:
                row = row + [""] * (width - len(row))
            return _table_line(row)

        return [line(row) for row in header], map(line, rows)

    def finish(self, emit: Callable[[], None]) -> None:
        """Calls ``emit()`` if the table has text, then adds what was moved out of it to ``out``."""
        if self.has_text:
            if not self.header:
                if self.lead == 0:
                    self.reader.headerless_tables += 1
                self.head_rows = min(max(self.lead, 1), self.count - 1) if self.count > 1 else 1
            emit()
        out = self.out
        text = _collapse(" ".join(self.stray_text))
        if text:
            out.blocks.append(_Paragraph([text]))
        for element in self.stray:
            tail, element.tail = element.tail, None
            self.reader.child(element, out, self.depth + 1)
            out.flush()
            if tail and tail.strip():
                out.blocks.append(_Paragraph([_collapse(tail)]))


def _deep_text(element) -> str:
    """All text under ``element`` without recursion (skipped elements removed first)."""
    etree.strip_elements(element, *_SKIP_TAGS, with_tail=False)
    return " ".join(element.itertext())  # the element's own tail is not included


def _language(pre, around: tuple = (None,)) -> str:
    """The language named by a class of ``pre``, its first child when a ``code``, its parent or
    grandparent; only ``pre`` and that child when ``around`` is empty."""
    candidates = [pre]
    code = next(iter(pre), None)
    if code is not None and code.tag == "code":
        candidates.append(code)
    parent = pre.getparent() if around else None
    if parent is not None:
        candidates.append(parent)
        grandparent = parent.getparent()
        if grandparent is not None:
            candidates.append(grandparent)
    for element in candidates:
        match = _LANGUAGE.search(element.get("class") or "")
        if match is not None:
            return match.group(1)
    return ""


def _reader_notes(reader: _Reader) -> list[str]:
    notes = []
    if reader.headerless_tables:
        notes.append(f"{reader.headerless_tables} table(s) without a header row: first row rendered as the header")
    if reader.layout_tables:
        notes.append(f"{reader.layout_tables} layout table(s) read as their cells' blocks")
    if reader.link_cells:
        notes.append(f"{reader.link_cells} layout-table cell(s) of links left out")
    if reader.flattened:
        notes.append(f"{reader.flattened} element(s) nested deeper than {_MAX_DEPTH} levels flattened to text")
    return notes


def _table_line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


# -- page chrome inside the content -----------------------------------------------------------

#: The whole text of an in-page link that is a permalink mark (Sphinx's ``¶``, the ``#`` of
#: Node.js and many static-site generators, ``§``, link emoji).
_PERMALINK_MARKS = frozenset({"#", "¶", "§", "🔗", "⚓", "¤"})
#: The text of an in-page link that skips to the content ("Skip to content", "Jump to navigation").
_SKIP_LINK = re.compile(r"(?:skip|jump)\s+to\b", re.IGNORECASE)


def _is_control_link(a) -> bool:
    """Whether the ``a`` element is a control, not content: Sphinx's ``headerlink``, or an in-page
    link (``href`` starting ``#``) whose text is only a permalink mark or starts "Skip to"/"Jump to"
    (under 40 characters)."""
    names = a.get("class")
    if names and "headerlink" in names:
        return True
    href = a.get("href")
    if not href or not href.startswith("#"):
        return False
    text = _collapse("".join(a.itertext()))
    return text in _PERMALINK_MARKS or (len(text) < 40 and _SKIP_LINK.match(text) is not None)


_CELLS = ("td", "th")
_HEADING_TAGS = tuple(f"h{n}" for n in range(1, 7))
_LAYOUT_ROLES = frozenset({"presentation", "none"})


def _table_rows(container, level: int) -> Iterator:
    """The rows of a table (or of one of its parts) as :class:`_TableState` reads them: in
    sections, and in wrappers that hold rows (not in nested tables)."""
    for part in container:
        yield from _part_rows(part, level)


def _part_rows(part, level: int) -> Iterator:
    """The rows of one child of a table or of a table section (``_TableState.part``'s choice)."""
    tag = part.tag
    if not isinstance(tag, str) or tag in ("caption", "colgroup", "col"):
        return
    if tag == "tr":
        yield part
    elif tag in _SECTIONS or (part.find(".//tr") is not None and level < _MAX_DEPTH and _KINDS.get(tag) != _SKIP):
        yield from _table_rows(part, level + 1)


def _layout_row(tr) -> bool:
    """A row one of whose cells holds a table or a heading: page layout, not data."""
    return any(cell.tag in _CELLS and next(cell.iter("table", *_HEADING_TAGS), None) is not None for cell in tr)


def _header_row(tr) -> bool:
    """A row in a ``thead`` or with a header cell (``th``)."""
    parent = tr.getparent()
    return (parent is not None and parent.tag == "thead") or any(cell.tag == "th" for cell in tr)


def _wide_row(tr) -> bool:
    """A row of two or more cells."""
    return sum(1 for cell in tr if cell.tag in _CELLS) > 1


#: Elements that make a block (a paragraph, a list ...), table parts aside.
_BLOCK_TAGS = tuple(
    tag
    for tag, kind in _KINDS.items()
    if kind in (_CONTAINER, _HEADING, _CODE, _LIST, _TABLE, _QUOTE, _RULE)
    and tag not in ("html", "body", "caption", "thead", "tbody", "tfoot", "tr", "td", "th")
)


def _block_row(tr) -> bool:
    """A row one of whose cells holds a block (a paragraph, a list, a ``div`` ...)."""
    return any(cell.tag in _CELLS and next(cell.iter(*_BLOCK_TAGS), None) is not None for cell in tr)


def _is_layout(table, depth: int) -> bool:
    """Whether ``table`` lays out a page rather than holding data: its role is ``presentation`` or
    ``none``; or none of its rows is a header row (in ``thead`` or with a ``th``), and a cell
    holds a table or a heading, or no row holds more than one cell and a cell holds a block (a
    one-cell-per-row container)."""
    if table.get("role") in _LAYOUT_ROLES:
        return True
    layout = wide = block = False
    for tr in _table_rows(table, depth + 1):
        if _header_row(tr):
            return False
        layout = layout or _layout_row(tr)
        wide = wide or _wide_row(tr)
        block = block or _block_row(tr)
    return layout or (block and not wide)


def _link_text(cell) -> tuple[int, int]:
    """(characters of text, characters of link text) of a cell, whitespace collapsed."""
    total = len(_collapse("".join(cell.itertext())))
    links = sum(len(_collapse("".join(a.itertext()))) for a in cell.iter("a"))
    return total, links


def _link_cells(table, depth: int) -> list:
    """The cells of a layout table's rows of two or more cells that are a menu: at least half of
    their text is link text, and another cell of the row has more text outside links (link
    density, as in Kohlschütter et al., "Boilerplate Detection using Shallow Text Features",
    WSDM 2010, and readability)."""
    found = []
    for tr in _table_rows(table, depth + 1):
        cells = [cell for cell in tr if cell.tag in _CELLS]
        if len(cells) < 2:
            continue
        counts = [_link_text(cell) for cell in cells]
        for index, (total, links) in enumerate(counts):
            if total and links * 2 >= total:
                plain = total - links
                if any(other - other_links > plain for i, (other, other_links) in enumerate(counts) if i != index):
                    found.append(cells[index])
    return found


def _remove_keeping_tail(element) -> None:
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)
