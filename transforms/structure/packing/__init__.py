"""Packing a normalized document into chunks under an exact token budget.

Beam-free. :class:`Packer` walks a :class:`~transforms.structure.tree.NormalizedDocument`'s
section tree in reading order and fills chunks up to an anchor or ``target_tokens`` (see
``cuts`` below), never past ``max_tokens`` for the chunk's *embedding text* (the heading path,
then the text; see :func:`build_embedding_text`), counted with the injected tokenizer.

How a document is cut
    Every cut is at a *tile* boundary: the start of a block's first line. A chunk's text is
    ``text[start:end]`` where ``end`` is the next chunk's start, so chunks tile the document and
    nothing between blocks is lost (a chunk keeps the blank lines that follow it). Whole sections
    are merged while they fit the target (``merge_small_sections``), never across top-level
    sections unless ``allow_cross_top_level_merge``; a section that does not fit is packed block
    by block; a heading whose section has no text of its own travels with what follows it. A
    block that fits is never split. A block that does not fit even alone is split
    (``oversized_block_policy="split_with_context"``): a list between items, a quote between its
    blocks, a table between rows with its header rows repeated at the top of every part, a code
    block between lines with its opening fence (or directive) repeated at the top of every part,
    any other block first between its own paragraphs (blank lines inside, as in an rST
    directive, whose directive line is repeated like a fence), and prose, in this order, at
    sentence ends, line starts, word starts and finally the tokenizer's own token boundaries (a
    line of code: line starts, word starts, token boundaries). A table's header rows travel with
    its first body row and a code block's fence with its first line (one tile, when they fit the
    budget), and are repeated whenever they fit it with that row or line; a row or line that fits
    alone but not after them is kept whole without them. A cut inside a block gives its part at
    least ``MIN_PART_SHARE`` of what it aims at and leaves no smaller rest (the last two parts
    share a small rest), and its first part tops up a chunk holding less than that share of the
    target. Every chunk holding a part of a split block says its kind (``split``). A chunk
    holding a section whole carries the path of its first text. Repeated headers and fences are copied from the source, so
    a chunk's text is always the concatenation of its ``spans`` (source intervals); it is a
    verbatim slice exactly when it has one span.

Where a chunk closes (``cuts``)
    With ``cuts="content_defined"`` (the default) a chunk that holds at least ``min_fill`` tokens
    (half of ``target_tokens``) closes before the next *anchor*: a section, a heading, or a block
    (a paragraph, a list item, a table row, a line of split code) whose first 64 code points
    have a CRC-32 divisible by 5; while no anchor comes it is filled up to ``max_tokens``, and a
    block that does not fit closes it as with greedy cuts. Whether a block is an anchor depends
    on its own text only, so a cut depends on the text since the chunk's start and on the
    anchors, not on where earlier cuts fell: after an edit the chunk holding it ends at the
    same anchor unless the edit moved another anchor past ``min_fill`` or that one past the
    budget, and a chunk that starts elsewhere closes at the same anchor as before as soon as no
    anchor lies between the two starts' ``min_fill`` points. This is content-defined chunking
    (LBFS: Muthitacharoen, Chen and Mazieres, SOSP 2001; FastCDC: Xia et al., USENIX ATC 2016)
    with block starts as the candidate cuts. ``cuts="greedy"`` fills every chunk as far as
    ``target_tokens`` allows, so an edit moves every later cut of its top-level section.

Counting, linear in the document
    The tokenizer encodes the whole text once (``Tokenizer.token_ends``; a text longer than
    ``limits.PART_CHARS`` a part at a time, cut at such line starts, or inside a long line where the
    tokenizer says its encoding cannot change (``part_cut``), each part's ends kept apart, encoded
    when the packer reaches it and dropped once it is behind every chunk still to come out). A
    tile far too long to fit is known not to fit without encoding it (``max_token_chars``: no
    token spans more code points, so a slice holds at least its length over that many tokens),
    and chunks come out from inside a section as soon as no merge can change them (after a
    chunk that is not mergeable, or at once without merges): a 50 MB line is never encoded or
    held whole. The root's children (and a section's, when the normalizer gives them as a
    ``StreamedChildren``: a long document's top-level blocks, a section too large to hold) are
    read as a stream too, one top-level section, or ``limits.SECTION_BATCH`` subsections, at a
    time; heading paths are remembered only for the latest few (a path holds its sections).
    A block that is split reads its children as a stream, once, in order (a list's items, a
    table's rows, a quote's blocks; a code block's lines and a block's paragraphs are found in
    its text the same way), and packs them ``limits.TILE_BATCH`` tiles at a time: a huge
    list or table whose children are a ``StreamedChildren`` (re-made on each iteration, never
    all held) is never held whole either, and a batch's end changes no cut. For tiktoken's
    cl100k_base, UTF-8 bytes and BERT-style WordPiece, a slice that starts and ends at line starts followed by
    text (every tile boundary) has exactly as many tokens as the whole encoding has inside it, and
    such slices add up exactly, so a chunk's count is a difference of two running totals plus its
    heading prefix's count: no growing buffer is re-encoded. Only the parts of prose split inside
    a line are counted again, once each, as whole strings. A tokenizer without ``token_ends`` (a
    Hugging Face tokenizer other than BERT-style WordPiece) is counted exactly on every candidate chunk instead: correct,
    but quadratic in the blocks of a chunk.

Heading path
    A chunk's ``headings`` is the path of section titles at its start, outermost first. Its
    embedding text starts with the titles of that path whose heading lines are not in the chunk's
    own text, joined by `` > `` and followed by a blank line. When the path would leave no room,
    titles are dropped outermost first and the chunk's metadata says how many; the text itself is
    never dropped. Parts of a split block keep at most half the budget for the path.

Modules
    ``chunk`` (what comes out: :class:`PackedChunk`, the embedding text), ``lines`` (stable line
    starts, tiles), ``counting`` (token counts of slices from one encoding), ``limits`` (the
    memory bounds), ``merging`` (small chunks into a neighbour), ``prose`` (where prose is cut),
    and the layers of one document's run: ``filling`` (the open chunk, flushing, handing out
    final chunks), ``tiling`` (sections and tiles), ``splitting`` (oversized blocks) and
    ``packer`` (:class:`Packer`, the whole run).

A document the packer would make into one chunk of all its text, with no cut possible (no
heading, within ``max_tokens``, and with several blocks under ``min_fill`` or within the target),
is given that chunk by ``whole`` without a run: ``StructureAwareChunker`` asks it first. It is
proven equal to the run on generated and real documents (``tests/transforms/structure/packing``).
"""

from transforms.structure.packing.chunk import (
    EMBEDDING_TEXT_VERSION,
    PackedChunk,
    build_embedding_text,
    distinct_titles,
    heading_prefix,
)
from transforms.structure.packing.lines import Lines
from transforms.structure.packing.packer import CUTS, Packer

__all__ = [
    "CUTS",
    "EMBEDDING_TEXT_VERSION",
    "Lines",
    "PackedChunk",
    "Packer",
    "build_embedding_text",
    "distinct_titles",
    "heading_prefix",
]
