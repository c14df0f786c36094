"""One document's packing, third layer: splitting a block that does not fit the budget alone.

A list is cut between items, a quote between its blocks, a table between rows (its header rows
travel with the first body row and are repeated at the top of every later part), a code block
between lines (its opening fence travels with the first line and is repeated; a line too long
is cut inside like prose, with no sentence level, ``split="code"``), any
other block first between its own paragraphs (an rST directive's line repeated like a fence), and
prose at sentence ends, line starts, word starts and finally the tokenizer's own token boundaries
(:mod:`~transforms.structure.packing.prose`). A repeated header or fence is repeated when it fits
the budget with the first row or line it introduces, or takes at most half the budget. Positions are code points of the normalized text; counts are tokens of the
budget tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain, islice
from typing import TYPE_CHECKING, Any

from transforms.structure.packing.chunk import OpenChunk, PackedChunk, heading_prefix
from transforms.structure.packing.filling import Context, own_heading
from transforms.structure.packing.lines import Tile
from transforms.structure.packing.prose import ProseCutter
from transforms.structure.packing.tiling import Contexts, TilePacking
from transforms.structure.tree import Node, NormalizedDocument

if TYPE_CHECKING:
    from transforms.structure.packing.packer import Packer

__all__ = ["BlockSplitting"]

_CONTAINERS = frozenset({"list", "list_item", "quote"})
# One or more blank lines after a line break: where a block's own paragraphs meet.
_BLANK_LINES = re.compile(r"(?:\r\n?|\n)(?:[^\S\r\n]*(?:\r\n?|\n))+")
_NON_SPACE = re.compile(r"\S")
_NO_CONTEXT: Context = (None, None)
#: How a split block is packed: its tiles, the contexts of the chunks that open at them, and the
#: kind of block they are parts of.
_Parts = tuple[Iterator[Tile], Contexts, str]


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` is the closing fence of a code block opened by ``fence`` (e.g. ``"```python"``):
    only the opening fence's character (backtick or tilde), at least three of them."""
    closing = line.strip()
    return (
        len(closing) >= 3
        and closing[0] in "`~"
        and fence.lstrip()[:1] == closing[0]
        and closing == closing[0] * len(closing)
    )


class BlockSplitting(TilePacking):
    """Splits the tiles that do not fit ``max_tokens`` even alone, by the kind of their block.

    Args:
        packer: The options.
        normalized: The document.
        token_ends: The tokenizer's ``token_ends`` of its text, if already computed (see ``TokenCounter``).
    """

    def __init__(self, packer: Packer, normalized: NormalizedDocument, *, token_ends: Any = None) -> None:
        super().__init__(packer, normalized, token_ends=token_ends)
        self.prose = ProseCutter(self.text, self.counter, packer.tokenizer, packer.target_tokens, packer.max_tokens)

    def _split(
        self,
        node: Node | None,
        start: int,
        end: int,
        path: tuple[Node, ...],
        top: int,
        *,
        context: tuple[int, int] | None,
        context_kind: str | None,
    ) -> Iterator[PackedChunk]:
        """Split the tile ``[start, end)`` of ``node``, which does not fit ``max_tokens`` even
        alone, by its kind; yields the chunks that become final meanwhile (see :meth:`_release`).
        ``context`` is the repeated header or fence of the block it is a part of, if any."""
        if node is not None and node.kind in _CONTAINERS and node.children:
            # The children are read as a stream (see ``Lines.iter_tiles``); two tiles are looked at first.
            tiles = self.lines.iter_tiles(node.children, start, end)
            first = next(tiles)
            second = next(tiles, None)
            if second is not None:
                contexts = (0, _NO_CONTEXT, (context, context_kind))
                yield from self._tiles(chain((first, second), tiles), path, top, contexts=contexts, split=node.kind)
                return
            if first[0] is not None and first[0] is not node:
                yield from self._split(first[0], start, end, path, top, context=context, context_kind=context_kind)
                return
        parts: _Parts | None = None
        own = start
        if node is not None:
            # Where the block itself starts: its tile may begin earlier, with blank lines before it.
            own = max(start, self.lines.line_start(node.start))
            if node.kind == "table" and node.children:
                parts = self._table_parts(node, own, start, end, path)
            elif node.kind == "code":
                parts = self._code_parts(node, own, start, end, path)
                if parts is None:
                    # One line of code (with its fences): cut inside it, its opening fence, if the
                    # tile holds it, in the first part's text and repeated before the others.
                    if self._fence(node, own) is not None:
                        context, context_kind = self._fence(node, own), "code_fence"
                    shown = context is not None and context[0] >= start
                    yield from self._split_prose(
                        node,
                        start,
                        end,
                        path,
                        top,
                        context=context,
                        context_kind=context_kind,
                        split="code",
                        shown=shown,
                    )
                    return
        if parts is None:
            parts = self._paragraph_parts(node, own, start, end, path, context, context_kind)
        if parts is None:
            yield from self._split_prose(node, start, end, path, top, context=context, context_kind=context_kind)
            return
        tiles, contexts, split = parts
        yield from self._tiles(tiles, path, top, contexts=contexts, split=split)

    def _table_parts(self, node: Node, own: int, start: int, end: int, path: tuple[Node, ...]) -> _Parts | None:
        """A table's rows, its header rows (from ``own``, where the table starts) repeated at the
        top of every part from the first body row on; ``None`` for a table of one row."""
        tiles = self.lines.iter_tiles(node.children, start, end)
        rows = node.header_rows
        head = list(islice(tiles, max(rows + 1, 2)))  # the header rows and the first body row
        header_end = head[rows][1] if 0 < rows < len(head) else None
        header = (own, header_end) if header_end is not None and own < header_end else None
        if header is not None and not self._repeats(path, header, head[rows][2]):
            header = None  # a header this large is not repeated; rows are still kept whole
        if len(head) < 2:
            return None
        if header is None:
            return chain(head, tiles), (0, _NO_CONTEXT, _NO_CONTEXT), "table"
        # The header rows travel with the first body row (one tile, when the two fit the budget:
        # never a part of header alone); the tiles after it repeat the header.
        if self.counter.prefix(()) + self.counter.span(head[0][1], head[rows][2]) <= self.p.max_tokens:
            first: list[Tile] = [(head[rows][0], head[0][1], head[rows][2])]
            return chain(first, tiles), (1, _NO_CONTEXT, (header, "table_header")), "table"
        return chain(head, tiles), (rows, _NO_CONTEXT, (header, "table_header")), "table"

    def _code_parts(self, node: Node, own: int, start: int, end: int, path: tuple[Node, ...]) -> _Parts | None:
        """A code block's lines, its opening fence line repeated at the top of every later part;
        ``None`` for a block of one line."""
        lines = self.lines.stable_after(own, end)
        fence = own_fence = self._fence(node, own)
        # Line starts after the first line of code (after the fence line and the line after it).
        cuts = list(islice(lines, 3 if own_fence else 2))
        if own_fence is not None:
            cuts = cuts[1:]
        if not cuts or (len(cuts) == 1 and _closes(self.text[cuts[0] : end], node.fence)):
            return None  # one line of code (and its fences)
        if own_fence is not None:
            first_line_end = cuts[0]
            if self.counter.prefix(()) + self.counter.span(start, first_line_end) > self.p.max_tokens:
                cuts.insert(0, own_fence[1])  # a first line too long to go with the fence line
            if not self._repeats(path, own_fence, first_line_end):
                fence = None
        # The fence line travels with the first line of code (one tile, when the two fit the
        # budget); the closing fence stays with the last line of code, never a part of its own.
        tiles = self._cut_tiles(node, start, end, chain(cuts, lines), closing=node.fence)
        return tiles, (1, _NO_CONTEXT, (fence, "code_fence") if fence else _NO_CONTEXT), "code"

    def _fence(self, node: Node, own: int) -> tuple[int, int] | None:
        """The opening fence line (or code directive and its blank line) of the code block
        ``node``, as a span, when a tile from ``own`` holds it; else ``None``."""
        if not node.fence or own != self.lines.line_start(node.start):
            return None
        first_line = next(self.lines.stable_after(own, node.end), None)
        return (own, first_line) if first_line is not None else None

    def _paragraph_parts(
        self,
        node: Node | None,
        own: int,
        start: int,
        end: int,
        path: tuple[Node, ...],
        context: tuple[int, int] | None,
        context_kind: str | None,
    ) -> _Parts | None:
        """A block's own paragraphs (blank lines inside: an rST directive, an HTML block, a long
        quote), each a tile counted from the one encoding; a directive's line (its ``fence``)
        repeated at the top of every later part. ``None`` for a block of one paragraph."""
        paragraphs = (
            m.end()
            for m in _BLANK_LINES.finditer(self.text, own, end)
            if own < m.end() < end and self.lines.is_stable(m.end())
        )
        first_paragraph = next(paragraphs, None)
        if first_paragraph is None:
            return None
        tiles = self._cut_tiles(node, start, end, chain((first_paragraph,), paragraphs))
        contexts: Contexts = (0, _NO_CONTEXT, (context, context_kind))
        if node is not None and node.fence and context is None:
            fence = (own, first_paragraph)
            if self._fits_context(path, fence):
                contexts = (1, _NO_CONTEXT, (fence, "directive"))
        return tiles, contexts, node.kind if node is not None else "paragraph"

    def _cut_tiles(
        self, node: Node | None, start: int, end: int, cuts: Iterator[int], *, closing: str = ""
    ) -> Iterator[Tile]:
        """Tiles ``(node, s, e)`` of ``[start, end)`` cut at ``cuts`` (ascending, inside it), as a
        stream. With ``closing`` (a code block's opening fence) and at least two cuts, a last line
        that closes that fence is not a tile of its own: it ends the tile before it."""
        previous, count = start, 1
        pending: Tile | None = None
        for at in cuts:
            if pending is not None:
                yield pending
            pending = (node, previous, at)
            previous, count = at, count + 1
        if closing and count > 2 and pending is not None and _closes(self.text[previous:end], closing):
            yield node, pending[1], end
            return
        if pending is not None:
            yield pending
        yield node, previous, end

    def _fits_context(self, path: tuple[Node, ...], context: tuple[int, int]) -> bool:
        """Whether a repeated header or fence leaves at least half the budget for rows or lines."""
        return self.counter.context(context) + self.counter.prefix(self._titles(path)) <= self.p.max_tokens // 2

    def _repeats(self, path: tuple[Node, ...], context: tuple[int, int], unit_end: int) -> bool:
        """Whether a header or fence is repeated before the parts of its block: when it fits the
        budget with the first row or line it introduces (``[context end, unit_end)``; outer
        titles of the path are dropped for it, :meth:`_open`), or leaves half the budget."""
        counter = self.counter
        if counter.context(context) + counter.prefix(()) + counter.span(context[1], unit_end) <= self.p.max_tokens:
            return True
        return self._fits_context(path, context)

    # -- prose -----------------------------------------------------------------------------

    def _prose_titles(self, path: tuple[Node, ...], displayed: int) -> tuple[tuple[str, ...], int]:
        """The prefix for ``path`` without its ``displayed`` innermost sections, outer titles
        dropped until it takes at most half the budget; with how many were dropped."""
        titles = self._titles(path, displayed) if self.p.include_heading_path else ()
        dropped = 0
        while titles and self.counter.prefix(titles) > self.p.max_tokens // 2:
            titles, dropped = titles[1:], dropped + 1
        return titles, dropped

    def _split_prose(
        self,
        node: Node | None,
        start: int,
        end: int,
        path: tuple[Node, ...],
        top: int,
        *,
        context: tuple[int, int] | None,
        context_kind: str | None,
        split: str = "prose",
        shown: bool = False,
    ) -> Iterator[PackedChunk]:
        """Cut ``[start, end)`` at sentence ends, then line starts, words, tokens (a line of code,
        ``split="code"``: line starts, words, tokens); each part counted whole (see
        ``ProseCutter.longest_part``). Yields the chunks that become final meanwhile (see
        :meth:`_release`).

        The first part may join the open chunk: open headings (a chunk with no body yet), or a
        chunk under ``MIN_PART_SHARE`` of the target (``_tops_up``), which takes the first part
        as it is cut alone when the two fit ``max_tokens`` (so the cuts do not depend on what
        the chunks before hold). Every other part is a chunk of its own, at most
        ``max_tokens`` unless one token alone is over it, with ``context`` before its text (with
        ``shown``, not before the first part, whose text holds it). Outer titles of the path
        are dropped before the context is.
        """
        counter = self.counter
        position = self._prose_start(start, end)
        # A heading's own title is in the text of its first part only (that part starts with
        # the heading line); its later parts carry the title in the prefix like any block's.
        heading = own_heading(node, path)
        titles, dropped = self._prose_titles(path, 1 if heading else 0)
        if context is not None:
            half = self.p.max_tokens // 2
            while titles and counter.context(context) + counter.prefix(titles) > half:
                titles, dropped = titles[1:], dropped + 1
            if counter.context(context) + counter.prefix(titles) > half:
                context, context_kind = None, None
        prose = self.prose
        levels = prose.candidates(position, end, code=split == "code")
        first = True
        while position < end:
            keep = self.cur if first else None
            part_context = None if first and shown else context
            # A chunk with text takes the first part as it would be cut alone (so the cuts do not
            # depend on what the chunks before hold), when the two fit the budget together.
            topping = keep is not None and keep.has_body
            head = (
                self._embedding(keep, keep.end)
                if keep is not None and not topping
                else self._prose_head(titles, part_context)
            )
            cut, count = prose.longest_part(head, position, end, levels)
            if cut == position and keep is None:
                if titles or part_context is not None:
                    # Not one step fits after the path and context: give them up for the rest.
                    titles, dropped, context, context_kind = (), dropped + len(titles), None, None
                    continue
                # Not even one code point fits max_tokens: it becomes a part of its own, over the
                # budget, which validation dead-letters with its text. The loop always moves on.
                cut, count = prose.single_step(position)
            part_end, count = prose.trimmed_end(head, position, cut, end, count)
            if keep is not None and topping and cut > position:
                joined = counter.exact(self._embedding(keep, keep.end) + self.text[position:part_end])
                if joined <= self.p.max_tokens:
                    count = joined
                else:
                    self._flush()
                    keep = None
            if keep is not None and cut == position:
                # Even one step does not fit after the open headings: close them first.
                self._flush()
                first = False
                continue
            if keep is not None:
                self._add_prose(keep, node, part_end, count, split)
            else:
                self.cur = self._prose_part(
                    node,
                    position,
                    part_end,
                    count,
                    path,
                    top,
                    (titles, dropped),
                    (part_context, context_kind if part_context else None),
                    split,
                )
            self._flush()
            if self.final:
                yield from self._release()
            position = cut
            if first and heading:
                titles, dropped = self._prose_titles(path, 0)
            first = False

    def _prose_start(self, start: int, end: int) -> int:
        """Where prose in ``[start, end)`` starts its first part: a chunk with a body is flushed
        first unless it is small (:meth:`_tops_up`); open headings (no body) or that
        chunk take the part from ``start``, else leading blank lines are not a part of their own
        (the chunks need not touch; only whitespace lies between them)."""
        if self.cur is not None and self.cur.has_body and not self._tops_up(self.cur, start, inside=True):
            self._flush()
        if self.cur is not None:
            return start
        first_text = _NON_SPACE.search(self.text, start, end)
        return first_text.start() if first_text else end

    def _prose_head(self, titles: tuple[str, ...], context: tuple[int, int] | None) -> str:
        """What a part of prose in a new chunk follows in its embedding text: prefix, context."""
        return heading_prefix(titles) + (self.text[context[0] : context[1]] if context else "")

    @staticmethod
    def _add_prose(keep: OpenChunk, node: Node | None, end: int, count: int, split: str) -> None:
        """Give the open chunk ``keep`` the first part of prose, up to ``end``, of ``count``
        tokens, a part of a ``split`` block (``"prose"`` or ``"code"``)."""
        keep.end = end
        keep.has_body = True
        keep.exact_count = count
        keep.split = keep.split or split
        if "paragraph" not in keep.kinds:
            keep.kinds.append(node.kind if node is not None else "paragraph")

    @staticmethod
    def _prose_part(
        node: Node | None,
        start: int,
        end: int,
        count: int,
        path: tuple[Node, ...],
        top: int,
        prefix: tuple[tuple[str, ...], int],
        context: Context,
        split: str,
    ) -> OpenChunk:
        """A chunk holding the part ``[start, end)`` of prose, of ``count`` tokens (counted whole),
        with ``prefix`` (its titles, and how many outer ones were dropped) and ``context``, a part
        of a ``split`` block (``"prose"`` or ``"code"``)."""
        (titles, dropped), (span, kind) = prefix, context
        return OpenChunk(
            start=start,
            end=end,
            path=path,
            prefix=titles,
            prefix_dropped=dropped,
            top=top,
            has_body=True,
            kinds=[node.kind if node is not None else "paragraph"],
            sections=0,
            page_no=node.page_no if node is not None else None,
            context=span,
            context_kind=kind,
            split=split,
            exact_count=count,
        )
