"""Intermediate HTML blocks rendered as Markdown, each block's node recorded as it is written.

:class:`_Writer` appends the rendering of the blocks of ``html_blocks`` to one text (kept as
parts, joined into fewer larger strings as it grows) and returns the
:class:`~transforms.structure.tree.Node` of each block, its interval in that text. Both the
whole path (``html``) and the windowed path (``html_stream``) write through it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from transforms.structure.normalizers.html_blocks import (
    _Code,
    _Heading,
    _List,
    _Paragraph,
    _Quote,
    _TableState,
)
from transforms.structure.tree import Node

_BACKTICKS = re.compile(r"`{3,}")


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
            return self.write_list(block, prefix, depth + 1)
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

    def write_list(self, block: _List, prefix: str, level: int) -> Node:
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
