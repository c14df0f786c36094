"""Merging chunks under ``min_preferred_tokens`` into a neighbour that has room for them.

Positions are code points of the normalized text; counts are tokens of the budget tokenizer.
"""

from __future__ import annotations

from transforms.structure.packing.chunk import PackedChunk, heading_prefix
from transforms.structure.packing.counting import TokenCounter
from transforms.structure.packing.lines import Lines

__all__ = ["is_mergeable", "merge_small"]


def is_mergeable(chunk: PackedChunk, lines: Lines) -> bool:
    """Whether a merge may take ``chunk``: one span, not a part of split prose, cut at stable
    positions at both ends (so the merged count is exact from the document's encoding)."""
    return (
        len(chunk.spans) == 1
        and chunk.split != "prose"
        and (lines.is_stable(chunk.spans[0][0]) and lines.is_stable(chunk.spans[0][1]))
    )


def _merged(first: PackedChunk, second: PackedChunk, total: int) -> PackedChunk:
    """``first`` and the ``second`` that follows it as one chunk of ``total`` tokens, with the
    first one's heading path and prefix."""
    kinds = first.kinds + tuple(k for k in second.kinds if k not in first.kinds)
    return PackedChunk(
        spans=((first.spans[0][0], second.spans[0][1]),),
        headings=first.headings,
        prefix=first.prefix,
        prefix_dropped=first.prefix_dropped,
        page_no=first.page_no if first.page_no is not None else second.page_no,
        kinds=kinds,
        sections=first.sections + second.sections,
        split=None,
        context=None,
        token_count=total,
        top=first.top,
    )


def merge_small(
    chunks: list[PackedChunk],
    *,
    text: str,
    counter: TokenCounter,
    lines: Lines,
    min_preferred_tokens: int,
    target_tokens: int,
    allow_cross_top_level_merge: bool,
) -> None:
    """Merge each chunk of ``chunks`` (in place) under ``min_preferred_tokens`` into the next,
    else the previous one.

    Only mergeable chunks (:func:`is_mergeable`) of one top-level section (unless
    ``allow_cross_top_level_merge``) that stay within ``target_tokens`` together; the merged
    chunk keeps the first one's heading path and prefix. Counts stay exact: both are cut at
    stable positions. A merged chunk is looked at again, so it may take a further neighbour.
    """
    i = 0
    while i < len(chunks):
        chunk = chunks[i]
        if chunk.token_count >= min_preferred_tokens or not is_mergeable(chunk, lines):
            i += 1
            continue
        for j in (i + 1, i - 1):
            if not 0 <= j < len(chunks) or not is_mergeable(chunks[j], lines):
                continue
            first, second = (chunk, chunks[j]) if j > i else (chunks[j], chunk)
            if first.top != second.top and not allow_cross_top_level_merge:
                continue
            start, end = first.spans[0][0], second.spans[0][1]
            total = (
                counter.prefix(first.prefix) + counter.span(start, end)
                if counter.additive
                else (counter.exact(heading_prefix(first.prefix) + text[start:end]))
            )
            if total > target_tokens:
                continue
            k = min(i, j)
            chunks[k : k + 2] = [_merged(first, second, total)]
            i = k
            break
        else:
            i += 1
