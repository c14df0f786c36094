"""Structure-aware chunkers: whole sections (``HeadingChunker``) and budgeted packing of blocks.

Beam-free. Both read a document through a normalizer (``transforms.structure.normalizers``) into
sections, paragraphs, code blocks, tables, lists and quotes with their source intervals, and
cut it only between blocks (see ``transforms.structure.packing`` for how). Names, parameters and
defaults follow ``HeadingChunker`` and ``StructureAwareChunker`` of the project's reference API.

Every chunk's metadata has a ``structure`` object::

    {"embedding": "heading-path/1",   # build_embedding_text's version
     "prefix": [...],                 # titles put before the text in embedding_text
     "prefix_dropped": 0,             # outer titles left out for room
     "spans": [[start, end], ...],    # code points of the normalized text; text = their concatenation
     "context": null,                 # "table_header" / "code_fence" / "headings": first span repeated
     "kinds": ["heading", "paragraph"],
     "sections": 1,                   # headings in the chunk's text (> 1: merged sections)
     "split": null}                   # kind of the oversized block this chunk is a part of

For ``markdown``, ``text`` and ``rst`` the normalized text is the content: a one-span chunk has
``start_offset``/``end_offset``. For ``html`` and ``docling`` it is a Markdown rendering, spans
index the rendering, offsets are null and the chunk's ``content_format`` is ``markdown``.
"""

from __future__ import annotations

import dataclasses
import gc
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from transforms.chunkers.base import Chunker, ChunkingError, Piece
from transforms.chunkers.structure_options import (
    check_oversized_block_policy,
    check_semantic_mode,
    checked_budgets,
    checked_overlap,
    flag,
    html_exclude_registry,
    normalizer_registry,
)
from transforms.documents import Chunk, Document
from transforms.structure.normalizers import NormalizerRegistry
from transforms.structure.packing import (
    CUTS,
    EMBEDDING_TEXT_VERSION,
    Lines,
    PackedChunk,
    Packer,
    distinct_titles,
    heading_prefix,
)
from transforms.structure.packing.whole import WholeDocument
from transforms.structure.tree import Node, NormalizationError, NormalizedDocument, StreamedChildren, map_blocks
from transforms.tokenizers import Tokenizer

__all__ = ["HeadingChunker", "StructureAwareChunker"]

#: Bumped whenever the same input and configuration would give other chunks; part of config().
#: 2: a section whose title repeats its parent's is one heading with it in heading paths.
#: 3: an HTML h1 inside navigation or a skipped element (svg, template, noscript, ...) does not
#:    hide the page's <title>, and a skipped element around table rows is skipped with them;
#:    Chinese and Japanese 。！？ end a sentence with no whitespace after them.
#: 4: content-defined cuts (``cuts``); a chunk whose start an overlap moved back offers its first
#:    block's start to the next chunk's overlap.
#: 5: HTML page chrome left out (a page's banner header, footer and sidebar, skip links,
#:    permalink marks, buttons, DocBook navigation tables), layout tables read as their cells'
#:    blocks, a pre's alternative code children made separate code blocks.
#:    A chunk holding a section whole carries the path of its first text; a split table's header
#:    travels with its first body row and is repeated whenever it fits with a row; a split code
#:    block's fence travels with its first line, and every part says ``split: code``; a block cut
#:    inside (prose, a line of code) makes no part under half of what a part aims at, and its
#:    first part may top up the chunk before it. A Markdown heading's title drops a trailing ¶.
ENGINE_VERSION = 5
_FLATTEN = {"code": "preserve_code_blocks", "table": "preserve_table_rows", "list": "preserve_list_hierarchy"}


class _CycleCollectorPaused:
    """Pause Python's cycle collector while one document is chunked (a context manager).

    Chunking a document builds many objects that all stay alive until it is done (blocks,
    chunks, their metadata) and makes no reference cycles; each full collection walks every one
    of them, so with the collector on, a document ten times longer cost about 11 to 12 times as
    much (measured on Markdown, 2 M and 20 M characters) and about 9 times with it paused.
    Nothing is left uncollected: the collector runs again afterwards. When it is already off
    (another thread chunking, or an outer pause), it is left alone. (A class rather than a
    ``contextmanager`` generator: entered four times per document, a tiny one's cost shows.)
    """

    __slots__ = ("_paused",)

    def __enter__(self) -> None:
        self._paused = gc.isenabled()
        if self._paused:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._paused:
            gc.enable()


_cycle_collector_paused = _CycleCollectorPaused


def _normalize(registry: NormalizerRegistry, document: Document) -> NormalizedDocument:
    try:
        return registry.normalize(document.content, document.content_format)
    except NormalizationError as err:
        raise ChunkingError(err.reason, err.detail) from err


def _structure_metadata(chunk: PackedChunk) -> dict[str, Any]:
    return {
        "structure": {
            "embedding": EMBEDDING_TEXT_VERSION,
            "prefix": list(chunk.prefix),
            "prefix_dropped": chunk.prefix_dropped,
            "spans": [list(span) for span in chunk.spans],
            "context": chunk.context,
            "kinds": list(chunk.kinds),
            "sections": chunk.sections,
            "split": chunk.split,
        }
    }


def _piece(source: str, verbatim_source: bool, chunk: PackedChunk) -> Piece:
    """The piece of ``chunk``, cut from ``source`` (the normalized text; ``verbatim_source``: the content)."""
    text = chunk.text(source)
    metadata = _structure_metadata(chunk)
    verbatim = verbatim_source and len(chunk.spans) == 1
    # Piece(**fields) without the frozen dataclass's __init__ (one object.__setattr__ per field,
    # about 3 microseconds a chunk): the same object, every field set.
    piece = _new(Piece)
    piece.__dict__.update(
        text=text,
        start_offset=chunk.spans[0][0] if verbatim else None,
        end_offset=chunk.spans[0][1] if verbatim else None,
        # build_embedding_text(text, metadata), without looking the prefix up again.
        embedding_text=heading_prefix(chunk.prefix) + text if chunk.prefix else text,
        headings=chunk.headings,
        page_no=chunk.page_no,
        metadata=metadata,
        content_format=None if verbatim_source else "markdown",
    )
    return piece


_new = object.__new__


class _StructureChunker(Chunker):
    """What both structure chunkers share: a normalizer registry and chunks with their source."""

    normalizers: NormalizerRegistry

    @property
    def accepted_content_formats(self) -> frozenset[str]:  # type: ignore[override]
        """The formats of this chunker's normalizer registry."""
        return self.normalizers.formats

    def normalize(self, document: Document) -> NormalizedDocument:
        """The document's normalized structure.

        Raises:
            ChunkingError: ``invalid_docling_json`` (or another normalizer's reason).
        """
        return _normalize(self.normalizers, document)

    def split(self, document: Document) -> Iterator[Piece]:
        """Normalize ``document`` once, then yield :meth:`split_normalized`'s pieces."""
        yield from self.split_normalized(self.normalize(document))

    def split_normalized(self, normalized: NormalizedDocument) -> Iterator[Piece]:
        raise NotImplementedError

    def chunk_with_source(self, document: Document, *, tokenizer_identity: str) -> tuple[list[Chunk], str]:
        """Chunks, and the normalized text their ``structure.spans`` index."""
        with _cycle_collector_paused():
            chunks, source = self.stream_with_source(document, tokenizer_identity=tokenizer_identity)
            return list(chunks), source

    def stream_with_source(self, document: Document, *, tokenizer_identity: str) -> tuple[Iterator[Chunk], str]:
        """:meth:`chunk_with_source` with the chunks as an iterator; the document is normalized here
        (``ChunkingError`` from the normalizer is raised now), packed as the chunks are taken (a
        top-level section at a time, see ``Packer.stream``)."""
        self.validate_input(document)
        with _cycle_collector_paused():
            normalized = self.normalize(document)
        return self._stream(document, normalized, tokenizer_identity), normalized.text

    def _stream(self, document: Document, normalized: NormalizedDocument, tokenizer_identity: str) -> Iterator[Chunk]:
        with _cycle_collector_paused():
            pieces = self.split_normalized(normalized)
            del normalized  # the pieces hold the block tree only as long as they need it
            yield from self.iter_chunks(document, pieces, tokenizer_identity)


class StructureAwareChunker(_StructureChunker):
    """Pack sections, paragraphs, code, tables and lists into chunks under an exact token budget.

    A chunk closes at the first anchor block once it holds half of ``target_tokens`` (``cuts``),
    and never holds more than ``max_tokens`` tokens of its ``embedding_text`` (heading path,
    blank line, text; :func:`build_embedding_text`), counted by the injected tokenizer. Whole sections are merged while a chunk is small; a code block, table row
    or list item that fits is never split; an oversized block is split with its context (table
    header rows repeated, code fences re-opened). No text is lost: chunks tile the normalized
    text. Algorithm: ``transforms.structure.packing``.

    Args:
        tokenizer: The budget tokenizer (required; tokens are counted with it).
        normalizers: Content format -> normalizer; the accepted formats are its keys. Default:
            markdown, text, rst, html and docling.
        target_tokens: A chunk that holds half this many tokens closes at the next anchor
            (``cuts="content_defined"``), or is filled up to about this many
            (``cuts="greedy"``); default 400, or ``max_tokens`` when that is smaller.
        max_tokens: Hard budget of ``embedding_text``, in tokens (default 600; the job passes its
            ``--max-tokens``).
        min_preferred_tokens: Chunks under this are merged with a neighbour when both fit the
            target (default 100, or ``target_tokens`` when smaller); the rest are counted as small.
        overlap_tokens: Tokens of whole blocks repeated from the end of the previous chunk of the
            same section (default 0).
        max_overlap_tokens: Upper bound of ``overlap_tokens`` and of any measured overlap (50).
        merge_small_sections: Merge consecutive small sections up to the target.
        allow_cross_top_level_merge: Let a chunk span two top-level sections.
        preserve_heading_hierarchy: Keep sections and heading paths (``False``: headings are
            ordinary paragraphs).
        preserve_code_blocks, preserve_table_rows, preserve_list_hierarchy: Keep those blocks
            whole and split them with context (``False``: they are prose).
        include_heading_path_in_embedding: Put the heading path before the text in
            ``embedding_text``.
        semantic_mode: ``"heuristic"`` (default: no model is ever called) or ``"refiner"``: after
            packing, the cut between two consecutive chunks of the same section (one span each,
            no heading line, no split block, touching) may move to another block start between
            them that ``semantic_refiner`` picks, when both chunks still fit ``max_tokens``. A
            refiner failure keeps the packer's cut and marks both chunks' metadata
            (``model_fallback``). With ``overlap_tokens`` > 0 chunks do not touch: no refinement.
        semantic_refiner: A :class:`~transforms.chunkers.refinement.ChatBoundaryRefiner` with
            ``semantic_mode="refiner"``, else ``None``.
        oversized_block_policy: ``"split_with_context"`` (default) or ``"reject"``: a block that
            cannot fit becomes one over-budget chunk that validation sends to the dead letter
            (``token_budget_exceeded``) with its whole text.
        cuts: ``"content_defined"`` (default): a chunk that holds half of ``target_tokens``
            closes before the next section, heading or *anchor* block (one block in five, by a
            CRC-32 of its first 64 code points), and is filled up to ``max_tokens`` while no
            anchor comes; so an edit changes the chunk that holds it and rarely more, and the
            later chunks keep their text and ``chunk_key``. ``"greedy"``: every chunk is filled
            as far as ``target_tokens`` allows (an edit moves every later cut of its top-level
            section). See ``transforms.structure.packing``.
        html_exclude_selectors: CSS selectors of HTML elements to leave out besides the
            navigation and page chrome the HTML normalizer leaves out (type, class, id and
            attribute selectors joined by descendant and child combinators:
            ``transforms.structure.normalizers.html_exclude``); default none.

    Raises:
        ValueError: A parameter is out of range or of the wrong type (the message names it and
            the value), or ``tokenizer`` is missing.
    """

    #: ``semantic_refiner`` is built from ``{llm: MODEL_NAME, ...}`` in a configuration file.
    model_parameters: ClassVar[tuple[str, ...]] = ("semantic_refiner",)
    #: Whether a document that fits whole skips the packing run (``packing.whole``; the same
    #: chunk either way: tests turn it off to compare with the full packer).
    whole_document_path: ClassVar[bool] = True

    def __init__(
        self,
        *,
        tokenizer: Tokenizer | None = None,
        normalizers: NormalizerRegistry | None = None,
        target_tokens: int | None = None,
        max_tokens: int = 600,
        min_preferred_tokens: int | None = None,
        overlap_tokens: int = 0,
        max_overlap_tokens: int = 50,
        merge_small_sections: bool = True,
        allow_cross_top_level_merge: bool = False,
        preserve_heading_hierarchy: bool = True,
        preserve_code_blocks: bool = True,
        preserve_table_rows: bool = True,
        preserve_list_hierarchy: bool = True,
        include_heading_path_in_embedding: bool = True,
        semantic_mode: str = "heuristic",
        semantic_refiner: Any = None,
        oversized_block_policy: str = "split_with_context",
        cuts: str = "content_defined",
        html_exclude_selectors: Sequence[str] | None = None,
    ) -> None:
        if tokenizer is None:
            raise ValueError("StructureAwareChunker needs a tokenizer, got None")
        max_tokens, target_tokens, min_preferred_tokens = checked_budgets(
            max_tokens, target_tokens, min_preferred_tokens
        )
        overlap_tokens, max_overlap_tokens = checked_overlap(overlap_tokens, max_overlap_tokens, target_tokens)
        check_semantic_mode(semantic_mode, semantic_refiner)
        self.semantic_refiner = semantic_refiner
        check_oversized_block_policy(oversized_block_policy)
        if cuts not in CUTS:
            raise ValueError(f"cuts must be one of {CUTS}, got {cuts!r}")
        self.cuts = cuts
        self.tokenizer = tokenizer
        self.normalizers = html_exclude_registry(normalizer_registry(normalizers), html_exclude_selectors)
        self.html_exclude_selectors = list(html_exclude_selectors or [])
        self.target_tokens = target_tokens
        self.max_tokens = max_tokens
        self.min_preferred_tokens = min_preferred_tokens
        self.overlap_tokens = overlap_tokens
        self.max_overlap_tokens = max_overlap_tokens
        self.merge_small_sections = flag("merge_small_sections", merge_small_sections)
        self.allow_cross_top_level_merge = flag("allow_cross_top_level_merge", allow_cross_top_level_merge)
        self.preserve_heading_hierarchy = flag("preserve_heading_hierarchy", preserve_heading_hierarchy)
        self.preserve_code_blocks = flag("preserve_code_blocks", preserve_code_blocks)
        self.preserve_table_rows = flag("preserve_table_rows", preserve_table_rows)
        self.preserve_list_hierarchy = flag("preserve_list_hierarchy", preserve_list_hierarchy)
        self.include_heading_path_in_embedding = flag(
            "include_heading_path_in_embedding", include_heading_path_in_embedding
        )
        self.semantic_mode = semantic_mode
        self.oversized_block_policy = oversized_block_policy
        self._packer = Packer(
            tokenizer=tokenizer,
            target_tokens=target_tokens,
            max_tokens=max_tokens,
            min_preferred_tokens=min_preferred_tokens,
            overlap_tokens=overlap_tokens,
            merge_small_sections=self.merge_small_sections,
            allow_cross_top_level_merge=self.allow_cross_top_level_merge,
            include_heading_path_in_embedding=self.include_heading_path_in_embedding,
            split_oversized=oversized_block_policy == "split_with_context",
            cuts=cuts,
        )
        self._whole = WholeDocument(self._packer)

    @classmethod
    def budget_parameter(cls, params: Mapping[str, Any]) -> str | None:
        """``max_tokens``: the job fills it with its own when a configuration leaves it out."""
        return "max_tokens"

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_tokens": self.target_tokens,
            "max_tokens": self.max_tokens,
            "min_preferred_tokens": self.min_preferred_tokens,
            "overlap_tokens": self.overlap_tokens,
            "max_overlap_tokens": self.max_overlap_tokens,
            "merge_small_sections": self.merge_small_sections,
            "allow_cross_top_level_merge": self.allow_cross_top_level_merge,
            "preserve_heading_hierarchy": self.preserve_heading_hierarchy,
            "preserve_code_blocks": self.preserve_code_blocks,
            "preserve_table_rows": self.preserve_table_rows,
            "preserve_list_hierarchy": self.preserve_list_hierarchy,
            "include_heading_path_in_embedding": self.include_heading_path_in_embedding,
            "semantic_mode": self.semantic_mode,
            "oversized_block_policy": self.oversized_block_policy,
            "cuts": self.cuts,
            # Only when set, so configurations without it keep their config_hash.
            **({"html_exclude_selectors": self.html_exclude_selectors} if self.html_exclude_selectors else {}),
            # Only with a refiner, so heuristic configurations keep their config_hash.
            **({"semantic_refiner": self.semantic_refiner.config()} if self.semantic_refiner else {}),
        }

    def config(self) -> dict[str, Any]:
        """:meth:`to_dict`, the tokenizer identity, the accepted formats and the engine version."""
        return {**super().config(), "formats": sorted(self.normalizers.formats), "engine": ENGINE_VERSION}

    def split_normalized(self, normalized: NormalizedDocument) -> Iterator[Piece]:
        """Pack an already normalized document (any format) into pieces, in reading order."""
        source, verbatim = normalized.text, normalized.verbatim
        flattened = self._flatten(normalized)
        if self.semantic_refiner is None:
            # A document that fits whole is its one chunk, without a packing run (equal to it);
            # one that does not, whose text that answer encoded, is not encoded again.
            whole, ends = self._whole.chunk_or_ends(flattened) if self.whole_document_path else (None, None)
            if whole is not None:
                yield _piece(source, verbatim, whole)
                return
            # Packed a top-level section at a time: the document's chunks are never all held.
            chunks = self._packer.stream(flattened, token_ends=ends)
            del ends
            del normalized, flattened
            for chunk in chunks:
                yield _piece(source, verbatim, chunk)
            return
        packed, fallbacks = self._refine(flattened, self._packer.pack(flattened))
        # The block tree is not needed for the pieces: let it go before their text is built.
        del normalized, flattened
        packed.reverse()
        i = 0
        while packed:
            piece = _piece(source, verbatim, packed.pop())
            if i in fallbacks:
                piece = dataclasses.replace(piece, metadata={**piece.metadata, "model_fallback": fallbacks[i]})
            i += 1
            yield piece

    def _refine(
        self, normalized: NormalizedDocument, chunks: list[PackedChunk]
    ) -> tuple[list[PackedChunk], dict[int, str]]:
        """Let the refiner move cuts between consecutive plain chunks of one section (see ``semantic_mode``).

        Candidates are the packer's own cut points: line starts of blocks directly inside a
        section (never inside a list, table or code block), stable for the tokenizer.
        """
        text = normalized.text
        lines = Lines(text)
        blocks = _section_blocks(normalized.root, lines)
        positions = [p for p, _ in blocks]
        cut_points = sorted({p for p in positions if lines.is_stable(p)})
        out, fallbacks = list(chunks), {}

        def plain(c: PackedChunk) -> bool:
            return len(c.spans) == 1 and c.sections == 0 and c.split is None and c.context is None

        for i in range(len(out) - 1):
            a, b = out[i], out[i + 1]
            if not (
                plain(a)
                and plain(b)
                and a.spans[0][1] == b.spans[0][0]
                and a.headings == b.headings
                and a.prefix == b.prefix
            ):
                continue
            lo, hi = a.spans[0][0], b.spans[0][1]
            allowed = cut_points[bisect_right(cut_points, lo) : bisect_left(cut_points, hi)]
            if len(allowed) < 2:  # only the packer's own cut: nothing to choose
                continue
            result = self.semantic_refiner.refine(text=text[lo:hi], allowed=[p - lo for p in allowed])
            if result.fallback:
                fallbacks[i] = fallbacks[i + 1] = result.fallback
                continue
            if not result.boundaries or lo + result.boundaries[0] == a.spans[0][1]:
                continue
            cut = lo + result.boundaries[0]
            prefix = heading_prefix(a.prefix) if a.prefix else ""
            left, right = (self.tokenizer.count(prefix + text[lo:cut]), self.tokenizer.count(prefix + text[cut:hi]))
            if max(left, right) > self.max_tokens:
                continue
            out[i], out[i + 1] = _moved_cut(a, b, cut, (left, right), blocks, positions)
        return out, fallbacks

    def _flatten(self, normalized: NormalizedDocument) -> NormalizedDocument:
        """Turn the block kinds this configuration does not preserve into paragraphs."""
        plain = {kind for kind, flag in _FLATTEN.items() if not getattr(self, flag)}
        if not self.preserve_heading_hierarchy:
            plain.add("heading")
        if not plain:
            return normalized

        def flat(node: Node) -> Node:
            if node.kind in plain:
                return Node("paragraph", node.start, node.end, page_no=node.page_no)
            children = node.children
            # Streamed children stay a stream, flattened as they are read.
            children = (
                StreamedChildren(map, flat, children)
                if type(children) is StreamedChildren
                else (tuple(flat(c) for c in children))
            )
            return Node(
                node.kind,
                node.start,
                node.end,
                children,
                level=node.level,
                title=node.title,
                language=node.language,
                fence=node.fence,
                header_rows=node.header_rows,
                page_no=node.page_no,
            )

        # Streamed top-level blocks stay a stream too.
        return map_blocks(normalized, flat)


def _section_blocks(root: Node, lines: Lines) -> list[tuple[int, Node]]:
    """The blocks directly inside the root or a section (never inside a list, table or code
    block), each with the start of its first line (code points), in order of that start."""
    blocks: list[tuple[int, Node]] = []

    def walk(node: Node) -> None:
        for child in node.children:
            if child.kind == "section":
                walk(child)
            else:
                blocks.append((lines.line_start(child.start), child))

    walk(root)
    blocks.sort(key=lambda b: b[0])
    return blocks


def _moved_cut(
    a: PackedChunk,
    b: PackedChunk,
    cut: int,
    counts: tuple[int, int],
    blocks: list[tuple[int, Node]],
    positions: list[int],
) -> tuple[PackedChunk, PackedChunk]:
    """The touching chunks ``a`` and ``b`` with the cut between them moved to ``cut``: their
    spans, ``counts`` (tokens of each embedding text), kinds and ``b``'s first page follow the
    blocks (``_section_blocks``, ``positions`` their starts) on each side."""
    lo, hi = a.spans[0][0], b.spans[0][1]

    def kinds(start: int, end: int, old: tuple[str, ...]) -> tuple[str, ...]:
        inside = blocks[bisect_left(positions, start) : bisect_left(positions, end)]
        return tuple(dict.fromkeys(n.kind for _, n in inside)) or old

    pages = (blocks[j][1].page_no for j in range(bisect_left(positions, cut), len(blocks)))
    page = next((p for p in pages if p is not None), b.page_no)
    left = dataclasses.replace(a, spans=((lo, cut),), token_count=counts[0], kinds=kinds(lo, cut, a.kinds))
    right = dataclasses.replace(
        b, spans=((cut, hi),), token_count=counts[1], page_no=page, kinds=kinds(cut, hi, b.kinds)
    )
    return left, right


class HeadingChunker(_StructureChunker):
    """Split at headings into whole sections, with no size cap.

    Each chunk is one section's own text (its heading line to the next heading), with the
    heading lines of its ancestors before it when they are not already there; ``headings`` is the
    path of titles, outermost first. ATX and Setext headings count, headings inside code do not.
    A heading whose section has no text of its own travels with its first subsection, so no chunk
    is a bare title. Text before the first heading is a chunk with an empty path. Sections are
    never cut, so a long section is over any token budget: validation rejects what exceeds the
    job's ``max_tokens``.

    Args:
        normalizers: Content format -> normalizer (default: every built-in one).
        html_exclude_selectors: CSS selectors of HTML elements to leave out, as for
            :class:`StructureAwareChunker`.

    Raises:
        ValueError: A selector is refused (one line naming it).
    """

    def __init__(
        self, *, normalizers: NormalizerRegistry | None = None, html_exclude_selectors: Sequence[str] | None = None
    ) -> None:
        self.normalizers = html_exclude_registry(normalizer_registry(normalizers), html_exclude_selectors)
        self.html_exclude_selectors = list(html_exclude_selectors or [])

    def to_dict(self) -> dict[str, Any]:
        return {"html_exclude_selectors": self.html_exclude_selectors} if self.html_exclude_selectors else {}

    def config(self) -> dict[str, Any]:
        return {**self.to_dict(), "formats": sorted(self.normalizers.formats), "engine": ENGINE_VERSION}

    def split_normalized(self, normalized: NormalizedDocument) -> Iterator[Piece]:
        """One piece per section (and one for text before the first heading)."""
        for chunk in _heading_chunks(normalized):
            yield _piece(normalized.text, normalized.verbatim, chunk)


def _heading_chunks(normalized: NormalizedDocument) -> Iterator[PackedChunk]:
    """Whole sections in reading order, each with its ancestors' heading lines as context."""
    text = normalized.text
    lines = Lines(text)
    # (path of (section, heading span), start, end, bare): a section's own text, from its heading
    # to its first subsection; bare when that is only the heading.
    parts: list[tuple[tuple[tuple[Node, tuple[int, int]], ...], int, int, bool]] = []

    def visit(children: Iterable[Node], lo: int, hi: int, path: tuple[tuple[Node, tuple[int, int]], ...]) -> None:
        for node, start, end in lines.tiles(children, lo, hi):
            if node is None or node.kind != "section":
                if parts and not parts[-1][0] and parts[-1][2] == start:
                    parts[-1] = (path, parts[-1][1], end, False)  # text before the first heading
                else:
                    parts.append((path, start, end, False))
                continue
            inner_tiles = lines.tiles(node.children, start, end)
            heading_end = inner_tiles[1][1] if len(inner_tiles) > 1 else end
            own_end = next((s for n, s, _ in inner_tiles if n is not None and n.kind == "section"), end)
            # The heading's own line, without blank lines its tile may start with.
            inner = path + ((node, (max(start, lines.line_start(node.start)), heading_end)),)
            bare = own_end < end and not text[heading_end:own_end].strip()
            parts.append((inner, start, own_end, bare))
            if own_end < end:
                visit(tuple(c for c in node.children if c.kind == "section"), own_end, end, inner)

    visit(normalized.root.children, 0, len(text), ())
    carry: int | None = None
    for path, start, end, bare in parts:
        if bare:
            carry = start if carry is None else carry
            continue
        if carry is not None:
            start, carry = carry, None
        context = tuple(h for _, h in path if h[1] <= start)
        yield PackedChunk(
            spans=context + ((start, end),),
            headings=distinct_titles([n for n, _ in path]),  # (as the packer names them)
            prefix=(),
            prefix_dropped=0,
            page_no=next((n.page_no for n, _ in reversed(path) if n.page_no is not None), None),
            kinds=("section",),
            sections=sum(1 for n, h in path if h[0] >= start) or 0,
            split=None,
            context="headings" if context else None,
            token_count=0,
        )
