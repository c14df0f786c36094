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
  (``a.headerlink``) are dropped. ``<title>`` becomes a level-1 heading when the body has no
  ``h1``.
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
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from lxml import etree

from transforms.structure.tree import NormalizationError, Node, NormalizedDocument

__all__ = ["normalize_html"]

# Element kinds.
_INLINE, _SKIP, _BREAK, _CONTAINER, _HEADING, _CODE, _LIST, _TABLE, _QUOTE, _RULE, _LINK = range(11)

_KINDS: dict[str, int] = {
    **{tag: _SKIP for tag in ("head", "script", "style", "noscript", "template", "svg")},
    "br": _BREAK,
    **{
        tag: _CONTAINER
        for tag in (
            "html", "body", "div", "p", "section", "article", "main", "header", "footer", "nav", "aside",
            "address", "figure", "figcaption", "details", "summary", "fieldset", "legend", "form", "center",
            "hgroup", "dialog", "dl", "dt", "dd", "li", "caption", "thead", "tbody", "tfoot", "tr", "td",
            "th", "frameset", "noframes", "search",
        )
    },
    **{f"h{n}": _HEADING for n in range(1, 7)},
    **{tag: _CODE for tag in ("pre", "listing", "xmp", "plaintext")},
    **{tag: _LIST for tag in ("ul", "ol", "menu", "dir")},
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


def _parser() -> etree.HTMLParser:
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = etree.HTMLParser(
            encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True, no_network=True
        )
        _PARSERS.parser = parser
    return parser


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
class _Table:
    header: list[list[str]]
    body: list[list[str]]


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
    """Turns an lxml element tree into intermediate blocks."""

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
        stray = _Collector(nested=True)  # content directly inside the list, outside any li

        def attach(blocks: list[object]) -> None:
            if items:
                items[-1].extend(blocks)
            else:
                items.append(blocks)

        if element.text:
            stray.inline.append(element.text)
        for child in element:
            if child.tag == "li" and depth < _MAX_DEPTH:
                loose = stray.finish()
                if loose:
                    attach(loose)
                    stray = _Collector(nested=True)
                item = _Collector(nested=True)
                self.walk(child, item, depth + 1)
                blocks = item.finish()
                if blocks:
                    items.append(blocks)
                if child.tail:
                    stray.inline.append(child.tail)
            else:
                self.child(child, stray, depth + 1)
        loose = stray.finish()
        if loose:
            attach(loose)
        if not items:
            return None
        try:
            first_number = int(element.get("start") or 1) if ordered else 1
        except ValueError:
            first_number = 1
        first_number = max(0, min(first_number, 10**9))
        return _List(ordered, first_number, items)

    def table(self, table, out: _Collector, depth: int) -> None:
        header: list[list[str]] = []
        body: list[list[str]] = []
        header_cells: list[bool] = []  # per body row: whether all its cells are th
        # What a browser would move out of a table ("foster parenting"): text between rows and
        # elements that are not rows, e.g. everything after a missing </table>. Rendered after it.
        stray: list = []
        stray_text: list[str] = [table.text or ""]

        def parts(container, section: str, level: int) -> None:
            for part in container:
                tag = part.tag
                if not isinstance(tag, str):
                    stray_text.append(part.tail or "")
                    continue
                if tag == "caption":
                    caption = _collapse(self.flat_text(part, level))
                    if caption:
                        out.blocks.append(_Paragraph([caption]))
                elif tag == "tr":
                    row, all_th = self.row(part, level)
                    if section == "thead":
                        header.append(row)
                    else:
                        body.append(row)
                        header_cells.append(all_th)
                elif tag in ("thead", "tbody", "tfoot"):
                    stray_text.append(part.text or "")
                    parts(part, tag, level + 1)
                elif tag in ("colgroup", "col"):
                    pass
                elif part.find(".//tr") is not None and level < _MAX_DEPTH:
                    stray_text.append(part.text or "")
                    parts(part, section, level + 1)  # a wrapper around rows (a form, a div)
                else:
                    stray.append(part)
                    continue
                stray_text.append(part.tail or "")

        parts(table, "tbody", depth + 1)
        self._table_rows(header, body, header_cells, out)
        text = _collapse(" ".join(stray_text))
        if text:
            out.blocks.append(_Paragraph([text]))
        for element in stray:
            tail, element.tail = element.tail, None
            self.child(element, out, depth + 1)
            out.flush()
            if tail and tail.strip():
                out.blocks.append(_Paragraph([_collapse(tail)]))

    def _table_rows(self, header, body, header_cells, out: _Collector) -> None:
        if not any(cell for row in header + body for cell in row):
            return
        rows = [(row, all_th) for row, all_th in zip(body, header_cells) if any(row)]
        if not header:
            lead = 0
            while lead < len(rows) and rows[lead][1]:
                lead += 1
            if lead == 0:
                self.headerless_tables += 1
            lead = min(max(lead, 1), len(rows) - 1) if len(rows) > 1 else 1
            header = [row for row, _ in rows[:lead]]
            rows = rows[lead:]
        body = [row for row, _ in rows]
        width = max(len(row) for row in header + body) or 1
        for row in header + body:
            row.extend([""] * (width - len(row)))
        out.blocks.append(_Table(header, body))

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


class _Writer:
    """Appends the Markdown rendering and returns each block's node as it is written."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.position = 0

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.position += len(text)

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
        if isinstance(block, _Table):
            return self.table(block, prefix)
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

    def table(self, block: _Table, prefix: str) -> Node:
        start = self.position
        rows: list[Node] = []
        header = "\n".join(prefix + _table_line(row) for row in block.header)
        delimiter = prefix + "|" + " --- |" * len(block.header[0])
        self.write(header + "\n" + delimiter)
        rows.append(Node("table_row", start, self.position))
        for row in block.body:
            self.write("\n")
            row_start = self.position
            self.write(prefix + _table_line(row))
            rows.append(Node("table_row", row_start, self.position))
        return Node("table", start, self.position, tuple(rows), header_rows=1)

    def list(self, block: _List, prefix: str, level: int) -> Node:
        start = self.position
        items: list[Node] = []
        for index, blocks in enumerate(block.items):
            if index:
                self.write("\n")
            item_start = self.position
            marker = f"{block.first_number + index}. " if block.ordered else "- "
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
            items.append(Node("list_item", item_start, self.position, tuple(children)))
        return Node("list", start, self.position, tuple(items), level=level)


def _table_line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


# -- entry point ------------------------------------------------------------------------------


def normalize_html(content: str) -> NormalizedDocument:
    """Normalize HTML (a whole page or a fragment) by rendering it as Markdown.

    Never raises for bad markup: what the parser cannot read yields fewer blocks (maybe none) and
    a note in ``diagnostics``.

    Args:
        content: The HTML source.

    Returns:
        A non-verbatim :class:`NormalizedDocument` whose ``text`` is the Markdown rendering;
        intervals in code points of that rendering.
    """
    diagnostics: list[str] = []
    root = _parse(content, diagnostics)
    blocks: list[object] = []
    reader = _Reader()
    if root is not None:
        top = _Collector(nested=False)
        reader.walk(root, top, 0)
        blocks = top.finish()
        if next(root.iter("h1"), None) is None:
            title = _title(root)
            if title:
                blocks.insert(0, _Heading(1, title))
    if reader.headerless_tables:
        diagnostics.append(
            f"{reader.headerless_tables} table(s) without a header row: first row rendered as the header"
        )
    if reader.flattened:
        diagnostics.append(f"{reader.flattened} element(s) nested deeper than {_MAX_DEPTH} levels flattened to text")
    writer = _Writer()
    nodes = writer.sequence(blocks, "", 0, in_item=False)
    text = "".join(writer.parts) + "\n" if nodes else ""
    return NormalizedDocument(
        text=text, blocks=tuple(nodes), content_format="html", verbatim=False, diagnostics=tuple(diagnostics)
    )


def _parse(content: str, diagnostics: list[str]):
    """The document's root element, or ``None`` (with a diagnostic) when there is nothing to read."""
    source = content.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
    source = _END_TAGS.sub("", source)
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
    dropped = 0
    for element in _navigation(root):
        parent = element.getparent()
        if parent is None:
            continue
        tail = element.tail  # the text after the element is not part of it: keep it
        if tail:
            previous = element.getprevious()
            if previous is not None:
                previous.tail = (previous.tail or "") + tail
            else:
                parent.text = (parent.text or "") + tail
        parent.remove(element)
        dropped += 1
    if dropped:
        diagnostics.append(f"{dropped} navigation elements left out")
    return root


#: Site navigation, not the page's content: ``nav``, ARIA ``role="navigation"``, and the
#: navigation blocks of the two documentation generators that make most HTML docs (Sphinx's
#: sidebar and "related" bars, DocBook's navheader/navfooter), as classes.
_NAVIGATION_CLASSES = frozenset({"sphinxsidebar", "related", "navheader", "navfooter"})
# What XPath's normalize-space() collapses: XML whitespace, not all that str.split() splits on.
_XML_SPACE = re.compile(r"[ \t\r\n]+")


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


def _title(root) -> str:
    head = root.find("head")
    title = head.find("title") if head is not None else None
    return _collapse("".join(title.itertext())) if title is not None else ""
