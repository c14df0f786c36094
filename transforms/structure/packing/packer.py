"""The packer's options (:class:`Packer`) and one document's run through them (:class:`PackingRun`).

Positions are code points of the normalized text; counts are tokens of the budget tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Any

from transforms.structure.packing.chunk import PackedChunk
from transforms.structure.packing.lines import Tile
from transforms.structure.packing.splitting import BlockSplitting
from transforms.structure.tree import NormalizedDocument
from transforms.tokenizers import Tokenizer

__all__ = ["CUTS", "Packer", "PackingRun"]

#: Values of ``Packer(cuts=...)``.
CUTS = ("content_defined", "greedy")


class Packer:
    """Packs normalized documents into chunks; see :mod:`transforms.structure.packing` for the algorithm.

    Args:
        tokenizer: Counts tokens (the budget tokenizer).
        target_tokens: Chunks are filled up to about this many tokens of embedding text.
        max_tokens: No chunk's embedding text has more tokens than this.
        min_preferred_tokens: A chunk under this many tokens is merged into its neighbour in
            the same top-level section when ``merge_small_sections`` and the two fit
            ``target_tokens`` together.
        overlap_tokens: Up to this many tokens of whole blocks at the end of a chunk are repeated
            at the start of the next one of the same section (0: no overlap).
        merge_small_sections: Merge whole consecutive sections while they fit ``target_tokens``.
        allow_cross_top_level_merge: Let a chunk span two top-level sections.
        include_heading_path_in_embedding: Put the heading path before the text in the
            embedding text.
        split_oversized: Split a block that does not fit ``max_tokens`` (``split_with_context``);
            when ``False`` such a block becomes a chunk of its own, over the budget, for
            validation to reject.
        cuts: ``"content_defined"`` (default): a chunk that already holds ``min_fill`` tokens
            closes before the next section, heading, or block whose first code points hash to
            an anchor, and is filled up to ``max_tokens`` while none comes, so that after an
            edit the cuts fall where they fell before within a chunk or two (see
            :mod:`transforms.structure.packing`); ``"greedy"``: every chunk is filled as far as
            ``target_tokens`` allows.

    Raises:
        ValueError: ``cuts`` is neither.
    """

    #: The share of ``target_tokens`` a chunk holds before a content-defined cut may close it
    #: (``min_fill``). With ``anchor_spacing`` these were chosen on the edit-locality benchmark
    #: (``benchmarks/edit_locality.py``): fewer chunks than greedy cuts and about half the keys
    #: changed beyond the edited chunks; a lower share or denser anchors make more chunks.
    cut_fill = 0.5
    #: One block start in this many (by the hash of its first ``anchor_chars`` code points) is an
    #: anchor, where a chunk holding ``cut_fill`` of the target closes.
    anchor_spacing = 5
    #: Code points of a block's start that decide whether it is an anchor.
    anchor_chars = 64

    def __init__(
        self,
        *,
        tokenizer: Tokenizer,
        target_tokens: int,
        max_tokens: int,
        min_preferred_tokens: int = 0,
        overlap_tokens: int = 0,
        merge_small_sections: bool = True,
        allow_cross_top_level_merge: bool = False,
        include_heading_path_in_embedding: bool = True,
        split_oversized: bool = True,
        cuts: str = "content_defined",
    ) -> None:
        if cuts not in CUTS:
            raise ValueError(f"cuts must be one of {CUTS}, got {cuts!r}")
        self.tokenizer = tokenizer
        self.target_tokens = target_tokens
        self.max_tokens = max_tokens
        self.min_preferred_tokens = min_preferred_tokens
        self.overlap_tokens = overlap_tokens
        self.merge_small_sections = merge_small_sections
        self.allow_cross_top_level_merge = allow_cross_top_level_merge
        self.include_heading_path = include_heading_path_in_embedding
        self.split_oversized = split_oversized
        self.cuts = cuts
        #: Tokens of embedding text a chunk holds before a content-defined cut may close it
        #: (``None``: greedy cuts).
        self.min_fill: int | None = int(target_tokens * self.cut_fill) if cuts == "content_defined" else None
        #: Tokens of embedding text a chunk is filled to at most before the next block opens
        #: another: ``target_tokens``, or with content-defined cuts ``max_tokens`` (the room a
        #: chunk has to reach an anchor; it closes at the first one past ``min_fill``).
        self.fill_tokens = target_tokens if self.min_fill is None else max_tokens

    def pack(self, normalized: NormalizedDocument) -> list[PackedChunk]:
        """Return the chunks of ``normalized`` in reading order (empty when it has no blocks)."""
        return list(self.stream(normalized))

    def stream(self, normalized: NormalizedDocument, *, token_ends: Any = None) -> Iterator[PackedChunk]:
        """:meth:`pack`'s chunks as an iterator: those of a top-level section come out once the
        packer is past the next one (a chunk changes only within its own top-level section), so
        a long document's chunks are never all held at once.

        ``token_ends``: the tokenizer's ``token_ends(normalized.text)`` when the caller already
        has them (``WholeDocument.chunk_or_ends``), used instead of encoding the text again when
        it is encoded in one part (at most ``limits.PART_CHARS`` code points); ``None``: encoded here.
        """
        return PackingRun(self, normalized, token_ends=token_ends).stream()


class PackingRun(BlockSplitting):
    """One document's packing: the state of :class:`Packer` for a single call of ``stream``."""

    def stream(self) -> Iterator[PackedChunk]:
        """The document's chunks in reading order, each handed out once no later step changes it.

        The root's tiles are read as a stream (the top-level blocks and sections of a long
        document may be a ``StreamedChildren``): one top-level section is held at a time. Text
        before the first heading belongs with the first top-level section (top 1).
        """
        root = self.normalized.root
        del self.normalized  # (its root's children may be a stream: nothing else reads them)
        if not root.children:
            return
        tiles = self.lines.iter_tiles(root.children, 0, len(self.text))
        del root
        first: list[Tile] = []  # the first section's tile, once read

        def leading() -> Iterator[Tile]:
            for tile in tiles:
                if tile[0] is not None and tile[0].kind == "section":
                    first.append(tile)
                    return
                yield tile

        yield from self._tiles(leading(), (), 1)
        previous = 0  # where the top-level section before this one starts
        for top, (node, start, end) in enumerate(chain(first, tiles), start=1):
            first.clear()
            yield from self._done_before(top - 1)
            self._forget_before(previous)
            # The paths remembered hold their sections: those of earlier top-level sections go.
            self.titles.clear()
            previous = start
            if node is not None and node.kind == "section":
                yield from self._section(node, start, end, (), top)
            elif not self._block(
                node, start, end, (), top
            ):  # pragma: no cover - build_sections puts every later block inside a section
                yield from self._split(node, start, end, (), top, context=None, context_kind=None)
            node = None
        self._flush()
        yield from self._done_before(None)
