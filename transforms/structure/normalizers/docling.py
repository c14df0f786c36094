"""Normalizer for ``docling``: a serialized DoclingDocument rendered as Markdown, with its blocks.

Beam-free. :func:`normalize_docling` parses the content with docling-core's own model
(``DoclingDocument.model_validate_json``; docling-core is imported on first use, not with this
module) and walks the document *body* tree in reading order (``body`` and its descendants, depth
first, as ``DoclingDocument.iterate_items`` does), writing a Markdown rendering into a new string.
That string is :attr:`NormalizedDocument.text` (``verbatim=False``): every interval is a
``[start, end)`` range of *code points* of the rendering, not of the JSON. Each node's ``page_no``
is its item's first provenance page (``item.prov[0].page_no``), ``None`` without provenance (DOCX,
HTML, JATS); a node built from several items (a list, a table row, a paragraph of an inline group)
takes the first page found among them.

What is rendered, and how
    ==============================  =============================================================
    ``TitleItem``                   ``heading`` level 1: ``"# " + title``
    ``SectionHeaderItem``           ``heading`` level ``min(level + 1, 6)``: ``"#" * level + " " +
                                    title``. ``title`` is the text with whitespace collapsed.
    text-like ``TextItem`` labels   ``paragraph``: ``text``, ``paragraph``, ``caption``,
                                    ``footnote``, ``reference``, ``handwritten_text``, the form
                                    labels (``field_key``, ``field_hint``, ``field_heading``,
                                    ``field_value``, ``marker``, ``empty_value``) and any other;
                                    ``checkbox_selected`` / ``checkbox_unselected`` as
                                    ``"[x] text"`` / ``"[ ] text"``
    ``FormulaItem``                 ``paragraph`` of its plain text (LaTeX as written, no ``$$``);
                                    when ``text`` is empty (docling leaves it empty unless formula
                                    enrichment ran) its raw ``orig`` text, with a diagnostic
    ``InlineGroup``                 one ``paragraph``: the texts of its items joined by one space,
                                    as docling-core's Markdown serializer joins them. An item whose
                                    ``text`` is empty and whose first child is an inline group
                                    (docling's "inline representation") takes that text instead.
    ``ListGroup`` / ``ListItem``    ``list`` of ``list_item`` nodes, see *Lists*
    ``CodeItem``                    ``code``: a fenced block, see *Code*
    ``TableItem``                   ``table`` of ``table_row`` nodes, see *Tables*; labels
                                    ``table`` and ``document_index`` alike
    ``PictureItem``                 nothing but its captions (and footnotes)
    ``KeyValueItem`` / ``FormItem`` one ``paragraph``: a ``"key: value"`` line per key-to-value
                                    link of its graph, then the text of every other cell
    other groups, ``FieldRegion``   transparent: their children are rendered in their place
    / ``FieldItem``
    ==============================  =============================================================

Every block starts at a line start, blocks are separated by one blank line (``"\\n\\n"``; the items
of a list and a nested list right after its item's line by one ``"\\n"``), an interval ends before
its trailing line break, and ``text`` ends with ``"\\n"`` (it is ``""`` when nothing is rendered:
no blocks; the chunker reports that as ``empty_document``). Text is not Markdown-escaped (only
table cells are, see below: a paragraph that starts with ``1)`` or ``#`` stays a ``paragraph``
node though a Markdown parser would read more into it). Line breaks (``\\r\\n``, ``\\r``,
``\\v``, ``\\f``, U+2028...) become ``\\n``. Outside code, each line is stripped, runs of blank
lines become one and blank leading or trailing lines go: an item left with no text renders
nothing (no empty or whitespace-only blocks).
Children of a text item (docling nests a DOCX section's content under its heading, an HTML
list's sub-list under its item) are rendered after it, in order.

Captions and footnotes
    The ``captions`` of a table, picture, code or key-value item are rendered as paragraphs right
    before it and its ``footnotes`` as paragraphs right after it, wherever docling placed those
    text items in the tree (a PDF nests them under the table, JATS puts them at the end of the
    body, HTML right before a picture). Each is rendered once.

Lists
    A ``ListGroup`` is a ``list`` whose ``level`` is its nesting depth (1 outermost). It is
    ordered when its first item is ``enumerated``. An ordered item is rendered ``"N. "``: ``N`` is
    the number of its marker when the marker is a lone number (``3.``, ``3)``, ``(3)``, ``[3]``),
    else one more than the previous item's (1 for the first). An unordered item is rendered
    ``"- "``. Any other marker that carries letters or digits (``a)``, ``1.1.``, ``2a.``, or a
    number in an unordered list) is kept at the start of the item's text
    (``"1. 1.1. Morning walk"``); bullet glyphs (``•``, ``·``) are not. This follows docling-core's
    own Markdown export, except that an ordered list is numbered even where docling-core falls
    back to ``"- "`` before an informative marker. A nested list is indented to its parent item's
    content column (2 spaces under ``- ``, 3 under ``1. ``, 4 under ``10. ``), continuation lines
    of an item likewise. A nested list's node (and every node) starts at its line start, so its
    interval begins with that indentation. Two lists in a row stay two ``list`` blocks (a blank
    line apart), though a Markdown parser reading the rendering would join them into one.

    docling puts a nested list either *inside* the item that holds it (HTML: a ``ListGroup``
    child of the ``ListItem``) or *beside* the items (DOCX: a ``ListGroup`` child of the outer
    ``ListGroup``, after the item it belongs to). Both become a ``list`` child of that
    ``list_item`` (the item's interval grows over it): this is what the indented Markdown means
    and what the tree contract says (a list's children are its items, an item's children its
    blocks after its first line). Only a nested list that comes before any item of its group is
    left a direct child of the outer ``list`` (with a diagnostic). Other blocks inside a list
    (paragraphs, tables, code...) become children of the preceding item, indented to its content
    column (or of the list, before any item). An item with no text of its own but with content
    (a nested list) is rendered as a bare marker line followed by that content. A heading inside
    a list is rendered as a ``paragraph`` of its title (a heading there would break
    :func:`~transforms.structure.tree.build_sections`).

Code
    A ``CodeItem`` is a fenced block: the opening fence is three backticks, or one more than the
    longest run of backticks in the code when that run is three or more, followed by the language
    (``code_language`` lowercased, ``""`` for ``unknown``); ``fence`` is that opening line
    without indentation. The code is kept verbatim but for line-break normalization and leading or
    trailing blank lines.

Tables
    A table is rendered from its ``data`` grid as a GitHub pipe table: a header line, the
    ``| --- |`` delimiter line and one line per body row. The header rows are the leading run of
    grid rows on which a ``column_header`` cell starts; they are flattened into the single header
    line Markdown allows, per column the distinct texts top to bottom joined by ``" - "`` (as
    docling-core's own Markdown export does). A table without such rows uses its first row as the
    header, and ``diagnostics`` says so. Cell text is the cell's ``text`` (or, for a rich cell
    without one, the plain text of the items it refers to), whitespace collapsed to single spaces
    (so no line breaks), ``|`` escaped as ``\\|``. Spanning cells: in the header a cell is
    repeated in every row and column it spans (so each column's header is complete); in the
    body a row-spanning cell is repeated in every row it spans (each row stays self-contained) and
    a column-spanning cell is written in its first column only, the others left empty. Body rows
    with no text at all are dropped; a table with no text at all renders nothing but its captions
    and footnotes. The ``table`` node has ``header_rows=1``: its first ``table_row`` child spans
    the header line and the delimiter line, every other child one body row.

What is dropped
    Everything outside the body content layer (furniture: page headers and footers, Wikipedia's
    navigation...; background, invisible and notes layers), with its whole subtree; text items
    labelled ``page_header`` / ``page_footer`` even in the body layer; the ``furniture`` root;
    the children of pictures (text found inside a figure) and of tables (rich-cell content,
    which the cells already render) other than captions and footnotes; images, picture
    classifications and descriptions, annotations, hyperlinks and formatting (bold, italic,
    sub/superscript: the plain text stays); items with no text; pages' metadata.

Raises ``NormalizationError("invalid_docling_json", ...)`` when the content is not a valid
DoclingDocument (not JSON, not an object, a field docling-core rejects, a dangling reference, an
inconsistent tree) or its tree is nested too deeply to walk (hundreds of levels), with a one-line
detail naming the first problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

from transforms.structure.tree import Node, NormalizationError, NormalizedDocument

__all__ = ["normalize_docling"]

_CONTENT_FORMAT = "docling"
_DETAIL_CHARS = 200
_HEADER_JOIN = " - "  # docling-core's HEADER_ROW_SEPARATOR
_LINE_BREAKS = re.compile(r"\r\n?|[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_BACKTICK_RUNS = re.compile(r"`{3,}")
_LONE_NUMBER = re.compile(r"[(\[]?(\d{1,9})[.)\]]?")
_DROPPED_TEXT_LABELS = frozenset({"page_header", "page_footer"})


@lru_cache(maxsize=1)
def _dl() -> SimpleNamespace:
    """docling-core's classes, imported on first use (the import takes a fraction of a second)."""
    from docling_core.types.doc import DoclingDocument
    from docling_core.types.doc.document import (
        CodeItem,
        ContentLayer,
        FloatingItem,
        FormItem,
        FormulaItem,
        GroupItem,
        InlineGroup,
        KeyValueItem,
        ListGroup,
        ListItem,
        NodeItem,
        PictureItem,
        SectionHeaderItem,
        TableItem,
        TextItem,
        TitleItem,
    )
    from docling_core.types.doc.items.table.table_data import RichTableCell

    return SimpleNamespace(
        DoclingDocument=DoclingDocument,
        BODY=ContentLayer.BODY,
        CodeItem=CodeItem,
        FloatingItem=FloatingItem,
        FormItem=FormItem,
        FormulaItem=FormulaItem,
        GroupItem=GroupItem,
        InlineGroup=InlineGroup,
        KeyValueItem=KeyValueItem,
        ListGroup=ListGroup,
        ListItem=ListItem,
        NodeItem=NodeItem,
        PictureItem=PictureItem,
        RichTableCell=RichTableCell,
        SectionHeaderItem=SectionHeaderItem,
        TableItem=TableItem,
        TextItem=TextItem,
        TitleItem=TitleItem,
    )


def parse_docling(content: str):
    """``content`` as a docling-core ``DoclingDocument`` (``model_validate_json``).

    Raises:
        NormalizationError: ``invalid_docling_json``, naming the first problem found.
    """
    try:
        return _dl().DoclingDocument.model_validate_json(content)
    except Exception as err:  # pydantic's ValidationError, a validator's own error, a bad ref
        raise NormalizationError(
            "invalid_docling_json",
            _one_line(f"content is not a valid DoclingDocument: {_first_error(err)}"),
        ) from err


def normalize_docling(content: str) -> NormalizedDocument:
    """Render a serialized DoclingDocument as Markdown and return it with its blocks.

    Args:
        content: A DoclingDocument as JSON (``DoclingDocument.model_dump_json()``).

    Returns:
        ``content_format="docling"``, ``verbatim=False``; intervals index the rendering. No blocks
        (and ``text == ""``) when the body has nothing to render.

    Raises:
        NormalizationError: ``invalid_docling_json`` when docling-core does not accept the
            content as a DoclingDocument, or its tree is nested too deeply to walk.
    """
    dl = _dl()
    doc = parse_docling(content)
    renderer = _Renderer(doc, dl)
    try:
        blocks = renderer.render_document()
    except RecursionError as err:
        raise NormalizationError(
            "invalid_docling_json",
            f"DoclingDocument {_one_line(doc.name)!r}: its tree is nested too deeply to render",
        ) from err
    text = "".join(renderer.parts)
    if text:
        text += "\n"
    return NormalizedDocument(
        text=text,
        blocks=tuple(blocks),
        content_format=_CONTENT_FORMAT,
        verbatim=False,
        diagnostics=tuple(renderer.diagnostics),
    )


def _one_line(text: str) -> str:
    """Collapse whitespace and cut ``text`` to about :data:`_DETAIL_CHARS` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


def _first_error(err: Exception) -> str:
    """One line naming the first problem of a failed ``model_validate_json``."""
    errors = getattr(err, "errors", None)
    if callable(errors):
        try:
            found = errors(include_url=False)
        except TypeError:
            found = None
        if found:
            first = found[0]
            loc = ".".join(str(part) for part in first.get("loc", ())) or "<root>"
            more = f" (and {len(found) - 1} more errors)" if len(found) > 1 else ""
            return f"{loc}: {first.get('msg', '')}{more}"
    return f"{type(err).__name__}: {err}"


def _lines(text: str) -> list[str]:
    """Prose as lines: breaks normalized, lines stripped, blank runs made one, no blank ends."""
    out: list[str] = []
    for line in _LINE_BREAKS.sub("\n", text).split("\n"):
        line = line.strip()
        if line:
            out.append(line)
        elif out and out[-1]:
            out.append("")
    if out and not out[-1]:
        out.pop()
    return out


def _collapse(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) made one space, stripped."""
    return " ".join(text.split())


def _page(item: Any) -> int | None:
    """The item's first provenance page, or ``None``."""
    prov = getattr(item, "prov", None)
    if prov:
        page_no = getattr(prov[0], "page_no", None)
        return int(page_no) if page_no is not None else None
    return None


def _first_page(nodes: list[Node]) -> int | None:
    """The first ``page_no`` among ``nodes`` that has one."""
    return next((n.page_no for n in nodes if n.page_no is not None), None)


@dataclass
class _Ctx:
    """Where blocks go: their indentation and the number of lists around them."""

    indent: str = ""
    list_depth: int = 0


@dataclass
class _OpenItem:
    """A list item being built: its interval grows as its content is written."""

    start: int
    end: int
    page_no: int | None
    content_indent: str
    children: list[Node] = field(default_factory=list)

    def close(self) -> Node:
        page = self.page_no if self.page_no is not None else _first_page(self.children)
        return Node("list_item", self.start, self.end, tuple(self.children), page_no=page)


class _Renderer:
    """Writes the Markdown rendering of one document and builds its nodes as it goes."""

    def __init__(self, doc: Any, dl: SimpleNamespace) -> None:
        self.doc = doc
        self.dl = dl
        self.parts: list[str] = []
        self.pos = 0  # code points written so far
        self.last_was_list_line = False
        self.visited: set[int] = set()  # id() of items rendered (or consumed)
        self.owned: set[int] = set()  # id() of captions / footnotes rendered with their owner
        self.diagnostics: list[str] = []

    # -- output -------------------------------------------------------------------------------

    def write(self, lines: list[str], tight: bool = False) -> tuple[int, int]:
        """Append one block of ``lines``; return its ``(start, end)``, end before its line break."""
        sep = "" if self.pos == 0 else ("\n" if tight else "\n\n")
        body = "\n".join(lines)
        self.parts.append(sep + body)
        start = self.pos + len(sep)
        self.pos = start + len(body)
        self.last_was_list_line = False
        return start, self.pos

    def mark(self) -> tuple[int, int, bool]:
        return len(self.parts), self.pos, self.last_was_list_line

    def rollback(self, mark: tuple[int, int, bool]) -> None:
        del self.parts[mark[0] :]
        self.pos, self.last_was_list_line = mark[1], mark[2]

    # -- tree ---------------------------------------------------------------------------------

    def resolve(self, ref: Any) -> Any:
        """The node ``ref`` points to, or ``None`` when it is not a tree node."""
        try:
            item = ref.resolve(self.doc)
        except RecursionError:
            raise  # too deep to render: the whole document is refused, never partly dropped
        except (IndexError, KeyError, ValueError, AttributeError, RuntimeError):
            return None
        return item if isinstance(item, self.dl.NodeItem) else None

    def children(self, item: Any) -> list[Any]:
        """The item's children that are body-layer nodes, in order."""
        out = []
        for ref in item.children:
            child = self.resolve(ref)
            if child is not None and child.content_layer == self.dl.BODY:
                out.append(child)
        return out

    def render_document(self) -> list[Node]:
        self.find_owned()
        blocks: list[Node] = []
        self.visited.add(id(self.doc.body))
        self.walk(self.children(self.doc.body), _Ctx(), blocks)
        return blocks

    def find_owned(self) -> None:
        """Mark the captions and footnotes of the floating items the walk will render."""
        dl = self.dl
        stack = [self.doc.body]
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, dl.FloatingItem):
                for ref in (*item.captions, *item.footnotes):
                    owned = self.resolve(ref)
                    if owned is not None and owned is not item:
                        self.owned.add(id(owned))
            if isinstance(item, (dl.TableItem, dl.PictureItem, dl.KeyValueItem, dl.FormItem, dl.InlineGroup)):
                continue  # their children are not walked
            stack.extend(reversed(self.children(item)))

    def walk(self, items: list[Any], ctx: _Ctx, sink: list[Node]) -> None:
        for item in items:
            if id(item) in self.owned:
                continue  # rendered with its table / picture / code
            self.render(item, ctx, sink)

    def render(self, item: Any, ctx: _Ctx, sink: list[Node]) -> None:
        dl = self.dl
        if id(item) in self.visited or item.content_layer != dl.BODY:
            return
        self.visited.add(id(item))
        if isinstance(item, dl.ListGroup):
            self.render_list(self.children(item), ctx, sink)
        elif isinstance(item, dl.InlineGroup):
            text, page = self.inline_text(item)
            self.paragraph(text, page, ctx, sink)
        elif isinstance(item, dl.GroupItem):
            self.walk(self.children(item), ctx, sink)
        elif isinstance(item, dl.TableItem):
            self.render_table(item, ctx, sink)
        elif isinstance(item, dl.PictureItem):
            self.captions(item, ctx, sink)
            self.footnotes(item, ctx, sink)
        elif isinstance(item, dl.CodeItem):
            self.render_code(item, ctx, sink)
            self.walk(self.children(item), ctx, sink)
        elif isinstance(item, (dl.KeyValueItem, dl.FormItem)):
            self.captions(item, ctx, sink)
            self.paragraph(self.graph_text(item), _page(item), ctx, sink)
            self.footnotes(item, ctx, sink)
        elif isinstance(item, dl.ListItem):
            # docling-core's validator puts every stray list item into a list group; kept safe.
            self.render_list([item], ctx, sink, pre_visited=True)
        elif isinstance(item, dl.TextItem):
            self.render_text(item, ctx, sink)
        else:  # FieldRegionItem, FieldItem, any other container-like item
            self.walk(self.children(item), ctx, sink)

    # -- text ---------------------------------------------------------------------------------

    def item_text(self, item: Any) -> tuple[str, int | None, list[Any]]:
        """A text item's own text, its page and its children still to render.

        An item with no text whose first child is an inline group takes that group's text
        (docling's inline representation), and the group is consumed.
        """
        children = self.children(item)
        text = item.text or ""
        page = _page(item)
        if isinstance(item, self.dl.FormulaItem) and not text.strip() and (item.orig or "").strip():
            text = item.orig
            self.diagnostics.append(f"formula {item.self_ref} has no decoded text: its raw text (orig) is rendered")
        if not text.strip() and children and isinstance(children[0], self.dl.InlineGroup):
            group = children.pop(0)
            if id(group) not in self.visited:
                self.visited.add(id(group))
                text, inline_page = self.inline_text(group)
                page = page if page is not None else inline_page
        return text, page, children

    def inline_text(self, group: Any) -> tuple[str, int | None]:
        """The texts of an inline group's items joined by one space, and the first page among them."""
        pieces: list[str] = []
        pages: list[int] = []

        def collect(node: Any) -> None:
            for child in self.children(node):
                if id(child) in self.visited:
                    continue
                self.visited.add(id(child))
                if isinstance(child, self.dl.TextItem):
                    if child.label in _DROPPED_TEXT_LABELS:
                        continue
                    text = child.text or ""
                    if isinstance(child, self.dl.FormulaItem) and not text.strip():
                        text = child.orig or ""
                    text = _collapse(_LINE_BREAKS.sub("\n", text))
                    if text:
                        pieces.append(text)
                        page = _page(child)
                        if page is not None:
                            pages.append(page)
                    collect(child)
                elif isinstance(child, self.dl.GroupItem):
                    collect(child)
                # pictures, tables... inside an inline group: dropped

        collect(group)
        return " ".join(pieces), (pages[0] if pages else None)

    def plain_text(self, item: Any) -> str:
        """All text under ``item`` (itself included), joined by spaces; for rich table cells."""
        pieces: list[str] = []
        stack = [item]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) in seen or node.content_layer != self.dl.BODY:
                continue
            seen.add(id(node))
            text = getattr(node, "text", None)
            label = getattr(node, "label", None)
            if isinstance(text, str) and text.strip() and label not in _DROPPED_TEXT_LABELS:
                pieces.append(text)
            stack.extend(reversed(self.children(node)))
        return " ".join(pieces)

    def paragraph(self, text: str, page: int | None, ctx: _Ctx, sink: list[Node]) -> None:
        lines = _lines(text)
        if not lines:
            return
        start, end = self.write([ctx.indent + line if line else "" for line in lines])
        sink.append(Node("paragraph", start, end, page_no=page))

    def render_text(self, item: Any, ctx: _Ctx, sink: list[Node]) -> None:
        dl = self.dl
        if item.label in _DROPPED_TEXT_LABELS:
            return
        text, page, children = self.item_text(item)
        if isinstance(item, (dl.TitleItem, dl.SectionHeaderItem)):
            title = _collapse(text)
            if title:
                if ctx.list_depth:
                    self.diagnostics.append(f"heading {item.self_ref} inside a list is rendered as a paragraph")
                    self.paragraph(title, page, ctx, sink)
                else:
                    level = 1 if isinstance(item, dl.TitleItem) else max(1, min(int(item.level) + 1, 6))
                    start, end = self.write([f"{'#' * level} {title}"])
                    sink.append(Node("heading", start, end, level=level, title=title, page_no=page))
        else:
            if item.label == "checkbox_selected" and text.strip():
                text = "[x] " + text.strip()
            elif item.label == "checkbox_unselected" and text.strip():
                text = "[ ] " + text.strip()
            self.paragraph(text, page, ctx, sink)
        self.walk(children, ctx, sink)

    def graph_text(self, item: Any) -> str:
        """A key-value or form item's graph as lines: ``key: value`` per link, then other cells."""
        graph = getattr(item, "graph", None)
        if graph is None:
            return ""
        cells = {cell.cell_id: cell for cell in graph.cells}
        used: set[int] = set()
        lines: list[str] = []
        for link in graph.links:
            if str(getattr(link.label, "value", link.label)) != "to_value":
                continue
            key, value = cells.get(link.source_cell_id), cells.get(link.target_cell_id)
            if key is None or value is None:
                continue
            used.update((key.cell_id, value.cell_id))
            line = f"{_collapse(key.text)}: {_collapse(value.text)}".strip()
            if line.strip(":").strip():
                lines.append(line)
        for cell in graph.cells:
            if cell.cell_id not in used and _collapse(cell.text):
                lines.append(_collapse(cell.text))
        return "\n".join(lines)

    # -- captions, code, tables ---------------------------------------------------------------

    def attached(self, refs: list[Any], ctx: _Ctx, sink: list[Node]) -> None:
        """Captions or footnotes as paragraphs (each text item once)."""
        for ref in refs:
            note = self.resolve(ref)
            if note is None or id(note) in self.visited or note.content_layer != self.dl.BODY:
                continue
            if isinstance(note, self.dl.TextItem) and note.label not in _DROPPED_TEXT_LABELS:
                self.visited.add(id(note))
                text, page, children = self.item_text(note)
                self.paragraph(text, page, ctx, sink)
                self.walk(children, ctx, sink)
            else:
                self.render(note, ctx, sink)

    def captions(self, item: Any, ctx: _Ctx, sink: list[Node]) -> None:
        self.attached(list(getattr(item, "captions", ()) or ()), ctx, sink)

    def footnotes(self, item: Any, ctx: _Ctx, sink: list[Node]) -> None:
        self.attached(list(getattr(item, "footnotes", ()) or ()), ctx, sink)

    def render_code(self, item: Any, ctx: _Ctx, sink: list[Node]) -> None:
        self.captions(item, ctx, sink)
        lines = _LINE_BREAKS.sub("\n", item.text or "").split("\n")
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        if lines:
            runs = [len(run) for line in lines for run in _BACKTICK_RUNS.findall(line)]
            fence = "`" * (max(runs) + 1 if runs else 3)
            words = str(getattr(item.code_language, "value", item.code_language) or "").lower().split()
            language = words[0] if words and words[0] != "unknown" and "`" not in words[0] else ""
            opening = fence + language
            block = [ctx.indent + opening]
            block += [ctx.indent + line if line else "" for line in lines]
            block.append(ctx.indent + fence)
            start, end = self.write(block)
            sink.append(Node("code", start, end, language=language, fence=opening, page_no=_page(item)))
        self.footnotes(item, ctx, sink)

    def cell_text(self, cell: Any) -> str:
        text = cell.text or ""
        if not text.strip() and isinstance(cell, self.dl.RichTableCell):
            target = self.resolve(cell.ref)
            text = self.plain_text(target) if target is not None else ""
        return _collapse(text).replace("|", "\\|")

    def render_table(self, item: Any, ctx: _Ctx, sink: list[Node]) -> None:
        self.captions(item, ctx, sink)
        rows = self.table_lines(item)
        if rows:
            page = _page(item)
            lines = [ctx.indent + line for line in rows]
            start, end = self.write(lines)
            children: list[Node] = []
            offset = start
            header_end = offset + len(lines[0]) + 1 + len(lines[1])
            children.append(Node("table_row", offset, header_end, page_no=page))
            offset = header_end + 1
            for line in lines[2:]:
                children.append(Node("table_row", offset, offset + len(line), page_no=page))
                offset += len(line) + 1
            sink.append(Node("table", start, end, tuple(children), header_rows=1, page_no=page))
        self.footnotes(item, ctx, sink)

    def table_lines(self, item: Any) -> list[str]:
        """The table's Markdown lines (header, delimiter, body rows), or ``[]`` when it has no text."""
        data = item.data
        n_rows, n_cols = max(int(data.num_rows), 0), max(int(data.num_cols), 0)
        if not n_rows or not n_cols:
            self.diagnostics.append(
                f"table {item.self_ref} ({n_rows}x{n_cols}) is empty: only its captions are rendered"
            )
            return []
        grid: list[list[Any]] = [[None] * n_cols for _ in range(n_rows)]
        for cell in data.table_cells:
            for r in range(max(cell.start_row_offset_idx, 0), min(cell.end_row_offset_idx, n_rows)):
                row = grid[r]
                for c in range(max(cell.start_col_offset_idx, 0), min(cell.end_col_offset_idx, n_cols)):
                    row[c] = cell
        texts: dict[int, str] = {}

        def text_of(cell: Any) -> str:
            if cell is None:
                return ""
            key = id(cell)
            if key not in texts:
                texts[key] = self.cell_text(cell)
            return texts[key]

        if not any(text_of(cell) for row in grid for cell in row):
            self.diagnostics.append(
                f"table {item.self_ref} ({n_rows}x{n_cols}) has no text: only its captions are rendered"
            )
            return []
        header_rows = 0
        for r, row in enumerate(grid):
            if any(cell is not None and cell.column_header and cell.start_row_offset_idx == r for cell in row):
                header_rows += 1
            else:
                break
        if header_rows == 0:
            header_rows = 1
            self.diagnostics.append(
                f"table {item.self_ref} ({n_rows}x{n_cols}) has no column-header cells: its first row is the header"
            )
        header = []
        for c in range(n_cols):
            parts: list[str] = []
            for r in range(header_rows):
                text = text_of(grid[r][c])
                if text and (not parts or parts[-1] != text):
                    parts.append(text)
            header.append(_HEADER_JOIN.join(parts))
        lines = [_pipe_row(header), _pipe_row(["---"] * n_cols)]
        for r in range(header_rows, n_rows):
            row = grid[r]
            cells = [
                "" if c and row[c] is not None and row[c] is row[c - 1] else text_of(row[c]) for c in range(n_cols)
            ]
            if any(cells):
                lines.append(_pipe_row(cells))
        return lines

    # -- lists --------------------------------------------------------------------------------

    def render_list(self, items: list[Any], ctx: _Ctx, sink: list[Node], pre_visited: bool = False) -> None:
        """Render the content of one list group (``items``: its body-layer children) as a ``list``."""
        dl = self.dl
        level = ctx.list_depth + 1
        first = next((i for i in items if isinstance(i, dl.ListItem)), None)
        ordered = bool(first is not None and first.enumerated)
        nodes: list[Node | _OpenItem] = []  # items (open until the list ends) and stray blocks
        number = 0
        started = False  # anything of this list written yet

        def tight() -> bool:
            return self.last_was_list_line and (started or level > 1)

        for child in items:
            if id(child) in self.owned:
                continue
            if isinstance(child, dl.ListItem):
                if id(child) in self.visited and not (pre_visited and child is items[0]):
                    continue
                self.visited.add(id(child))
                marker, prefix, next_number = _marker(child, ordered, number)
                opened = self.render_item(child, marker, prefix, ctx, level, tight())
                if opened is not None:
                    nodes.append(opened)
                    number = next_number
                    started = True
                continue
            previous = next((n for n in reversed(nodes) if isinstance(n, _OpenItem)), None)
            if previous is not None:
                # beside the items: belongs to the item before it
                inner = _Ctx(previous.content_indent, level)
                if isinstance(child, dl.ListGroup) and id(child) not in self.visited:
                    self.visited.add(id(child))
                    self.render_list(self.children(child), inner, previous.children)
                else:
                    self.render(child, inner, previous.children)
                previous.end = self.pos
                started = True
            else:
                strays: list[Node] = []
                if isinstance(child, dl.ListGroup) and id(child) not in self.visited:
                    self.visited.add(id(child))
                    self.render_list(self.children(child), _Ctx(ctx.indent + "  ", level), strays)
                else:
                    self.render(child, ctx, strays)
                if strays:
                    self.diagnostics.append(
                        f"list content before the first item of its list ({strays[0].kind}) is a child of the list"
                    )
                    nodes.extend(strays)
                    started = True
        closed = [n.close() if isinstance(n, _OpenItem) else n for n in nodes]
        if closed:
            sink.append(
                Node("list", closed[0].start, closed[-1].end, tuple(closed), level=level, page_no=_first_page(closed))
            )

    def render_item(self, item: Any, marker: str, prefix: str, ctx: _Ctx, level: int, tight: bool) -> _OpenItem | None:
        """Write one list item (its line, then its children); ``None`` when it renders nothing."""
        text, page, children = self.item_text(item)
        lines = _lines(text)
        content_indent = ctx.indent + " " * (len(marker) + 1)
        mark = self.mark()
        if lines:
            block = [f"{ctx.indent}{marker} {prefix}{lines[0]}"]
            block += [content_indent + line if line else "" for line in lines[1:]]
        else:
            block = [f"{ctx.indent}{marker} {prefix}".rstrip()]
        start, end = self.write(block, tight=tight)
        self.last_was_list_line = True
        opened = _OpenItem(start, end, page, content_indent)
        self.walk(children, _Ctx(content_indent, level), opened.children)
        if not lines and not prefix and not opened.children:
            self.rollback(mark)
            return None
        opened.end = self.pos
        return opened


def _marker(item: Any, ordered: bool, number: int) -> tuple[str, str, int]:
    """``(markdown marker, text prefix, item number)`` of a list item.

    ``number`` is the previous item's number in an ordered list (0 before the first).
    """
    raw = (item.marker or "").strip()
    lone = _LONE_NUMBER.fullmatch(raw)
    informative = any(ch.isalnum() for ch in raw)
    if ordered:
        current = int(lone.group(1)) if lone else number + 1
        prefix = raw + " " if informative and not lone else ""
        return f"{current}.", prefix, current
    prefix = raw + " " if informative else ""
    return "-", prefix, number


def _pipe_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"
