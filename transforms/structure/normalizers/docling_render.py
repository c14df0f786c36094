"""The Markdown rendering of a DoclingDocument's body, with the nodes of its blocks.

:class:`_Renderer` is what :func:`transforms.structure.normalizers.docling.normalize_docling`
runs on a parsed document: it walks the body tree in reading order (``render_document``),
appends each block's Markdown to ``parts`` and returns the top-level nodes, whose intervals
index the joined rendering. The rules (what is rendered and how, what is dropped) are the
``docling`` module's docstring. docling-core's classes come in as ``dl`` (``docling._dl``): this
module does not import docling-core.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from transforms.structure.tree import Node

_HEADER_JOIN = " - "  # docling-core's HEADER_ROW_SEPARATOR
_LINE_BREAKS = re.compile(r"\r\n?|[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_BACKTICK_RUNS = re.compile(r"`{3,}")
_LONE_NUMBER = re.compile(r"[(\[]?(\d{1,9})[.)\]]?")
_DROPPED_TEXT_LABELS = frozenset({"page_header", "page_footer"})


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
