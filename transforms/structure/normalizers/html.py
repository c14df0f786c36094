"""HTML into blocks, rendered as Markdown.

The document is parsed with libxml2's HTML parser (through lxml: C, fast, forgiving) and rendered
*as Markdown* into a new string ``text``; the blocks are recorded while the rendering is written,
so each interval indexes ``text`` (``verbatim`` is ``False``: there are no source offsets).
Intervals are in code points; every block starts at a line start and ends before a line break.
Blocks are separated by one blank line and ``text`` ends with ``"\\n"`` (it is ``""`` when no
block was found).

Rendered:

- ``h1``-``h6``: ``"#" * n + " " + title`` (``heading``); inside a list item or a block quote
  the same line is a ``paragraph`` (sections only nest at the top). Sphinx's ``¶`` permalinks
  (``a.headerlink``) are dropped. ``<title>`` becomes a level-1 heading when the page has no
  ``h1`` outside what is left out (an ``h1`` in navigation or in a skipped element below, e.g.
  ``<noscript><h1>Enable JavaScript</h1></noscript>``, does not count; an ``h1`` anywhere else
  does, even one rendered as a paragraph or a table cell, or empty): see :func:`_holds_h1`.
- ``p`` and any other text outside the elements below: ``paragraph``, inline elements
  flattened to their text, whitespace (any Unicode whitespace, no-break spaces included)
  collapsed to single spaces, ``<br>`` a line break inside the paragraph. Containers (``div``,
  ``section``, ``article``, ``dl``/``dt``/``dd``, ``body`` ...) end a paragraph and are otherwise
  transparent; inline elements (``span``, ``a``, ``code``, unknown tags ...) are not.
- ``pre`` (with or without ``code``): a fenced ``code`` block, the code verbatim (leading and
  trailing blank lines dropped); the fence is three backticks, or one more than the longest run
  of three or more backticks in the code; ``language`` from a ``language-``/``lang-``/
  ``highlight-`` class on the ``pre``, its ``code`` child, or the ``pre``'s parent or
  grandparent (Sphinx puts ``highlight-python3`` on a wrapper ``div``); ``fence`` is the opening
  fence line without the ``> `` or indentation of an enclosing quote or item (as the Markdown
  normalizer records it).
- ``table``: a pipe table (what is inside a table but not in a row, e.g. the rest of the page
  after a missing ``</table>``, is rendered after it, as a browser would move it out); header lines from ``thead``, else from leading rows of ``th`` cells
  only, else the first row (a pipe table needs a header; ``diagnostics`` counts such tables);
  then the ``| --- |`` delimiter. The first ``table_row`` spans the header line(s) and the
  delimiter (``header_rows`` 1), then one ``table_row`` per body row. Cells are flattened
  (nested tables and lists included), ``|`` escaped as ``\\|``, ``colspan`` padded with empty
  cells, rows padded to the widest row, rows without text dropped; ``rowspan`` is ignored. A
  ``caption`` is a paragraph before the table. Text in a table outside any cell is not rendered;
  a table without any cell text is dropped.
- ``ul``/``ol`` (and ``menu``/``dir``): ``list`` of ``list_item``, ``- `` and ``1. ``
  markers (ordered lists count from ``start``), nested content indented by the marker's width
  (two spaces, three for ``1. ``), ``level`` the list nesting depth. An item's first paragraph
  follows its marker; its other blocks (nested lists, paragraphs, code ...) are its children. An
  item that does not start with a paragraph puts its marker on a line of its own.
- ``blockquote``: lines prefixed ``> ``, a ``quote`` whose children are its blocks.
- ``hr``: ``rule`` (``---``).

Skipped with their content: ``head`` (but see ``<title>``), ``script``, ``style``,
``noscript``, ``template``, ``svg``, comments, processing instructions and CDATA sections (the
parser drops the last three), and site navigation: ``nav``, ``role="navigation"``, and Sphinx's
``sphinxsidebar`` / ``related`` and DocBook's ``navheader`` / ``navfooter`` blocks. Not rendered: inline formatting (emphasis, links' targets, inline
code backticks), images (no alt text), form controls' values, ``rowspan``. Elements nested
deeper than 200 levels are flattened to plain text.

Empty or whitespace-only input gives no blocks; input the parser refuses gives
no blocks and a diagnostic; when libxml2 stops early (it gives up past 2047 levels of nesting),
``NormalizationError("unreadable_html")`` is raised, since the rest of the page would be lost. Before parsing, ``\\r\\n`` and lone
``\\r`` become ``\\n`` (as the HTML standard does), NUL becomes U+FFFD, lone surrogates become
``?``, and ``</body>``/``</html>`` end tags are removed (libxml2 would drop content after them).

Memory. A page of :data:`STREAM_DOCUMENT_CHARS` (1 Mi) code points or more is read in windows of
:data:`STREAM_WINDOW_CHARS` with libxml2's push parser (the same tree as a whole parse) and gives
the same result as a page read whole: under the top-level containers (``html``, ``body``, ``div``
...), lists and tables, each child is rendered as soon as it is complete (a later sibling exists)
and then freed, so the element tree alive at a time is the open elements plus about one window.
Page-wide facts come out the same: navigation is left out where it is met, its tail joined to the
text before it; the ``<title>`` heading is put first at the end, when no ``h1`` that counts was
met (each child is asked before it is read). A top-level list is written an item at a time, a
table when it ends (its widest row sets the width; rows are kept packed, a string per 1,024
rows); their nodes are kept as integers (12 bytes an item or row) and, when the block's
rendering is over :data:`STREAM_BLOCK_CHARS`, given as
:class:`~transforms.structure.tree.StreamedChildren`. The top-level blocks are kept so too (a
top-level heading's title read back from its line of the rendering) and given as a
``StreamedChildren`` that makes them again from those records on every pass. Still whole: a list or table inside a
block quote or list item, an element that is not a container (a huge ``p`` or ``pre``), the
rest of a page after a missing ``</table>`` (moved out of the table, so held until it ends).
A page the windows cannot read (the parser refuses it or stops early, or a control character
next to left-out navigation, which the whole path replaces) is read whole.
"""

from __future__ import annotations

import re
import threading
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lxml import etree

from transforms.structure.tree import (
    Node,
    NormalizationError,
    NormalizedDocument,
    StreamedChildren,
    streamed_document,
)

__all__ = ["normalize_html"]

# Element kinds.
_INLINE, _SKIP, _BREAK, _CONTAINER, _HEADING, _CODE, _LIST, _TABLE, _QUOTE, _RULE, _LINK = range(11)

_KINDS: dict[str, int] = {
    **dict.fromkeys(("head", "script", "style", "noscript", "template", "svg"), _SKIP),
    "br": _BREAK,
    **dict.fromkeys(("html", "body", "div", "p", "section", "article", "main", "header", "footer", "nav", "aside", "address", "figure", "figcaption", "details", "summary", "fieldset", "legend", "form", "center", "hgroup", "dialog", "dl", "dt", "dd", "li", "caption", "thead", "tbody", "tfoot", "tr", "td", "th", "frameset", "noframes", "search"), _CONTAINER),
    **{f"h{n}": _HEADING for n in range(1, 7)},
    **dict.fromkeys(("pre", "listing", "xmp", "plaintext"), _CODE),
    **dict.fromkeys(("ul", "ol", "menu", "dir"), _LIST),
    "table": _TABLE,
    "blockquote": _QUOTE,
    "hr": _RULE,
    "a": _LINK,
}
_SKIP_TAGS = tuple(tag for tag, kind in _KINDS.items() if kind == _SKIP)
#: Deeper elements are flattened to text (Python's recursion limit; libxml2 nests up to 2047).
_MAX_DEPTH = 200
_LINE_BREAK_MARK = "\x00"  # stands for <br> while inline text is gathered (NUL never reaches the tree)
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang|highlight)-([A-Za-z0-9_+#.-]+)")
_BACKTICKS = re.compile(r"`{3,}")
_END_TAGS = re.compile(r"</(?:body|html)\s*>", re.IGNORECASE)
_PARSERS = threading.local()  # an lxml parser must not be shared between threads

#: Pages of this many code points or more are read in windows (``_normalize_streamed``).
STREAM_DOCUMENT_CHARS = 1 << 20
#: Code points of source fed to the parser at a time on that path.
STREAM_WINDOW_CHARS = 1 << 16
#: A top-level list or table of a page read in windows whose rendering is longer than this many
#: code points gets ``StreamedChildren`` (made again from compact records on each iteration).
STREAM_BLOCK_CHARS = 1 << 16


#: libxml2's options on both paths (the whole tree's parser and the push parser).
_PARSER_OPTIONS = dict(encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True, no_network=True)


def _parser() -> etree.HTMLParser:
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = etree.HTMLParser(**_PARSER_OPTIONS)
    return parser


def _prepared(source: str) -> str:
    """``source`` as libxml2 is given it, on both paths: ``\\r\\n`` and a lone ``\\r`` become
    ``\\n``, NUL becomes U+FFFD, and ``</body>``/``</html>`` end tags are removed."""
    return _END_TAGS.sub("", source.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd"))


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


def _collapse(text: str) -> str:
    """``text`` with every run of whitespace (``str.isspace``) made one space, and stripped."""
    return " ".join(text.split())


# -- from the element tree to blocks ----------------------------------------------------------


class _Reader:
    """Turns lxml elements into intermediate blocks."""

    def __init__(self) -> None:
        self.headerless_tables = 0
        self.flattened = 0

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
                if "headerlink" not in (child.get("class") or ""):
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
                code = self.code(child, depth)
                if code is not None:
                    out.blocks.append(code)
            elif kind == _LIST:
                out.flush()
                listed = self.list(child, depth, ordered=tag == "ol")
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
                if kind == _SKIP or (kind == _LINK and "headerlink" in (child.get("class") or "")):
                    pass
                elif kind == _BREAK:
                    parts.append("\n" if verbatim else " ")
                elif depth >= _MAX_DEPTH:
                    self.flattened += 1
                    parts.append(_deep_text(child))
                elif kind == _INLINE or kind == _LINK:
                    self._flat(child, parts, depth + 1, verbatim)
                else:  # a block inside inline or verbatim text still separates words (or lines)
                    gap = "\n" if verbatim else " "
                    parts.append(gap)
                    self._flat(child, parts, depth + 1, verbatim)
                    parts.append(gap)
            tail = child.tail
            if tail:
                parts.append(tail)

    def code(self, pre, depth: int) -> _Code | None:
        code = self.flat_text(pre, depth, verbatim=True)
        lines = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        first, last = 0, len(lines)
        while first < last and not lines[first].strip():
            first += 1
        while last > first and not lines[last - 1].strip():
            last -= 1
        if first == last:
            return None
        return _Code(_language(pre), lines[first:last])

    def list(self, element, depth: int, *, ordered: bool) -> _List | None:
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


def _language(pre) -> str:
    candidates = [pre]
    code = next(iter(pre), None)
    if code is not None and code.tag == "code":
        candidates.append(code)
    parent = pre.getparent()
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


# -- from blocks to Markdown ------------------------------------------------------------------


_PACK_PARTS = 8192


class _Writer:
    """Appends the Markdown rendering and returns each block's node as it is written."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.packed: list[str] = []  # earlier parts, joined
        self.position = 0

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.position += len(text)

    def pack(self) -> None:
        """Join the parts written so far into one string (many small strings take more room)."""
        if self.parts:
            self.packed.append("".join(self.parts))
            self.parts.clear()

    def text(self) -> list[str]:
        """What was written, as strings to join."""
        return self.packed + self.parts

    def sequence(self, blocks: list[object], prefix: str, depth: int, *, in_item: bool) -> list[Node]:
        """Blocks inside a container whose lines start with ``prefix``; the first one starts here."""
        nodes: list[Node] = []
        blank = "\n" + prefix.rstrip() + "\n"
        for index, block in enumerate(blocks):
            if index:
                self.write("\n" if in_item and isinstance(block, _List) else blank)
            nodes.append(self.block(block, prefix, depth))
        return nodes

    def block(self, block: object, prefix: str, depth: int) -> Node:
        start = self.position
        if isinstance(block, _Paragraph):
            self.write(prefix + ("\n" + prefix).join(block.lines))
            return Node("paragraph", start, self.position)
        if isinstance(block, _Heading):
            self.write(prefix + "#" * block.level + " " + block.title)
            return Node("heading", start, self.position, level=block.level, title=block.title)
        if isinstance(block, _Code):
            return self.code(block, prefix)
        if isinstance(block, _List):
            return self.list(block, prefix, depth + 1)
        if isinstance(block, _TableState):
            rows: list[Node] = []
            self.table(block, prefix, rows.append)
            return Node("table", start, self.position, tuple(rows), header_rows=1)
        if isinstance(block, _Quote):
            children = self.sequence(block.blocks, prefix + "> ", depth, in_item=False)
            return Node("quote", start, self.position, tuple(children))
        self.write(prefix + "---")
        return Node("rule", start, self.position)

    def code(self, block: _Code, prefix: str) -> Node:
        start = self.position
        longest = max((len(run) for line in block.lines for run in _BACKTICKS.findall(line)), default=2)
        fence = "`" * max(3, longest + 1)
        opening = fence + block.language
        empty = prefix.rstrip()
        body = "\n".join(prefix + line if line else empty for line in block.lines)
        self.write(f"{prefix}{opening}\n{body}\n{prefix}{fence}")
        return Node("code", start, self.position, language=block.language, fence=opening)

    def table(self, block: _TableState, prefix: str, add_row: Callable[[Node], None]) -> None:
        """Write a table's lines, giving each row's node to ``add_row``."""
        start = self.position
        header, body = block.lines()
        self.write("\n".join(prefix + line for line in header) + "\n" + prefix + "|" + " --- |" * (block.width or 1))
        add_row(Node("table_row", start, self.position))
        for line in body:
            if len(self.parts) > _PACK_PARTS:
                self.pack()
            self.write("\n")
            row_start = self.position
            self.write(prefix + line)
            add_row(Node("table_row", row_start, self.position))

    def list(self, block: _List, prefix: str, level: int) -> Node:
        start = self.position
        items: list[Node] = []
        for index, blocks in enumerate(block.items):
            if index:
                self.write("\n")
            items.append(self.item(blocks, block.ordered, block.first_number + index, prefix, level))
        return Node("list", start, self.position, tuple(items), level=level)

    def item(self, blocks: list[object], ordered: bool, number: int, prefix: str, level: int) -> Node:
        item_start = self.position
        marker = f"{number}. " if ordered else "- "
        inner = prefix + " " * len(marker)
        first = blocks[0]
        if isinstance(first, _Paragraph):
            self.write(prefix + marker + ("\n" + inner).join(first.lines))
            rest = blocks[1:]
            if rest:
                self.write("\n" if isinstance(rest[0], _List) else "\n" + inner.rstrip() + "\n")
        else:
            self.write(prefix + marker.rstrip() + "\n")
            rest = blocks
        children = self.sequence(rest, inner, level, in_item=True)
        return Node("list_item", item_start, self.position, tuple(children))


def _table_line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


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
        children = node.children
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
        if end - start <= STREAM_BLOCK_CHARS:
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
            if end - start > STREAM_BLOCK_CHARS:
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


# What lxml refuses in a string it is given, though it takes it from a page it parses: C0 controls
# but tab, line feed and carriage return, U+FFFE and U+FFFF (NUL is U+FFFD before parsing).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _joined_tail(before: str | None, tail: str) -> str:
    """``before + tail``: the text before a left-out navigation element joined with its tail, as
    lxml will take it (a character it refuses becomes a space when it is whitespace, a form feed
    for one, which the rendering collapses anyway, else U+FFFD)."""
    merged = (before or "") + tail
    if _NOT_XML.search(merged) is not None:
        merged = _NOT_XML.sub(lambda m: " " if m.group().isspace() else "\ufffd", merged)
    return merged


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
            stream.dropped += 1 + _remove_navigation(child)  # (as the whole tree's path does: see _check_merge)
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
                    stream.dropped += _remove_navigation(child)
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

    def on_text(self, text: str | None) -> None:
        raise NotImplementedError

    def open(self, child) -> _Frame | None:
        """A child was met (not navigation): its frame, or ``None`` to read it whole once settled."""
        return None

    def unit(self, child) -> bool:
        """Read a settled child (whole, tail final); ``True`` to keep it in the tree."""
        raise NotImplementedError

    def merge(self, tail: str | None) -> None:
        """The tail of a left-out navigation child (it joins the text before the child)."""
        raise NotImplementedError

    def child_tail(self, tail: str | None) -> None:
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

    def __init__(self) -> None:
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
            nav = _is_navigation(following)
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
        end = start + STREAM_WINDOW_CHARS
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


def _normalize_streamed(content: str) -> NormalizedDocument | None:
    """:func:`normalize_html` reading the page in windows with libxml2's push parser (see the
    module docstring); ``None`` when the page must be read whole instead (the parser refuses it,
    stops early, or finds no element, or lxml refuses a string the whole path would set).
    """
    stream = _Stream()
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
    top = stream.top
    top.flush()
    if top.blocks:
        stream.drain()
    diagnostics = []
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
    diagnostics = tuple(diagnostics)
    return streamed_document(
        text,
        _top_level_nodes,
        tuple(heading),
        stream.nodes,
        len(lead),
        diagnostics,
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


def _reader_notes(reader: _Reader) -> list[str]:
    notes = []
    if reader.headerless_tables:
        notes.append(f"{reader.headerless_tables} table(s) without a header row: first row rendered as the header")
    if reader.flattened:
        notes.append(f"{reader.flattened} element(s) nested deeper than {_MAX_DEPTH} levels flattened to text")
    return notes


# -- entry point ------------------------------------------------------------------------------


def normalize_html(content: str) -> NormalizedDocument:
    """Normalize HTML (a whole page or a fragment) by rendering it as Markdown.

    Never raises for bad markup: what the parser cannot read yields fewer blocks (maybe none) and
    a note in ``diagnostics``. Pages of :data:`STREAM_DOCUMENT_CHARS` or more are read in windows
    (same result, memory that does not grow with a list's or table's size: see the module
    docstring).

    Args:
        content: The HTML source.

    Returns:
        A non-verbatim :class:`NormalizedDocument` whose ``text`` is the Markdown rendering;
        intervals in code points of that rendering. For a page read in windows its ``blocks``
        are a :class:`~transforms.structure.tree.StreamedChildren` (made from compact records on
        every pass; a heading's mark is its record's index, see ``tree.streamed_document``).

    Raises:
        NormalizationError: ``unreadable_html`` when the parser stops before the end of the page.
    """
    if len(content) >= STREAM_DOCUMENT_CHARS:
        streamed = _normalize_streamed(content)
        if streamed is not None:
            return streamed
    diagnostics: list[str] = []
    root = _parse(content, diagnostics)
    blocks: list[object] = []
    reader = _Reader()
    if root is not None:
        has_h1 = _holds_h1(root)  # (before the walk, which strips skipped elements it flattens)
        top = _Collector(nested=False)
        reader.walk(root, top, 0)
        blocks = top.finish()
        if not has_h1:
            title = _title(root)
            if title:
                blocks.insert(0, _Heading(1, title))
    diagnostics.extend(_reader_notes(reader))
    writer = _Writer()
    nodes = writer.sequence(blocks, "", 0, in_item=False)
    text = "".join(writer.text()) + "\n" if nodes else ""
    return NormalizedDocument(
        text=text, blocks=tuple(nodes), content_format="html", verbatim=False, diagnostics=tuple(diagnostics)
    )


def _parse(content: str, diagnostics: list[str]):
    """The document's root element, or ``None`` (with a diagnostic) when there is nothing to read."""
    source = _prepared(content)
    if not source.strip():
        return None
    parser = _parser()
    try:
        root = etree.fromstring(source.encode("utf-8", "replace"), parser)
    except (etree.LxmlError, ValueError) as err:
        diagnostics.append(f"HTML parser refused the input: {type(err).__name__}: {str(err)[:200]}")
        return None
    fatal = [entry for entry in parser.error_log if entry.level_name == "FATAL"]
    if fatal:
        # The rest of the page would be lost without a trace: refuse the document instead (the
        # dead letter keeps its whole content).
        raise NormalizationError(
            "unreadable_html",
            f"the HTML parser stopped at line {fatal[0].line}: {' '.join(fatal[0].message.split())[:200]}",
        )
    if root is None:
        diagnostics.append("HTML parser found no elements")
        return None
    dropped = _remove_navigation(root)
    if dropped:
        diagnostics.append(f"{dropped} navigation elements left out")
    return root


def _remove_navigation(root) -> int:
    """Remove the navigation elements under ``root`` (not ``root`` itself), keeping their tails
    (the text after an element is not part of it); the number removed."""
    dropped = 0
    for element in _navigation(root):
        parent = element.getparent()
        if parent is None or element is root:
            continue
        tail = element.tail
        if tail:
            previous = element.getprevious()
            if previous is not None:
                previous.tail = _joined_tail(previous.tail, tail)
            else:
                parent.text = _joined_tail(parent.text, tail)
        parent.remove(element)
        dropped += 1
    return dropped


#: Site navigation, not the page's content: ``nav``, ARIA ``role="navigation"``, and the
#: navigation blocks of the two documentation generators that make most HTML docs (Sphinx's
#: sidebar and "related" bars, DocBook's navheader/navfooter), as classes.
_NAVIGATION_CLASSES = frozenset({"sphinxsidebar", "related", "navheader", "navfooter"})
# What XPath's normalize-space() collapses: XML whitespace, not all that str.split() splits on.
_XML_SPACE = re.compile(r"[ \t\r\n]+")


def _is_navigation(element) -> bool:
    if element.tag == "nav" or element.get("role") == "navigation":
        return True
    names = element.get("class")
    return bool(names) and not _NAVIGATION_CLASSES.isdisjoint(_XML_SPACE.split(names))


def _navigation(root) -> list:
    """The elements under ``root`` (itself included) that are navigation, in document order.

    The same elements, in the same order, as the XPath ``//nav | //*[@role='navigation'] |
    //*[contains(concat(' ', normalize-space(@class), ' '), ' sphinxsidebar ') or ...]`` (a class
    is one of the attribute's whitespace-separated names), which ``tests/test_normalize_html.py``
    checks; one walk over the elements costs about a third of that expression's evaluation (lxml 6).
    """
    found = []
    for element in root.iter(etree.Element):
        if element.tag == "nav" or element.get("role") == "navigation":
            found.append(element)
            continue
        names = element.get("class")
        if names and not _NAVIGATION_CLASSES.isdisjoint(_XML_SPACE.split(names)):
            found.append(element)
    return found


def _holds_h1(element) -> bool:
    """Whether ``element`` is or holds an ``h1`` that is not inside a skipped element (``svg``,
    ``template``, ``noscript``, ``head`` ...: ``_SKIP_TAGS``): whether the ``<title>`` is left out.

    Both paths ask it of the tree as parsed, navigation removed (the whole tree's :func:`_parse`;
    the windowed path removes it from each child first), before reading (which strips the skipped
    elements under an element it flattens past :data:`_MAX_DEPTH`, see ``_deep_text``), so that
    both give the same answer at any depth. ``element`` must not be inside a skipped element
    (on the windowed path its ancestors are frames: containers, lists, tables). Time linear in
    the elements: the first ``h1`` (libxml2's walk, as before) and its ancestors; only when that
    one is hidden, a walk that meets each ``h1`` and skipped element at most twice.
    """
    if element.tag == "h1":
        return True
    first = next(element.iter("h1"), None) if len(element) else None
    if first is None:
        return False
    if next(first.iterancestors(*_SKIP_TAGS), None) is None:
        return True
    hidden = set()  # the h1 and skipped elements inside a skipped element met so far
    for found in element.iter("h1", *_SKIP_TAGS):
        if found in hidden:
            continue
        if found.tag == "h1":
            return True
        hidden.update(found.iter("h1", *_SKIP_TAGS))
    return False


def _title(root) -> str:
    head = root.find("head")
    title = head.find("title") if head is not None else None
    return _collapse("".join(title.itertext())) if title is not None else ""
