"""One document's packing, second layer: sections and tiles, filled into chunks in reading order.

Positions are code points of the normalized text; counts are tokens of the budget tokenizer.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from functools import partial
from itertools import islice

from transforms.structure.packing import limits
from transforms.structure.packing.chunk import OpenChunk, PackedChunk
from transforms.structure.packing.filling import BLOCK_OF_PART, ChunkFilling, Context, own_heading
from transforms.structure.packing.lines import Tile
from transforms.structure.tree import Node, StreamedChildren

__all__ = ["TilePacking"]

#: ``(k, first, rest)``: a chunk opening at one of the first ``k`` tiles of a split block starts
#: with the context ``first``, at a later tile with ``rest``.
Contexts = tuple[int, Context, Context]


class TilePacking(ChunkFilling):
    """Packs sections and their tiles in reading order; a tile too large even alone goes to
    :meth:`_split` (defined by the subclass that splits blocks)."""

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
        """Split a tile that does not fit ``max_tokens`` even alone (see ``BlockSplitting``)."""
        raise NotImplementedError

    def _section(self, section: Node, start: int, end: int, path: tuple[Node, ...], top: int) -> Iterator[PackedChunk]:
        """Pack the section ``[start, end)`` under ``path``: merged whole into the open chunk when
        it fits ``fill_tokens`` and no content-defined cut closes the chunk before it (a section
        starts at an anchor), else as a chunk of its own when it fits ``max_tokens``, else tile
        by tile. Yields the chunks that become final meanwhile."""
        inner = path + (section,)
        cur = self.cur
        if cur is not None:
            if (
                self.p.merge_small_sections
                and self._can_join(top)
                and cur.context is None
                and cur.exact_count is None
                and not self._content_cut(cur, section, start, end)
                and self._total(cur, end, self.p.fill_tokens) <= self.p.fill_tokens
            ):
                self._extend(section, end, body=True, section=True, path=inner)
                return
            if cur.has_body or not self._can_join(top):
                self._flush()
        if self.cur is None and self._open(
            section, start, end, inner, 1, top, limit=self.p.max_tokens, allow_dropping=False
        ):
            return
        children = section.children
        if type(children) is StreamedChildren:
            # A section too large to hold has its children as a stream: its tiles are read as
            # one, a few at a time (each may be a subsection of many blocks).
            yield from self._tiles(self.lines.iter_tiles(children, start, end), inner, top, batch=limits.SECTION_BATCH)
        else:
            yield from self._tiles(self.lines.tiles(children, start, end), inner, top)

    def _tiles(
        self,
        tiles: list[Tile] | Iterator[Tile],
        path: tuple[Node, ...],
        top: int,
        *,
        contexts: Contexts | None = None,
        split: str | None = None,
        batch: int = 0,
    ) -> Iterator[PackedChunk]:
        """Pack tiles in order: subsections, headings and blocks (or the parts of a split block).

        ``tiles`` is a list, or an iterator (a split block's parts, or the children of a root or a
        section given as a stream, read as a stream and packed ``batch`` (default
        ``limits.TILE_BATCH``) at a time: a block's tiles are never all held). ``contexts`` is
        ``(k, first, rest)``: a chunk opening at one of the first ``k`` tiles starts with the
        repeated header or fence ``first`` (``(span, kind)`` or ``(None, None)``), at a later
        tile with ``rest``; ``split`` names the block the tiles are parts of.

        A batch's end changes no decision: a run of tiles joining the open chunk stops there and
        the next batch's first tile, which starts where the open chunk ends, goes on with the
        same run (same start, prefix and context, so the same room).
        """
        batches: Iterable[list[Tile]]
        if type(tiles) is list:
            batches = (tiles,)
        else:
            stream, size = tiles, batch or limits.TILE_BATCH
            batches = iter(lambda: list(islice(stream, size)), [])
        fast = self.counter.additive and not self.p.overlap_tokens
        offset = 0  # tiles in earlier batches
        for held in batches:
            yield from self._tile_batch(held, offset, path, top, contexts, split, fast)
            offset += len(held)

    def _tile_batch(
        self,
        tiles: list[Tile],
        offset: int,
        path: tuple[Node, ...],
        top: int,
        contexts: Contexts | None,
        split: str | None,
        fast: bool,
    ) -> Iterator[PackedChunk]:
        """Pack one batch of :meth:`_tiles` (the first after ``offset`` tiles of the block).

        The common case, blocks joining a chunk that already has text, takes one bisection over
        the tiles' running token counts instead of a step per block (``fast``: an additive
        tokenizer and no overlap); it decides exactly as :meth:`_block` would (extend while the
        chunk stays within ``fill_tokens`` and no content-defined cut closes it).
        """
        i, n = 0, len(tiles)
        while i < n:
            if self.final:
                yield from self._release()
            node, s, e = tiles[i]
            if node is not None and node.kind == "section":
                yield from self._section(node, s, e, path, top)
                i += 1
                continue
            cur = self.cur
            j = i
            if (
                fast
                and cur is not None
                and cur.has_body
                and cur.exact_count is None
                and cur.end == s
                and self._can_join(top)
            ):
                j = self._fitting_run(cur, tiles, i)
            if cur is None or j == i:
                context, context_kind = (
                    (None, None) if contexts is None else contexts[1] if offset + i < contexts[0] else contexts[2]
                )
                if not self._block(node, s, e, path, top, context=context, context_kind=context_kind, split=split) and (
                    context is None or not self._block(node, s, e, path, top, split=split)
                ):
                    # (A row or line that fits the budget alone, not after its header or fence, is
                    # kept whole without it: only a unit that does not fit alone is cut inside.)
                    yield from self._split(node, s, e, path, top, context=context, context_kind=context_kind)
                i += 1
                continue
            self._extend_by_run(cur, tiles[i:j])
            if split is not None and cur.split is None:
                cur.split = split  # (it holds a part of the split block)
            i = j

    def _fitting_run(self, cur: OpenChunk, tiles: list[Tile], i: int) -> int:
        """The end ``j`` of the longest run ``tiles[i:j]`` of blocks (no section, no heading) that
        the open chunk ``cur`` takes within ``fill_tokens``, by the running token counts, up to
        the first anchor where it holds ``min_fill`` tokens (:meth:`_content_cut`)."""
        counter = self.counter
        # Tokens the chunk may still take, as a bound on the running count at a tile end.
        base = counter.tokens_before(cur.start)
        room = self.p.fill_tokens - counter.prefix(cur.prefix) + base
        if cur.context is not None:
            room -= counter.context(cur.context)
        # The running count at a tile start from which the chunk holds ``min_fill`` tokens
        # (:meth:`_content_cut`: it closes before an anchor from there).
        min_fill = self.p.min_fill
        floor = None if min_fill is None else room - self.p.fill_tokens + min_fill
        single = counter.single
        # (tokens_before, one bisection without a call when the text is encoded in one part)
        tokens_before = counter.tokens_before if single is None else partial(bisect_right, single)
        # (A bound on the code points the chunk may still take: ``at_least`` over more is over
        # ``room - base``; no bound when the tokenizer gives no ``max_token_chars``.)
        token_chars = counter.token_chars
        reach = None if not token_chars else cur.start + (room - base + 1) * token_chars
        # The running count at the previous tile's end, which is this tile's start (tiles touch).
        at_start, last_end = 0, -1
        j, n = i, len(tiles)
        while j < n:
            tile, s, e = tiles[j]
            if tile is not None and tile.kind in ("section", "heading"):
                break
            if floor is not None:
                if s != last_end:
                    at_start = tokens_before(s)
                if at_start >= floor and self._is_anchor(tile, s, e):
                    break
            # (tokens_before(tile end) > room, without encoding far ahead for a huge tile)
            if (reach is not None and e >= reach and counter.at_least(cur.start, e) > room - base) or (
                at_start := tokens_before(e)
            ) > room:
                break
            last_end = e
            j += 1
        return j

    @staticmethod
    def _extend_by_run(cur: OpenChunk, run: list[Tile]) -> None:
        """What :meth:`_extend` does per tile, once for a run of blocks (no overlap here: tile
        starts are not kept)."""
        kinds = cur.kinds
        for tile, _, _ in run:
            kind = BLOCK_OF_PART.get(tile.kind, tile.kind) if tile is not None else "paragraph"
            if kind not in kinds:
                kinds.append(kind)
            if cur.page_no is None and tile is not None:
                cur.page_no = tile.page_no
        cur.end = run[-1][2]

    def _block(
        self,
        node: Node | None,
        start: int,
        end: int,
        path: tuple[Node, ...],
        top: int,
        *,
        context: tuple[int, int] | None = None,
        context_kind: str | None = None,
        split: str | None = None,
    ) -> bool:
        """Add one tile: to the open chunk if it fits and no content-defined cut closes the chunk
        before it, else to a new chunk; ``False`` when it does not fit even alone and is to be
        split (the caller then calls :meth:`_split`)."""
        heading = own_heading(node, path)
        cur = self.cur
        if cur is not None and not self._can_join(top):
            self._flush()
            cur = None
        p = self.p
        if cur is not None and self._content_cut(cur, node, start, end):
            self._flush()
            cur = None
        if cur is not None and cur.exact_count is None:
            total = self._total(cur, end, max(p.fill_tokens, p.max_tokens))
            if total <= p.fill_tokens or (not cur.has_body and total <= p.max_tokens):
                self._extend(node, end, body=not heading, path=path)
                if split is not None and cur.split is None:
                    cur.split = split  # (it holds a part of the split block)
                return True
        displayed = 1 if heading else 0
        limit = p.max_tokens
        if cur is not None and (
            (cur.has_body and not self._tops_up(cur, start))
            or cur.exact_count is not None
            # Open headings alone would force a split of a block that fits on its own: a block
            # that fits is never split, so the headings become a chunk of their own.
            or self._open(
                node,
                start,
                end,
                path,
                displayed,
                top,
                limit=limit,
                context=context,
                context_kind=context_kind,
                split=split,
                dry_run=True,
            )
        ):
            self._flush()
            cur = None
        if cur is None and self._open(
            node, start, end, path, displayed, top, limit=limit, context=context, context_kind=context_kind, split=split
        ):
            return True
        if not p.split_oversized:
            self._over_budget_alone(node, start, end, path, top)
            return True
        return False

    def _over_budget_alone(self, node: Node | None, start: int, end: int, path: tuple[Node, ...], top: int) -> None:
        """The tile ``[start, end)`` as a chunk of its own, over the budget and without a heading
        prefix (``oversized_block_policy="reject"``: validation dead-letters it)."""
        self._flush()
        self.cur = OpenChunk.empty(start, path, top)
        self._extend(node, end, body=True)
        self._flush()
