"""One document's packing, first layer: the chunk being filled, and the chunks flushed from it.

:class:`ChunkFilling` holds the state of one call of ``Packer.stream``: the open chunk
(:class:`~transforms.structure.packing.chunk.OpenChunk`), the chunks flushed but not yet handed
out, and which of those no later step changes (``final``). It opens, extends and flushes chunks,
counts their embedding text, and hands out the final ones (small ones merged) while letting the
counter drop the token ends behind every chunk that may still be counted: what keeps a long
document's memory bounded. Positions are code points of the normalized text; counts are tokens of
the budget tokenizer.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from transforms.structure.packing import limits
from transforms.structure.packing.chunk import OpenChunk, PackedChunk, distinct_titles, heading_prefix
from transforms.structure.packing.counting import TokenCounter
from transforms.structure.packing.lines import Lines
from transforms.structure.packing.merging import is_mergeable, merge_small
from transforms.structure.packing.prose import MIN_PART_SHARE
from transforms.structure.tree import Node, NormalizedDocument, StreamedChildren

if TYPE_CHECKING:
    from transforms.structure.packing.packer import Packer

__all__ = ["BLOCK_OF_PART", "ChunkFilling", "Context", "own_heading"]

#: A repeated header or fence a chunk opens with, and its kind: ``(span, kind)`` or ``(None, None)``.
Context = tuple[tuple[int, int] | None, str | None]
#: The kind a part of a split block is counted as in a chunk's ``kinds``: its block's.
BLOCK_OF_PART = {"table_row": "table", "list_item": "list"}
_new = object.__new__


def own_heading(node: Node | None, path: tuple[Node, ...]) -> bool:
    """Whether ``node`` is the heading line of the innermost section of ``path``.

    A heading inside a block quote or a list item is that block's text, not a section's title.
    """
    if node is None or node.kind != "heading" or not path:
        return False
    children = path[-1].children
    if isinstance(children, StreamedChildren):
        # (A section too large to hold, its children made again on each pass: its heading is
        # the one block that starts where it starts, the others all lie after the heading.)
        return node.start == path[-1].start
    return children[0] is node


def body_path(path: tuple[Node, ...]) -> tuple[Node, ...]:
    """``path`` extended through the first subsections of a section with no text of its own (its
    heading line followed directly by a subsection): the path of the first text under it. A chunk
    holding such a section whole carries the path it would carry were the section split."""
    while path:
        children = path[-1].children
        if isinstance(children, StreamedChildren) or len(children) < 2:
            break
        if children[0].kind != "heading" or children[1].kind != "section":
            break
        path = path + (children[1],)
    return path


def _headings_in(section: Node) -> int:
    """Headings in a section: its own and its subsections' (only sections are visited)."""
    return 1 + sum(_headings_in(child) for child in section.children if child.kind == "section")


class ChunkFilling:
    """The open chunk and the flushed chunks of one document's packing.

    Invariants: chunks are flushed in reading order; the first ``final`` chunks of ``out`` are
    changed by no later step (no merge can reach them); ``last`` is the chunk flushed last (the
    next chunk's overlap starts from it).

    Args:
        packer: The options.
        normalized: The document.
        token_ends: The tokenizer's ``token_ends`` of its text, if already computed (see ``TokenCounter``).
    """

    def __init__(self, packer: Packer, normalized: NormalizedDocument, *, token_ends: Any = None) -> None:
        self.p = packer
        self.text = normalized.text
        self.normalized = normalized
        self.lines = Lines(normalized.text)
        self.counter = TokenCounter(normalized.text, packer.tokenizer, self.lines, token_ends)
        self.cur: OpenChunk | None = None
        self.out: list[PackedChunk] = []  # flushed chunks not yet streamed out
        # How many chunks at the start of ``out`` no later step changes (see ``_flush``).
        self.final = 0
        self.merging = packer.merge_small_sections and bool(packer.min_preferred_tokens) and not packer.overlap_tokens
        self.last: PackedChunk | None = None  # the last chunk flushed (a new chunk's overlap starts from it)
        self.last_tiles: list[int] = []  # tile starts of the last flushed chunk (for overlap)
        self.last_cut_inside = False  # whether the last flushed chunk ends a part cut inside a line
        self.tiles_in_cur: list[int] = []
        self.titles: dict[tuple[int, int], tuple[tuple[Node, ...], tuple[str, ...]]] = {}

    # -- handing out final chunks ------------------------------------------------------------

    def _forget_before(self, position: int) -> None:
        """Let the counter drop token ends before ``position`` and before every chunk that may still
        be counted: those not yet streamed out, the open one, and the last one (overlap).

        Only a chunk's own text counts here, not a repeated header or fence before it: that is
        counted once (``TokenCounter.context``, remembered) when its block is split, so the token
        ends behind a huge table's rows are dropped although its header, at the top, comes
        again in every part."""
        for chunk in (self.out[0] if self.out else None, self.last):
            if chunk is not None:
                position = min(position, chunk.spans[-1][0])
        cur = self.cur
        if cur is not None:
            position = min(position, cur.start)
        self.counter.forget_before(position)

    def _release(self) -> list[PackedChunk]:
        """Take out of ``out`` its first ``final`` chunks (merged), which no later step changes,
        and let the counter drop the token ends behind every chunk that may still be counted.
        Called inside a section, where a long paragraph or section makes many chunks."""
        k, self.final = self.final, 0
        done = self._take(k)
        self._forget_before(len(self.text))
        return done

    def _done_before(self, top: int | None) -> list[PackedChunk]:
        """Take out of ``out`` the chunks no later step changes, merged (``merge_small``): those
        of top-level sections before ``top``, or every one when ``None``.

        Called with ``T - 1`` before top-level section ``T`` is packed: the open chunk and every
        chunk still to be flushed start in ``T - 1`` or later, and merges never join two top-level
        sections, so merging the earlier ones now gives what one merge over the whole list gives.
        With cross-section merges, nothing comes out before the end.
        """
        out = self.out
        if top is None:
            k = len(out)
        elif self.p.allow_cross_top_level_merge:
            return []
        else:
            k = 0
            while k < len(out) and out[k].top < top:
                k += 1
            if not k:
                return []
        return self._take(k)

    def _take(self, k: int) -> list[PackedChunk]:
        """The first ``k`` chunks of ``out``, taken out, small ones merged (``merge_small``)."""
        out = self.out
        done = out[:k]
        del out[:k]
        self.final = max(self.final - k, 0)
        if self.merging:
            p = self.p
            merge_small(
                done,
                text=self.text,
                counter=self.counter,
                lines=self.lines,
                min_preferred_tokens=p.min_preferred_tokens,
                target_tokens=p.target_tokens,
                allow_cross_top_level_merge=p.allow_cross_top_level_merge,
            )
        return done

    # -- counting ----------------------------------------------------------------------------

    def _total(self, cur: OpenChunk, end: int, cap: int | None = None) -> int:
        """Tokens of the embedding text of ``cur`` extended to ``end``; with ``cap``, any number
        over ``cap`` when the text alone is provably longer (``TokenCounter.at_least``: a huge
        tile's fit test encodes nothing ahead). Otherwise the exact count, from one ``span``
        (callers only compare it with limits of at most ``cap``)."""
        counter = self.counter
        if counter.additive and cur.exact_count is None:
            if cap is not None and counter.at_least(cur.start, end) > cap:
                return cap + 1
            total = counter.prefix(cur.prefix) + counter.span(cur.start, end)
            if cur.context is not None:
                total += counter.context(cur.context)
            return total
        return counter.exact(self._embedding(cur, end))

    def _embedding(self, cur: OpenChunk, end: int) -> str:
        """The embedding text of ``cur`` extended to ``end``: prefix, context, text."""
        context = self.text[cur.context[0] : cur.context[1]] if cur.context else ""
        return heading_prefix(cur.prefix) + context + self.text[cur.start : end]

    # -- where a chunk closes ----------------------------------------------------------------

    def _is_anchor(self, node: Node | None, start: int, end: int) -> bool:
        """Whether the tile ``[start, end)`` of ``node`` starts at an anchor: a section or heading,
        or a block whose first ``anchor_chars`` code points have a CRC-32 divisible by
        ``anchor_spacing`` (a function of the block's own text only, so the same block is an
        anchor in every version of the document)."""
        if node is not None and node.kind in ("section", "heading"):
            return True
        p = self.p
        head = self.text[start : min(end, start + p.anchor_chars)]
        return zlib.crc32(head.encode("utf-8", "surrogatepass")) % p.anchor_spacing == 0

    def _content_cut(self, cur: OpenChunk, node: Node | None, start: int, end: int) -> bool:
        """Whether the open chunk ``cur`` closes before the tile ``[start, end)`` although the tile
        may fit: it has text, holds at least ``min_fill`` tokens, and the tile starts at an anchor
        (:meth:`_is_anchor`).

        Content-defined chunking (LBFS, Muthitacharoen et al. 2001; FastCDC, Xia et al. 2016):
        a cut falls at the first anchor past a minimum size, so it depends on the text since the
        chunk's start and on the anchors' own text, not on where earlier cuts fell. After an edit,
        the chunk holding it ends at the same anchor unless the edit moved that anchor past the
        target or another one past the minimum, and a chunk that starts elsewhere closes at the
        same anchor as before as soon as no anchor lies between the two minimums.
        """
        min_fill = self.p.min_fill
        if min_fill is None or not cur.has_body or cur.exact_count is not None or cur.end != start:
            return False
        return self._is_anchor(node, start, end) and self._total(cur, start) >= min_fill

    # -- the chunk being filled --------------------------------------------------------------

    def _tops_up(self, cur: OpenChunk, start: int, *, inside: bool = False) -> bool:
        """Whether the open chunk ``cur``, which has text, may take the first part of a block from
        ``start`` that does not fit even alone (the block is split; blocks that fit never are):
        it ends there, is not itself a part cut inside a line, and has room for
        ``MIN_PART_SHARE`` of the target, so that it is not left a sliver before the parts. For
        a block cut ``inside`` (prose, a line of code), only while it holds less than that share
        (``_split_prose`` then joins the first part, cut as it is cut alone, if the two fit)."""
        p = self.p
        if not p.split_oversized or cur.exact_count is not None or cur.end != start:
            return False
        least = int(min(p.target_tokens, p.max_tokens) * MIN_PART_SHARE)
        if inside:
            return self._total(cur, start) < least
        return self._total(cur, start) + least <= p.max_tokens

    def _can_join(self, top: int) -> bool:
        """Whether a tile of top-level section ``top`` may join the open chunk."""
        cur = self.cur
        return cur is not None and (cur.top == top or self.p.allow_cross_top_level_merge)

    def _extend(
        self,
        node: Node | None,
        end: int,
        *,
        body: bool,
        section: bool = False,
        path: tuple[Node, ...] | None = None,
    ) -> None:
        """Extend the open chunk by the tile of ``node`` up to ``end`` (``body``: more than a
        heading line; ``section``: ``node`` is a whole section)."""
        cur = self.cur
        assert cur is not None  # (callers open a chunk first)
        self.tiles_in_cur.append(cur.end)
        if not cur.has_body and path is not None:
            # Headings so far travel with what follows: it names the chunk (a whole section by
            # the path of its first text).
            cur.path = body_path(path) if section else path
        cur.end = end
        cur.has_body = cur.has_body or body
        kind = "section" if section else BLOCK_OF_PART.get(node.kind, node.kind) if node is not None else "paragraph"
        if kind not in cur.kinds:
            cur.kinds.append(kind)
        if node is None:
            return
        if section:
            cur.sections += _headings_in(node)
        elif node.kind == "heading":
            cur.sections += 1
        if cur.page_no is None:
            cur.page_no = node.page_no

    def _titles(self, path: tuple[Node, ...], displayed: int = 0) -> tuple[str, ...]:
        """The heading path of ``path`` without its ``displayed`` innermost sections (their
        heading line is in the chunk's text).

        A section whose title repeats the nearest title above it (sections without a title
        between them are passed over) is one heading with it (an HTML page's ``<title>`` and its
        first ``h2``, a Markdown ``# A`` over ``## A``): its title is given once, and not at all
        when the inner one's heading line is displayed.
        """
        # Keyed by the path object itself (held in the value, so its id is never reused); the
        # latest PATHS_MEMO paths only (a path holds its sections: a document of many sections
        # must not keep them all alive here).
        memo = self.titles
        key = (id(path), displayed)
        known = memo.get(key)
        if known is None:
            if len(memo) >= limits.PATHS_MEMO:
                memo.clear()
            shown = len(path) - displayed
            titles = distinct_titles(path[:shown])
            if displayed and titles and titles[-1] == next((n.title for n in path[shown:] if n.title), None):
                titles = titles[:-1]  # (the displayed heading line says it)
            known = memo[key] = (path, titles)
        return known[1]

    def _open(
        self,
        node: Node | None,
        start: int,
        end: int,
        path: tuple[Node, ...],
        displayed: int,
        top: int,
        *,
        limit: int,
        context: tuple[int, int] | None = None,
        context_kind: str | None = None,
        split: str | None = None,
        allow_dropping: bool = True,
        dry_run: bool = False,
    ) -> bool:
        """Open a chunk holding ``[start, end)`` if it fits ``limit``; ``False`` if it does not.

        ``displayed`` is how many innermost sections of ``path`` have their heading inside the
        chunk (1 when it starts with a heading line). Outer titles are dropped from the prefix,
        outermost first, when ``allow_dropping`` and that makes it fit. With ``dry_run`` nothing
        is opened: the answer only says whether it would be.
        """
        titles = self._titles(path, displayed) if self.p.include_heading_path else ()
        section = node is not None and node.kind == "section"
        for dropped in range(len(titles) + 1 if allow_dropping else 1):
            cur = OpenChunk.empty(
                start,
                path,
                top,
                prefix=titles[dropped:],
                prefix_dropped=dropped,
                context=context,
                context_kind=context_kind,
                split=split,
            )
            if self._total(cur, end, limit) <= limit:
                if dry_run:
                    return True
                self.cur = cur
                self._apply_overlap(cur, end, limit)
                self.tiles_in_cur = []
                own = displayed == 1 and node is not None and node.kind == "heading"
                self._extend(node, end, body=not own, section=section, path=path if section else None)
                # (The tile's own start too when an overlap moved the chunk's start before it: the
                # next chunk's overlap may start there.)
                self.tiles_in_cur = [cur.start] if cur.start == start else [cur.start, start]
                return True
        return False

    def _apply_overlap(self, cur: OpenChunk, end: int, limit: int) -> None:
        """Start the new chunk ``cur`` earlier by whole tiles of the last one, up to
        ``overlap_tokens``.

        Only within one section, only while the chunk still fits ``limit``.
        """
        budget = self.p.overlap_tokens
        last = self.last
        if not budget or last is None or cur.context is not None or cur.exact_count is not None:
            return
        if last.spans[-1][1] != cur.start or self.last_cut_inside or last.headings != self._titles(cur.path):
            return
        best = cur.start
        for tile in reversed(self.last_tiles):
            if tile >= cur.start or tile <= last.spans[-1][0]:
                continue
            if self.counter.span(tile, cur.start) > budget:
                break
            best = tile
        original = cur.start
        while best < original:
            cur.start = best
            if self._total(cur, end, limit) <= limit:
                return
            later = [t for t in self.last_tiles if best < t < original]
            best = later[0] if later else original
        cur.start = original

    def _flush(self) -> None:
        """Close the open chunk (if it has text) into ``out``, and move ``final`` up to every
        chunk no merge can change any more."""
        cur = self.cur
        if cur is None:
            return
        self.cur = None
        if cur.end <= cur.start:
            return
        spans = ((cur.context,) if cur.context else ()) + ((cur.start, cur.end),)
        count = cur.exact_count if cur.exact_count is not None else self._total(cur, cur.end)
        # PackedChunk(**fields) without the frozen dataclass's __init__ (an object.__setattr__
        # per field): the same object, every field set.
        chunk = _new(PackedChunk)
        chunk.__dict__.update(
            spans=spans,
            headings=self._titles(cur.path),
            prefix=cur.prefix,
            prefix_dropped=cur.prefix_dropped,
            page_no=cur.page_no,
            kinds=tuple(cur.kinds),
            sections=cur.sections,
            split=cur.split,
            context=cur.context_kind,
            token_count=count,
            top=cur.top,
        )
        self.last = chunk
        self.last_cut_inside = cur.exact_count is not None
        self.out.append(chunk)
        self._advance_final(chunk)
        self.last_tiles = self.tiles_in_cur
        self.tiles_in_cur = []

    def _advance_final(self, chunk: PackedChunk) -> None:
        """Move ``final`` past the chunks that the flushed ``chunk`` makes final."""
        if not self.merging or not is_mergeable(chunk, self.lines):
            # No merge joins a chunk that is not mergeable, nor two chunks on either side of it
            # (merges join neighbours, both mergeable): the chunks up to it are final.
            self.final = len(self.out)
        elif (
            chunk.token_count >= self.p.min_preferred_tokens
            and len(self.out) > 1
            and self.out[-2].token_count >= self.p.min_preferred_tokens
        ):
            # A merge needs one of the two under min_preferred_tokens, and merged chunks only
            # grow: none ever joins two that are both at least that (the parts of a huge list):
            # the chunks before this one are final.
            self.final = max(self.final, len(self.out) - 1)
