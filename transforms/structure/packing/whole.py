"""The one chunk of a document whose whole text fits with no cut possible, without a packing run.

Beam-free. :class:`WholeDocument` answers for a document the full packer (``Packer.stream``)
would pack into exactly one chunk of all its text, and gives that chunk, equal in every field;
for any other document it answers ``None`` and the full packer runs. It takes a document when:

- its top-level blocks are held (a tuple, not a stream), at least one, none a ``heading`` (so the
  section tree is the blocks themselves, under no heading path), and its text is at most
  ``limits.PART_CHARS`` code points (encoded in one part);
- its text's tokens (the budget tokenizer's, counted as the packer counts them: the running total
  of one encoding plus the count of an empty heading prefix) are at most ``max_tokens``: the first
  tile opens a chunk of them all;
- with more than one tile (several blocks, or text before the first block that is not blank),
  the tokenizer is additive (``token_ends``: the running total at a tile's start is never more
  than at the text's end) and no later tile can close the chunk: the whole count is under
  ``min_fill`` (content-defined cuts: no chunk holds ``min_fill`` tokens before an anchor) or at
  most ``target_tokens`` (greedy cuts: every tile joins).

The chunk then spans the whole text (tiles cover it without gaps), has no heading path, prefix,
context or split, and the kinds and first page of its tiles (``Lines.iter_tiles``) in order; no
merge applies to a lone chunk, and no overlap to a first one. Tiny documents (a sentence, a
short note) take this path: it skips the run's set-up (splitter, filler, counter) and its tile
loop. ``tests/transforms/structure/packing/test_whole.py`` proves it equal to the full packer.
Positions are code points of the normalized text; counts are tokens of the budget tokenizer.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from transforms.structure.packing import limits
from transforms.structure.packing.chunk import PackedChunk
from transforms.structure.packing.filling import BLOCK_OF_PART
from transforms.structure.packing.lines import Lines
from transforms.structure.packing.packer import Packer
from transforms.structure.tree import NormalizedDocument

__all__ = ["WholeDocument"]

_new = object.__new__


class WholeDocument:
    """The packer's one chunk of a document that fits whole (see the module docstring).

    Args:
        packer: The options; its tokenizer counts.
    """

    def __init__(self, packer: Packer) -> None:
        self.packer = packer
        tokenizer = packer.tokenizer
        self._ends_of = getattr(tokenizer, "token_ends", None)
        self._token_chars: int | None = getattr(tokenizer, "max_token_chars", None) if self._ends_of else None
        self._empty_prefix: int | None = None  # tokens of an empty heading prefix, counted once
        # The most tokens a text of several tiles may hold and still be one chunk.
        min_fill = packer.min_fill
        self._several_limit = (min_fill - 1) if min_fill is not None else packer.target_tokens

    def chunk(self, normalized: NormalizedDocument) -> PackedChunk | None:
        """The one chunk ``Packer.stream(normalized)`` gives, or ``None`` when it is not certain
        to give exactly one of the whole text (then the caller runs the packer).

        Raises:
            Whatever the tokenizer raises on the text (as the packer would).
        """
        return self.chunk_or_ends(normalized)[0]

    def chunk_or_ends(self, normalized: NormalizedDocument) -> tuple[PackedChunk | None, Any]:
        """:meth:`chunk`, and the tokenizer's ``token_ends`` of the text when they were computed
        for the answer (``None`` otherwise): a document that does not fit whole hands them to
        ``Packer.stream(normalized, token_ends=...)``, which then does not encode the text again.

        Raises:
            Whatever the tokenizer raises on the text (as the packer would).
        """
        blocks = normalized.blocks
        if type(blocks) is not tuple or not blocks:
            return None, None
        for block in blocks:
            if block.kind == "heading" or block.kind == "section":
                return None, None
        text = normalized.text
        n = len(text)
        if n > limits.PART_CHARS:
            return None, None
        packer = self.packer
        # More than one tile: several blocks, or text before the first block that is not blank.
        first = blocks[0].start
        several = len(blocks) > 1 or bool(first and text[:first].strip())
        ends_of = self._ends_of
        ends = None
        if ends_of is None:
            if several:
                return None, None
            total = packer.tokenizer.count(text)
        else:
            if self._token_chars and n // self._token_chars > packer.max_tokens:
                return None, None  # (as the packer knows it without encoding)
            ends = ends_of(text)
            if self._empty_prefix is None:
                self._empty_prefix = packer.tokenizer.count("")
            total = self._empty_prefix + bisect_right(ends, n) - bisect_right(ends, 0)
        if total > packer.max_tokens or (several and total > self._several_limit):
            return None, ends
        if several:
            kinds: list[str] = []
            page_no = None
            for node, _, _ in Lines(text).iter_tiles(blocks, 0, n):
                kind = BLOCK_OF_PART.get(node.kind, node.kind) if node is not None else "paragraph"
                if kind not in kinds:
                    kinds.append(kind)
                if page_no is None and node is not None:
                    page_no = node.page_no
            kinds_seen = tuple(kinds)
        else:
            block = blocks[0]
            kinds_seen = (BLOCK_OF_PART.get(block.kind, block.kind),)
            page_no = block.page_no
        # PackedChunk(**fields) without the frozen dataclass's __init__, as the packer builds it.
        chunk = _new(PackedChunk)
        chunk.__dict__.update(
            spans=((0, n),),
            headings=(),
            prefix=(),
            prefix_dropped=0,
            page_no=page_no,
            kinds=kinds_seen,
            sections=0,
            split=None,
            context=None,
            token_count=total,
            top=1,
        )
        return chunk, ends
