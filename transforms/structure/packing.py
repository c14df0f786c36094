"""Packing a normalized document into chunks under an exact token budget.

Beam-free. :class:`Packer` walks a :class:`~transforms.structure.tree.NormalizedDocument`'s
section tree in reading order and fills chunks greedily up to ``target_tokens``, never past
``max_tokens`` for the chunk's *embedding text* (the heading path, then the text; see
:func:`build_embedding_text`), counted with the injected tokenizer.

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
    directive, whose directive line is repeated like a fence), and prose, in this order, at sentence ends, line starts, word starts and finally
    the tokenizer's own token boundaries. Repeated headers and fences are copied from the source, so
    a chunk's text is always the concatenation of its ``spans`` (source intervals); it is a
    verbatim slice exactly when it has one span.

Counting, linear in the document
    The tokenizer encodes the whole text once (``Tokenizer.token_ends``; a text longer than
    ``_PART_CHARS`` a part at a time, cut at such line starts, or inside a long line where the
    tokenizer says its encoding cannot change (``part_cut``), each part's ends kept apart, encoded
    when the packer reaches it and dropped once it is behind every chunk still to come out). A
    tile far too long to fit is known not to fit without encoding it (``max_token_chars``: no
    token spans more code points, so a slice holds at least its length over that many tokens),
    and chunks come out from inside a section as soon as no merge can change them (after a
    chunk that is not mergeable, or at once without merges): a 50 MB line is never encoded or
    held whole. The root's children (and a section's, when the normalizer gives them as a
    ``StreamedChildren``: a long document's top-level blocks, a section too large to hold) are
    read as a stream too, one top-level section, or :data:`_SECTION_BATCH` subsections, at a
    time; heading paths are remembered only for the latest few (a path holds its sections).
    A block that is split reads its children as a stream, once, in order (a list's items, a
    table's rows, a quote's blocks; a code block's lines and a block's paragraphs are found in
    its text the same way), and packs them ``_TILE_BATCH`` tiles at a time: a huge
    list or table whose children are a ``StreamedChildren`` (re-made on each iteration, never
    all held) is never held whole either, and a batch's end changes no cut. For tiktoken's
    cl100k_base and for UTF-8 bytes, a slice that starts and ends at line starts followed by
    text (every tile boundary) has exactly as many tokens as the whole encoding has inside it, and
    such slices add up exactly, so a chunk's count is a difference of two running totals plus its
    heading prefix's count: no growing buffer is re-encoded. Only the parts of prose split inside
    a line are counted again, once each, as whole strings. A tokenizer without ``token_ends`` (a
    local Hugging Face tokenizer) is counted exactly on every candidate chunk instead: correct,
    but quadratic in the blocks of a chunk.

Heading path
    A chunk's ``headings`` is the path of section titles at its start, outermost first. Its
    embedding text starts with the titles of that path whose heading lines are not in the chunk's
    own text, joined by `` > `` and followed by a blank line. When the path would leave no room,
    titles are dropped outermost first and the chunk's metadata says how many; the text itself is
    never dropped. Parts of a split block keep at most half the budget for the path.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any

from transforms.structure.tree import LINE_BREAK, LineStarts, Node, NormalizedDocument, StreamedChildren
from transforms.tokenizers import Tokenizer

__all__ = [
    "EMBEDDING_TEXT_VERSION",
    "Lines",
    "PackedChunk",
    "Packer",
    "build_embedding_text",
    "distinct_titles",
    "heading_prefix",
]

#: Marks metadata whose ``structure.prefix`` :func:`build_embedding_text` puts before the text.
EMBEDDING_TEXT_VERSION = "heading-path/1"
_PATH_SEPARATOR = " > "
# One or more blank lines after a line break: where a block's own paragraphs meet.
_BLANK_LINES = re.compile(r"(?:\r\n?|\n)(?:[^\S\r\n]*(?:\r\n?|\n))+")
# Optional spaces, then a non-space character, on the same line: what makes a line start stable.
# Python's \s is str.isspace(), a superset of the tokenizer pattern's \s, so a line that starts
# with e.g. U+001C is not taken as stable (the safe side).
_CONTENT_AHEAD = re.compile(r"[^\S\r\n]*\S")
# A sentence ends at . ! ? or an ellipsis, with closing quotes or brackets, before whitespace; or
# at a full-width 。！？ or a half-width ｡ with closing quotes or brackets (」』）】), where no
# whitespace follows in Chinese and Japanese text.
_SENTENCE_END = re.compile(
    r"[.!?\u2026][\"'\u201d\u2019)\]]*\s+|[\u3002\uff01\uff1f\uff61][\"'\u201d\u2019)\]\u300d\u300f\uff09\u3011]*\s*"
)
_WORD_START = re.compile(r"\s+")
# Tokens by which a count from the whole-document encoding may differ from a whole recount of a
# slice cut inside a line (measured: -3 to +2); estimates further off than this are trusted.
_ESTIMATE_SLACK = 16
#: Texts of up to this many tokens keep their token ends as a list (see ``_Counter``).
_LIST_TOKENS = 1 << 18
#: Texts longer than this many code points are encoded a part of about this size at a time (see ``_Counter``).
_PART_CHARS = 1 << 22
#: Line starts whose stability ``Lines`` remembers at most (then it forgets them all).
_STABLE_MEMO = 1 << 16
_NON_SPACE = re.compile(r"\S")
#: Prefix counts of heading paths, and counts of repeated headers, remembered at most (then
#: all are forgotten): what a document of many sections holds of them.
_TITLES_MEMO = 1 << 12
#: Tiles of a section given as a stream packed at a time (each may be a subsection of up to
#: ``tree.HELD_SECTION_NODES`` nodes).
_SECTION_BATCH = 8
#: Heading paths whose titles are remembered at most (a path holds its sections, and so their
#: blocks: few are kept).
_PATHS_MEMO = 64
#: Tiles of a split block packed at a time (``Packer._tiles``): what is held of its children.
_TILE_BATCH = 4096
_CONTAINERS = frozenset({"list", "list_item", "quote"})
_KIND = {"table_row": "table", "list_item": "list"}


def _own_heading(node: Node | None, path: tuple[Node, ...]) -> bool:
    """Whether ``node`` is the heading line of the innermost section of ``path``.

    A heading inside a block quote or a list item is that block's text, not a section's title.
    """
    if node is None or node.kind != "heading" or not path:
        return False
    children = path[-1].children
    if type(children) is StreamedChildren:
        # (A section too large to hold, its children made again on each pass: its heading is
        # the one block that starts where it starts, the others all lie after the heading.)
        return node.start == path[-1].start
    return children[0] is node


def distinct_titles(path: Sequence[Node]) -> tuple[str, ...]:
    """The titles of ``path``'s sections, outermost first, leaving out empty titles and a title
    that repeats the one kept before it (a section repeating its parent's title is one heading)."""
    titles: list[str] = []
    for node in path:
        if node.title and (not titles or node.title != titles[-1]):
            titles.append(node.title)
    return tuple(titles)


def _headings_in(section: Node) -> int:
    """Headings in a section: its own and its subsections' (only sections are visited)."""
    return 1 + sum(_headings_in(child) for child in section.children if child.kind == "section")


def heading_prefix(titles: tuple[str, ...] | list[str]) -> str:
    """The heading path as it is put before a chunk's text: ``"A > B\\n\\n"``, or ``""``."""
    titles = [t for t in titles if t]
    return _PATH_SEPARATOR.join(titles) + "\n\n" if titles else ""


def build_embedding_text(text: str, metadata: Mapping[str, Any]) -> str:
    """Return exactly what is embedded for a chunk: its heading prefix, then its text.

    The one serialization of :data:`EMBEDDING_TEXT_VERSION`: when ``metadata["structure"]`` has
    ``"embedding": "heading-path/1"``, the result is ``heading_prefix(structure["prefix"]) +
    text``; any other metadata (another chunker's, or none) gives ``text`` unchanged.

    Args:
        text: The chunk's text.
        metadata: The chunk's metadata.
    """
    # (type(x) is dict first: an isinstance check against the Mapping ABC is slow.)
    structure = metadata.get("structure") if type(metadata) is dict or isinstance(metadata, Mapping) else None
    if not (type(structure) is dict or isinstance(structure, Mapping)) or (
        structure.get("embedding") != EMBEDDING_TEXT_VERSION
    ):
        return text
    return heading_prefix(tuple(structure.get("prefix") or ())) + text


@dataclass(frozen=True)
class PackedChunk:
    """One chunk as the packer made it.

    Attributes:
        spans: Intervals ``[start, end)`` of the normalized text, in order; the chunk's text is
            their concatenation. One span: a verbatim slice. Two: a repeated table header or code
            fence (or, from ``HeadingChunker``, ancestor headings) before a slice.
        headings: Section titles at the chunk's start, outermost first.
        prefix: The titles put before the text in the embedding text.
        prefix_dropped: How many outer titles of the path were left out of ``prefix`` for room.
        page_no: The first page of its blocks, where the source has pages.
        kinds: Block kinds in the chunk, in order of first appearance.
        sections: Headings whose line is in the chunk's text (more than one: merged sections).
        split: The kind of oversized block this chunk is a part of, or ``None``.
        context: ``"table_header"``, ``"code_fence"`` or ``"directive"`` when the first span is a
            repeated table header, code fence or rST directive line, ``"headings"`` for ancestor
            headings (``HeadingChunker``), else ``None``.
        token_count: Tokens of the embedding text, as the packer counted them.
        top: Index of the top-level section the chunk starts in (internal to packing).
    """

    spans: tuple[tuple[int, int], ...]
    headings: tuple[str, ...]
    prefix: tuple[str, ...]
    prefix_dropped: int
    page_no: int | None
    kinds: tuple[str, ...]
    sections: int
    split: str | None
    context: str | None
    token_count: int
    top: int = 0

    def text(self, source: str) -> str:
        """The chunk's text: its spans of ``source`` concatenated."""
        if len(self.spans) == 1:
            start, end = self.spans[0]
            return source[start:end]
        return "".join([source[s:e] for s, e in self.spans])


class Lines(LineStarts):
    """Line starts of a text, which of them are safe cuts, and tiles of blocks between them.

    A *stable* position is 0, the end, or a line start whose line has a character that Python
    calls non-space (a superset of the tokenizer pattern's ``\\s``, so this errs on the safe
    side). Chunks are cut only there, except inside prose that has to be split. Stability is
    decided on demand and remembered (the latest ``_STABLE_MEMO`` answers: every row of a huge
    table is asked about once): most line starts are never asked about.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._end = len(text)
        self._stable: dict[int, bool] = {0: True, self._end: True}

    def is_stable(self, position: int) -> bool:
        """Whether ``position`` is a safe cut (see the class docstring)."""
        known = self._stable.get(position)
        if known is None:
            text = self.text
            known = (
                0 < position < self._end
                and text[position - 1] in "\r\n"
                and not (text[position - 1] == "\r" and text[position] == "\n")
                and _CONTENT_AHEAD.match(text, position) is not None
            )
            if len(self._stable) >= _STABLE_MEMO:
                # Every row of a huge table is asked about once: remember only the latest ones.
                self._stable = {0: True, self._end: True}
            self._stable[position] = known
        return known

    def stable_after(self, start: int, end: int) -> Iterator[int]:
        """Stable positions strictly inside ``(start, end)``, in order, found as they are taken
        (a long code block's lines are never all listed)."""
        is_stable = self.is_stable
        for m in LINE_BREAK.finditer(self.text, start, end):
            p = m.end()
            if p < end and is_stable(p):
                yield p

    def tiles(self, children: Iterable[Node], lo: int, hi: int) -> list[tuple[Node | None, int, int]]:
        """:meth:`iter_tiles` as a list (for children already held: a section's, the root's)."""
        return list(self.iter_tiles(children, lo, hi))

    def iter_tiles(self, children: Iterable[Node], lo: int, hi: int) -> Iterator[tuple[Node | None, int, int]]:
        """Cut ``[lo, hi)`` at the line starts of ``children``: ``(node, start, end)`` in order.

        The first tile starts at ``lo``; a child whose line starts at or before the previous cut
        joins the tile before it; text before the first child's line is a ``None`` tile unless it
        is whitespace (then the first child's tile starts at ``lo``).

        ``children`` is read once, in order, as a stream: a tile's end is the next tile's start,
        so one tile is held back and nothing else (a block's children may be a
        :class:`~transforms.structure.tree.StreamedChildren` too long to hold).
        """
        text = self.text
        node: Node | None = None
        at_last = -1  # where the held-back tile starts (-1: none yet)
        for child in children:
            at = child.start
            if at and text[at - 1] != "\n":
                at = self.line_start(at)
            if at_last < 0 and (at <= lo or not text[lo:at].strip()):
                node, at_last = child, lo
                continue
            if not self.is_stable(at):
                # Its first line holds only spaces Python sees as such (e.g. U+00A0) that the
                # parser read as text: cut at its first line with other text instead.
                at = next(self.stable_after(at, child.end), hi)
            if at <= (at_last if at_last >= 0 else lo) or at >= hi:
                continue
            if at_last < 0:
                node, at_last = None, lo
            yield node, at_last, at
            node, at_last = child, at
        if at_last < 0:
            yield None, lo, hi
        else:
            yield node, at_last, hi


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


class _Counter:
    """Token counts of slices of one text, from a single encoding when the tokenizer allows."""

    def __init__(self, text: str, tokenizer: Tokenizer, lines: Lines) -> None:
        self.text = text
        self.tokenizer = tokenizer
        self.lines = lines
        ends_of = getattr(tokenizer, "token_ends", None)
        self.additive = ends_of is not None
        self._prefix_cache: dict[tuple[str, ...], int] = {}
        self._context_cache: dict[tuple[int, int], int] = {}
        # The most code points that start in one token, if the tokenizer says (see ``exceeds``).
        self._token_chars = getattr(tokenizer, "max_token_chars", None) if self.additive else None
        self.encoded_again = 0  # parts encoded a second time after they were dropped (tests)
        if self.additive:
            # A long text is encoded a part at a time, cut at stable line starts (pre-token
            # boundaries, so each part's token ends, moved by its start, are the whole encoding's
            # own): the ends are never joined into one array, which would hold them twice. Parts
            # are encoded as the packer reaches them and dropped behind it (``forget_before``).
            self._ends_of = ends_of
            # (A static method: a generator holding ``self`` would be a reference cycle.)
            self._cuts = self._part_ends(text, lines, getattr(tokenizer, "part_cut", None))
            self._part_starts: list[int] = []
            self._part_tokens: list[int] = []  # tokens before each part
            self._parts: list = []
            self._forgotten = 0  # parts before this one are dropped
            self._reached, self._tokens = 0, 0  # where the encoded parts end; their tokens
            self._next_part()
            self._single = self._parts[0] if self._reached == len(text) and len(self._parts) == 1 else None

    def _next_part(self) -> None:
        """Encode the next part (a text's first part may be all of it)."""
        start = self._reached
        end = next(self._cuts)
        ends = self._encode(start, end)
        self._part_starts.append(start)
        self._part_tokens.append(self._tokens)
        self._parts.append(ends)
        self._reached, self._tokens = end, self._tokens + len(ends)

    def _encode(self, start: int, end: int):
        """The token ends of ``text[start:end]`` (a part), moved by ``start``."""
        text = self.text
        ends = self._ends_of(text[start:end] if (start, end) != (0, len(text)) else text)
        if start:
            ends += start
        # A list bisects fastest, but holds a Python int per token (about 36 bytes); a long
        # text's ends stay in their array (4 bytes a token), bisected through a memoryview.
        return ends.tolist() if len(ends) <= _LIST_TOKENS else memoryview(ends)

    def forget_before(self, position: int) -> None:
        """Drop the token ends of parts that end at or before ``position``: no count asked from
        now on starts before it."""
        if self.additive and self._single is None:
            parts, starts = self._parts, self._part_starts
            k = self._forgotten
            while k < len(parts) - 1 and starts[k + 1] <= position:
                parts[k] = None
                k += 1
            self._forgotten = k

    @staticmethod
    def _part_ends(text: str, lines: Lines, part_cut) -> Iterator[int]:
        """Where the parts of ``text`` end, then the end of the text: after every
        :data:`_PART_CHARS` code points, the first stable line start within as many more, else
        the tokenizer's first cut with no change to the encoding (``part_cut``: in a long line),
        else the first stable line start further on."""
        position, n = 0, len(text)
        while position + _PART_CHARS < n:
            lo = position + _PART_CHARS
            hi = min(lo + _PART_CHARS, n)
            cut = next((m.end() for m in LINE_BREAK.finditer(text, lo, hi) if lines.is_stable(m.end())), None)
            if cut is None and part_cut is not None:
                cut = part_cut(text, lo)
            if cut is None or cut >= n:
                cut = next((m.end() for m in LINE_BREAK.finditer(text, lo) if lines.is_stable(m.end())), n)
            if cut >= n:
                break
            yield cut
            position = cut
        yield n

    def tokens_before(self, position: int) -> int:
        """Tokens of the whole encoding that end at or before ``position`` (additive tokenizers)."""
        if self._single is not None:
            return bisect_right(self._single, position)
        while position >= self._reached and self._reached < len(self.text):
            self._next_part()
        k = bisect_right(self._part_starts, position) - 1
        part = self._parts[k]
        if part is None:
            # Dropped too early (no caller asks behind the packer): encoded again, still exact.
            self.encoded_again += 1
            part = self._parts[k] = self._encode(self._part_starts[k], self._part_starts[k + 1])
            self._forgotten = min(self._forgotten, k)
        return self._part_tokens[k] + bisect_right(part, position)

    def span(self, start: int, end: int) -> int:
        """Tokens of ``text[start:end]``: exact when both ends are stable (or always, if not additive)."""
        if self.additive:
            return self.tokens_before(end) - self.tokens_before(start)
        return self.tokenizer.count(self.text[start:end])

    def at_least(self, start: int, end: int) -> int:
        """A lower bound on ``span(start, end)`` that needs no encoding (0 if the tokenizer gives
        no ``max_token_chars``): consecutive token ends are at most ``max_token_chars`` code
        points apart, and the last is the text's end, so any ``(start, end]`` holds at least
        ``(end - start) // max_token_chars`` of them."""
        return (end - start) // self._token_chars if self._token_chars else 0

    def exceeds(self, start: int, end: int, limit: int) -> bool:
        """Whether ``span(start, end) > limit``, without encoding up to ``end`` when
        :meth:`at_least` already says so (a huge tile's fit test)."""
        return self.at_least(start, end) > limit or self.span(start, end) > limit

    def context(self, span: tuple[int, int]) -> int:
        """``span(*span)`` for a repeated header or fence, remembered: asked again for every part
        while the packer is far past it (its token ends may be dropped by then)."""
        cache = self._context_cache
        count = cache.get(span)
        if count is None:
            if len(cache) >= _TITLES_MEMO:
                cache.clear()  # (a document of many split tables: only the latest are asked again)
            count = cache[span] = self.span(*span)
        return count

    def exact(self, text: str) -> int:
        return self.tokenizer.count(text)

    def prefix(self, titles: tuple[str, ...]) -> int:
        """Tokens of ``heading_prefix(titles)``, remembered (the latest ``_TITLES_MEMO`` paths)."""
        cache = self._prefix_cache
        count = cache.get(titles)
        if count is None:
            if len(cache) >= _TITLES_MEMO:
                cache.clear()
            count = cache[titles] = self.tokenizer.count(heading_prefix(titles)) if titles else 0
        return count


#: A repeated header or fence a chunk opens with, and its kind: ``(span, kind)`` or ``(None, None)``.
_Context = tuple[tuple[int, int] | None, str | None]


class _Candidates:
    """Ascending cut positions inside ``(start, end)``, taken from an iterator only as needed."""

    __slots__ = ("_done", "_end", "_items", "_positions", "_start")

    def __init__(self, positions, start: int, end: int) -> None:
        self._positions = positions
        self._start, self._end = start, end
        self._items: list[int] = []
        self._done = False

    def through(self, position: int, reach: int) -> list[int]:
        """A sorted list holding every candidate in ``(position, reach)`` (and maybe others).

        Calls must not go back: candidates at or before ``position`` may be forgotten.
        """
        items = self._items
        stale = bisect_right(items, position)
        if stale > 1024 and stale > len(items) // 2:
            del items[:stale]
        while not self._done and (not items or items[-1] < reach):
            p = next(self._positions, None)
            if p is None:
                self._done = True
            elif self._start < p < self._end:
                items.append(p)
        return items


@dataclass
class _Open:
    """The chunk being filled: ``context`` span (if any), then ``text[start:end]``."""

    start: int
    end: int
    path: tuple[Node, ...]
    prefix: tuple[str, ...]
    prefix_dropped: int
    top: int
    has_body: bool
    kinds: list[str]
    sections: int
    page_no: int | None
    context: tuple[int, int] | None = None
    context_kind: str | None = None
    split: str | None = None
    exact_count: int | None = None  # set for prose parts, counted whole


class Packer:
    """Packs normalized documents into chunks; see the module docstring for the algorithm.

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
    """

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
    ) -> None:
        self.tokenizer = tokenizer
        self.target_tokens = target_tokens
        self.max_tokens = max_tokens
        self.min_preferred_tokens = min_preferred_tokens
        self.overlap_tokens = overlap_tokens
        self.merge_small_sections = merge_small_sections
        self.allow_cross_top_level_merge = allow_cross_top_level_merge
        self.include_heading_path = include_heading_path_in_embedding
        self.split_oversized = split_oversized

    # -- entry point -----------------------------------------------------------------------

    def pack(self, normalized: NormalizedDocument) -> list[PackedChunk]:
        """Return the chunks of ``normalized`` in reading order (empty when it has no blocks)."""
        return list(self.stream(normalized))

    def stream(self, normalized: NormalizedDocument) -> Iterator[PackedChunk]:
        """:meth:`pack`'s chunks as an iterator: those of a top-level section come out once the
        packer is past the next one (a chunk changes only within its own top-level section), so
        a long document's chunks are never all held at once."""
        return _Run(self, normalized).stream()


_new = object.__new__


class _Run:
    """One document's packing: the state of :class:`Packer` for a single call."""

    def __init__(self, packer: Packer, normalized: NormalizedDocument) -> None:
        self.p = packer
        self.text = normalized.text
        self.normalized = normalized
        self.lines = Lines(normalized.text)
        self.counter = _Counter(normalized.text, packer.tokenizer, self.lines)
        self.cur: _Open | None = None
        self.out: list[PackedChunk] = []  # flushed chunks not yet streamed out
        # How many chunks at the start of ``out`` no later step changes (see ``_flush``).
        self.final = 0
        self.merging = packer.merge_small_sections and bool(packer.min_preferred_tokens) and not packer.overlap_tokens
        self.last: PackedChunk | None = None  # the last chunk flushed (a new chunk's overlap starts from it)
        self.last_tiles: list[int] = []  # tile starts of the last flushed chunk (for overlap)
        self.tiles_in_cur: list[int] = []
        self.titles: dict[tuple[int, int], tuple[tuple[Node, ...], tuple[str, ...]]] = {}

    def stream(self) -> Iterator[PackedChunk]:
        root = self.normalized.root
        del self.normalized  # (its root's children may be a stream: nothing else reads them)
        if not root.children:
            return
        # The root's tiles are read as a stream (the top-level blocks and sections of a long
        # document may be a ``StreamedChildren``): one top-level section is held at a time.
        tiles = self.lines.iter_tiles(root.children, 0, len(self.text))
        del root
        first: list[tuple[Node | None, int, int]] = []  # the first section's tile, once read

        def leading() -> Iterator[tuple[Node | None, int, int]]:
            for tile in tiles:
                if tile[0] is not None and tile[0].kind == "section":
                    first.append(tile)
                    return
                yield tile

        # Text before the first heading belongs with the first top-level section (top 1).
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

    def _forget_before(self, position: int) -> None:
        """Let the counter drop token ends before ``position`` and before every chunk that may still
        be counted: those not yet streamed out, the open one, and the last one (overlap).

        Only a chunk's own text counts here, not a repeated header or fence before it: that is
        counted once (``_Counter.context``, remembered) when its block is split, so the token
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
        """Take out of ``out`` the chunks no later step changes, merged (``_merge_small``): those
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
        """The first ``k`` chunks of ``out``, taken out, small ones merged (``_merge_small``)."""
        out = self.out
        done = out[:k]
        del out[:k]
        self.final = max(self.final - k, 0)
        if self.merging:
            self._merge_small(done)
        return done

    def _merge_small(self, out: list[PackedChunk]) -> None:
        """Merge each chunk of ``out`` under ``min_preferred_tokens`` into the next, else the previous one.

        Only single-span chunks of one top-level section (unless cross-section merges are
        allowed) that stay within ``target_tokens`` together; the merged chunk keeps the first
        one's heading path and prefix. Counts stay exact: both are cut at stable positions.
        """
        counter, p = self.counter, self.p
        i = 0
        while i < len(out):
            chunk = out[i]
            if chunk.token_count >= p.min_preferred_tokens or not self._mergeable(chunk):
                i += 1
                continue
            for j in (i + 1, i - 1):
                if not 0 <= j < len(out) or not self._mergeable(out[j]):
                    continue
                first, second = (chunk, out[j]) if j > i else (out[j], chunk)
                if first.top != second.top and not p.allow_cross_top_level_merge:
                    continue
                start, end = first.spans[0][0], second.spans[0][1]
                total = (
                    counter.prefix(first.prefix) + counter.span(start, end)
                    if counter.additive
                    else (counter.exact(heading_prefix(first.prefix) + self.text[start:end]))
                )
                if total > p.target_tokens:
                    continue
                kinds = first.kinds + tuple(k for k in second.kinds if k not in first.kinds)
                merged = PackedChunk(
                    spans=((start, end),),
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
                k = min(i, j)
                out[k : k + 2] = [merged]
                i = k
                break
            else:
                i += 1

    def _mergeable(self, chunk: PackedChunk) -> bool:
        return (
            len(chunk.spans) == 1
            and chunk.split != "prose"
            and (self.lines.is_stable(chunk.spans[0][0]) and self.lines.is_stable(chunk.spans[0][1]))
        )

    # -- counting --------------------------------------------------------------------------

    def _total(self, cur: _Open, end: int, cap: int | None = None) -> int:
        """Tokens of the embedding text of ``cur`` extended to ``end``; with ``cap``, any number
        over ``cap`` when the text alone is provably longer (``_Counter.at_least``: a huge tile's
        fit test encodes nothing ahead). Otherwise the exact count, from one ``span`` (callers
        only compare it with limits of at most ``cap``)."""
        counter = self.counter
        if counter.additive and cur.exact_count is None:
            if cap is not None and counter.at_least(cur.start, end) > cap:
                return cap + 1
            total = counter.prefix(cur.prefix) + counter.span(cur.start, end)
            if cur.context is not None:
                total += counter.context(cur.context)
            return total
        return counter.exact(self._embedding(cur, end))

    def _embedding(self, cur: _Open, end: int) -> str:
        context = self.text[cur.context[0] : cur.context[1]] if cur.context else ""
        return heading_prefix(cur.prefix) + context + self.text[cur.start : end]

    # -- the chunk being filled ------------------------------------------------------------

    def _can_join(self, top: int) -> bool:
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
        cur = self.cur
        self.tiles_in_cur.append(cur.end)
        if not cur.has_body and path is not None:
            cur.path = path  # headings so far travel with what follows: it names the chunk
        cur.end = end
        cur.has_body = cur.has_body or body
        kind = "section" if section else _KIND.get(node.kind, node.kind) if node is not None else "paragraph"
        if kind not in cur.kinds:
            cur.kinds.append(kind)
        if section:
            cur.sections += _headings_in(node)
        elif node is not None and node.kind == "heading":
            cur.sections += 1
        if cur.page_no is None and node is not None:
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
        # latest _PATHS_MEMO paths only (a path holds its sections: a document of many sections
        # must not keep them all alive here).
        memo = self.titles
        key = (id(path), displayed)
        known = memo.get(key)
        if known is None:
            if len(memo) >= _PATHS_MEMO:
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
        outermost first, when ``allow_dropping`` and that makes it fit.
        """
        titles = self._titles(path, displayed) if self.p.include_heading_path else ()
        section = node is not None and node.kind == "section"
        for dropped in range(len(titles) + 1 if allow_dropping else 1):
            cur = _Open(
                start=start,
                end=start,
                path=path,
                prefix=titles[dropped:],
                prefix_dropped=dropped,
                top=top,
                has_body=False,
                kinds=[],
                sections=0,
                page_no=None,
                context=context,
                context_kind=context_kind,
                split=split,
            )
            if self._total(cur, end, limit) <= limit:
                if dry_run:
                    return True
                self.cur = cur
                self._apply_overlap(end, limit)
                self.tiles_in_cur = []
                own_heading = displayed == 1 and node is not None and node.kind == "heading"
                self._extend(node, end, body=not own_heading, section=section)
                self.tiles_in_cur = [cur.start]
                return True
        return False

    def _apply_overlap(self, end: int, limit: int) -> None:
        """Start the new chunk earlier by whole tiles of the last one, up to ``overlap_tokens``.

        Only within one section, only while the chunk still fits ``limit``.
        """
        cur, budget = self.cur, self.p.overlap_tokens
        last = self.last
        if not budget or last is None or cur.context is not None or cur.split == "prose":
            return
        if last.spans[-1][1] != cur.start or last.split == "prose" or last.headings != self._titles(cur.path):
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
        self.out.append(chunk)
        if not self.merging or not self._mergeable(chunk):
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
        self.last_tiles = self.tiles_in_cur
        self.tiles_in_cur = []

    # -- sections and blocks ---------------------------------------------------------------

    def _section(self, section: Node, start: int, end: int, path: tuple[Node, ...], top: int) -> Iterator[PackedChunk]:
        inner = path + (section,)
        cur = self.cur
        if cur is not None:
            if (
                self.p.merge_small_sections
                and self._can_join(top)
                and cur.context is None
                and cur.exact_count is None
                and self._total(cur, end, self.p.target_tokens) <= self.p.target_tokens
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
            yield from self._tiles(self.lines.iter_tiles(children, start, end), inner, top, batch=_SECTION_BATCH)
        else:
            yield from self._tiles(self.lines.tiles(children, start, end), inner, top)

    def _tiles(
        self,
        tiles: list[tuple[Node | None, int, int]] | Iterator[tuple[Node | None, int, int]],
        path: tuple[Node, ...],
        top: int,
        *,
        contexts: tuple[int, _Context, _Context] | None = None,
        split: str | None = None,
        batch: int = 0,
    ) -> Iterator[PackedChunk]:
        """Pack tiles in order: subsections, headings and blocks (or the parts of a split block).

        ``tiles`` is a list, or an iterator (a split block's parts, or the children of a root or a
        section given as a stream, read as a stream and packed ``batch`` (default
        :data:`_TILE_BATCH`) at a time: a block's tiles are never all held). ``contexts`` is
        ``(k, first, rest)``: a chunk opening at one of the first ``k`` tiles starts with the
        repeated header or fence ``first`` (``(span, kind)`` or ``(None, None)``), at a later
        tile with ``rest``; ``split`` names the block the tiles are parts of.

        The common case, blocks joining a chunk that already has text, takes one bisection over
        the tiles' running token counts instead of a step per block; it decides exactly as
        :meth:`_block` would (extend while the chunk stays within ``target_tokens``). A batch's
        end changes no decision: that run stops there and the next batch's first tile, which
        starts where the open chunk ends, goes on with the same run (same start, prefix and
        context, so the same room).
        """
        counter = self.counter
        fast = counter.additive and not self.p.overlap_tokens
        if type(tiles) is list:
            batches: Iterable[list] = (tiles,)
        else:
            stream, size = tiles, batch or _TILE_BATCH
            batches = iter(lambda: list(islice(stream, size)), [])
        offset = 0  # tiles in earlier batches
        for tiles in batches:
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
                opening = {"split": split}
                if contexts is not None:
                    opening["context"], opening["context_kind"] = (
                        contexts[1] if offset + i < contexts[0] else contexts[2]
                    )
                if not (
                    fast
                    and cur is not None
                    and cur.has_body
                    and cur.exact_count is None
                    and cur.end == s
                    and self._can_join(top)
                ):
                    if not self._block(node, s, e, path, top, **opening):
                        yield from self._split(
                            node,
                            s,
                            e,
                            path,
                            top,
                            context=opening.get("context"),
                            context_kind=opening.get("context_kind"),
                        )
                    i += 1
                    continue
                # Tokens the chunk may still take, as a bound on the running count at a tile end.
                base = counter.tokens_before(cur.start)
                room = self.p.target_tokens - counter.prefix(cur.prefix) + base
                if cur.context is not None:
                    room -= counter.context(cur.context)
                j = i
                while j < n:
                    tile = tiles[j][0]
                    if tile is not None and tile.kind in ("section", "heading"):
                        break
                    # (tokens_before(tile end) > room, without encoding far ahead for a huge tile)
                    if (
                        counter.at_least(cur.start, tiles[j][2]) > room - base
                        or counter.tokens_before(tiles[j][2]) > room
                    ):
                        break
                    j += 1
                if j == i:
                    if not self._block(node, s, e, path, top, **opening):
                        yield from self._split(
                            node,
                            s,
                            e,
                            path,
                            top,
                            context=opening.get("context"),
                            context_kind=opening.get("context_kind"),
                        )
                    i += 1
                    continue
                # What _extend does per tile, once for the run (no overlap here: tile starts unused).
                kinds = cur.kinds
                for tile, _, _ in tiles[i:j]:
                    kind = _KIND.get(tile.kind, tile.kind) if tile is not None else "paragraph"
                    if kind not in kinds:
                        kinds.append(kind)
                    if cur.page_no is None and tile is not None:
                        cur.page_no = tile.page_no
                cur.end = tiles[j - 1][2]
                i = j
            offset += n

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
        """Add one tile: to the open chunk if it fits, else to a new chunk; ``False`` when it
        does not fit even alone and is to be split (the caller then calls :meth:`_split`)."""
        heading = _own_heading(node, path)
        cur = self.cur
        if cur is not None and not self._can_join(top):
            self._flush()
            cur = None
        if cur is not None and cur.exact_count is None:
            total = self._total(cur, end, max(self.p.target_tokens, self.p.max_tokens))
            if total <= self.p.target_tokens or (not cur.has_body and total <= self.p.max_tokens):
                self._extend(node, end, body=not heading, path=path)
                return True
        displayed = 1 if heading else 0
        opening = dict(limit=self.p.max_tokens, context=context, context_kind=context_kind, split=split)
        if cur is not None and (
            cur.has_body
            or cur.exact_count is not None
            # Open headings alone would force a split of a block that fits on its own: a block
            # that fits is never split, so the headings become a chunk of their own.
            or self._open(node, start, end, path, displayed, top, dry_run=True, **opening)
        ):
            self._flush()
            cur = None
        if cur is None and self._open(node, start, end, path, displayed, top, **opening):
            return True
        if not self.p.split_oversized:
            self._flush()
            self.cur = _Open(
                start=start,
                end=start,
                path=path,
                prefix=(),
                prefix_dropped=0,
                top=top,
                has_body=False,
                kinds=[],
                sections=0,
                page_no=None,
                split=None,
            )
            self._extend(node, end, body=True)
            self._flush()
            return True
        return False

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
        """Split a tile that does not fit ``max_tokens`` even alone, by its kind; yields the
        chunks that become final meanwhile (see :meth:`_release`)."""
        kind = node.kind if node is not None else "paragraph"
        # Where the block itself starts: its tile may begin earlier, with blank lines before it.
        own = max(start, self.lines.line_start(node.start)) if node is not None else start
        none: _Context = (None, None)
        if kind in _CONTAINERS and node.children:
            # The children are read as a stream (see ``Lines.iter_tiles``); two tiles are looked at first.
            tiles = self.lines.iter_tiles(node.children, start, end)
            first = next(tiles)
            second = next(tiles, None)
            if second is None:
                if first[0] is not None and first[0] is not node:
                    yield from self._split(first[0], start, end, path, top, context=context, context_kind=context_kind)
                    return
            else:
                yield from self._tiles(
                    chain((first, second), tiles), path, top, contexts=(0, none, (context, context_kind)), split=kind
                )
                return
        if kind == "table" and node.children:
            tiles = self.lines.iter_tiles(node.children, start, end)
            rows = node.header_rows
            head = list(islice(tiles, max(rows + 1, 2)))  # the header rows and the first body row
            header_end = head[rows][1] if 0 < rows < len(head) else None
            header = (own, header_end) if header_end is not None and own < header_end else None
            if header is not None and not self._fits_context(path, header):
                header = None  # a header this large is not repeated; rows are still kept whole
            if len(head) > 1:
                # Tiles from the first body row on (row ``rows``: its start is ``header_end``) repeat the header.
                contexts = (rows, none, (header, "table_header")) if header is not None else (0, none, none)
                yield from self._tiles(chain(head, tiles), path, top, contexts=contexts, split="table")
                return
        if kind == "code":
            lines = self.lines.stable_after(own, end)
            first_line = next(lines, None)
            if first_line is not None:
                # The fence line is repeated only from this tile: a tile that starts past it (its
                # line was packed with the block before) has no fence line to repeat.
                fence = (own, first_line) if node.fence and own == self.lines.line_start(node.start) else None
                if fence is not None and not self._fits_context(path, fence):
                    fence = None
                # The closing fence stays with the last line of code, never a part of its own.
                tiles = self._cut_tiles(node, start, end, chain((first_line,), lines), closing=node.fence)
                yield from self._tiles(
                    tiles, path, top, contexts=(1, none, (fence, "code_fence") if fence else none), split="code"
                )
                return
        paragraphs = (
            m.end()
            for m in _BLANK_LINES.finditer(self.text, own, end)
            if own < m.end() < end and self.lines.is_stable(m.end())
        )
        first_paragraph = next(paragraphs, None)
        if first_paragraph is not None:
            # A block with blank lines inside (an rST directive, an HTML block, a long quote):
            # cut between its paragraphs first, each a tile counted from the one encoding. A
            # directive's line (its "fence") is repeated at the top of every later part.
            tiles = self._cut_tiles(node, start, end, chain((first_paragraph,), paragraphs))
            contexts = (0, none, (context, context_kind))
            if node is not None and node.fence and context is None:
                fence = (own, first_paragraph)
                if self._fits_context(path, fence):
                    contexts = (1, none, (fence, "directive"))
            yield from self._tiles(tiles, path, top, contexts=contexts, split=kind)
            return
        yield from self._split_prose(node, start, end, path, top, context=context, context_kind=context_kind)

    def _cut_tiles(
        self, node: Node | None, start: int, end: int, cuts: Iterator[int], *, closing: str = ""
    ) -> Iterator[tuple[Node | None, int, int]]:
        """Tiles ``(node, s, e)`` of ``[start, end)`` cut at ``cuts`` (ascending, inside it), as a
        stream. With ``closing`` (a code block's opening fence) and at least two cuts, a last line
        that closes that fence is not a tile of its own: it ends the tile before it."""
        previous, pending, count = start, None, 1
        for at in cuts:
            if pending is not None:
                yield pending
            pending = (node, previous, at)
            previous, count = at, count + 1
        if closing and count > 2 and _closes(self.text[previous:end], closing):
            yield node, pending[1], end
            return
        if pending is not None:
            yield pending
        yield node, previous, end

    def _fits_context(self, path: tuple[Node, ...], context: tuple[int, int]) -> bool:
        """Whether a repeated header or fence leaves at least half the budget for rows or lines."""
        return self.counter.context(context) + self.counter.prefix(self._titles(path)) <= self.p.max_tokens // 2

    # -- prose -----------------------------------------------------------------------------

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
    ) -> Iterator[PackedChunk]:
        """Cut ``[start, end)`` at sentence ends, then line starts, words, tokens; each part counted
        whole. Yields the chunks that become final meanwhile (see :meth:`_release`)."""
        text, counter = self.text, self.counter
        cur = self.cur
        if cur is not None and cur.has_body:
            self._flush()
            cur = None

        def path_titles(displayed: int) -> tuple[tuple[str, ...], int]:
            """The prefix for ``path`` without its ``displayed`` innermost sections, outer titles
            dropped until it takes at most half the budget."""
            titles = self._titles(path, displayed) if self.p.include_heading_path else ()
            dropped = 0
            while titles and counter.prefix(titles) > self.p.max_tokens // 2:
                titles, dropped = titles[1:], dropped + 1
            return titles, dropped

        # A heading's own title is in the text of its first part only (that part starts with
        # the heading line); its later parts carry the title in the prefix like any block's.
        heading = _own_heading(node, path)
        titles, dropped = path_titles(1 if heading else 0)
        if context is not None and counter.context(context) + counter.prefix(titles) > self.p.max_tokens // 2:
            context, context_kind = None, None
        position = start
        if self.cur is None:
            # Leading blank lines are not a part of their own: start at the text (the chunks
            # need not touch; only whitespace lies between them).
            first_text = _NON_SPACE.search(text, start, end)
            position = first_text.start() if first_text else end
        levels = self._cut_candidates(position, end)
        first = True
        while position < end:
            keep = self.cur if (first and self.cur is not None) else None
            head = (
                self._embedding(keep, keep.end)
                if keep is not None
                else (heading_prefix(titles) + (text[context[0] : context[1]] if context else ""))
            )
            cut, count = self._longest_part(head, position, end, levels)
            if cut == position and keep is None:
                if titles or context is not None:
                    # Not one step fits after the path and context: give them up for the rest.
                    titles, dropped, context, context_kind = (), dropped + len(titles), None, None
                    continue
                # Not even one code point fits max_tokens (a character of more tokens than the
                # budget): it becomes a part of its own, over the budget, which validation
                # dead-letters with its text. The loop always moves on.
                steps = [b for b in self.p.tokenizer.boundaries(text[position : position + 16]) if b > 0]
                cut = position + (steps[0] if steps else 1)
                count = counter.exact(text[position:cut])
            # A part cut inside the tile ends at its last non-space character; the whitespace
            # it leaves out lies between two chunks (the next part starts at ``cut``).
            part_end = cut
            if cut < end:
                part_end = len(text[position:cut].rstrip()) + position
                if part_end == position:
                    part_end = cut
                elif part_end != cut:
                    stripped = counter.exact(head + text[position:part_end])
                    if stripped <= self.p.max_tokens:
                        count = stripped
                    else:
                        part_end = cut
            if keep is not None and cut == position:
                # Even one step does not fit after the open headings: close them first.
                self._flush()
                first = False
                continue
            if keep is not None:
                keep.end = part_end
                keep.has_body = True
                keep.exact_count = count
                keep.split = "prose"
                if "paragraph" not in keep.kinds:
                    keep.kinds.append(node.kind if node is not None else "paragraph")
            else:
                self.cur = _Open(
                    start=position,
                    end=part_end,
                    path=path,
                    prefix=titles,
                    prefix_dropped=dropped,
                    top=top,
                    has_body=True,
                    kinds=[node.kind if node is not None else "paragraph"],
                    sections=0,
                    page_no=node.page_no if node is not None else None,
                    context=context,
                    context_kind=context_kind,
                    split="prose",
                    exact_count=count,
                )
            self._flush()
            if self.final:
                yield from self._release()
            position = cut
            if first and heading:
                titles, dropped = path_titles(0)
            first = False

    def _cut_candidates(self, start: int, end: int) -> list[_Candidates]:
        """Cut positions inside ``(start, end)``: sentence starts, line starts, word starts.

        Each level is found lazily, as far as the parts need it, so a long paragraph never has
        all its word starts in memory at once.
        """
        text = self.text
        return [
            _Candidates((m.end() for m in pattern.finditer(text, start, end)), start, end)
            for pattern in (_SENTENCE_END, LINE_BREAK, _WORD_START)
        ]

    def _longest_part(self, head: str, position: int, end: int, levels: list[_Candidates]) -> tuple[int, int]:
        """The farthest cut after ``position`` whose part fits, by level; with its exact count.

        Tries the end of the tile, then each level's candidates by bisection on exact counts of
        ``head + text[position:cut]``, aiming at ``target_tokens`` (a part never passes
        ``max_tokens``), and finally the tokenizer's token boundaries. Returns ``(position, 0)``
        only when ``head`` alone leaves no room for a single token.
        """
        text, counter = self.text, self.counter
        target, limit = self.p.target_tokens, self.p.max_tokens
        if not counter.additive or not counter.exceeds(
            position, end, limit
        ):  # the rest may fit: count it whole (with an additive tokenizer only when it is near)
            whole = counter.exact(head + text[position:end])
            if whole <= limit:
                return end, whole
        # No part can hold more code points than this (a token is rarely longer than a few dozen):
        # the candidates looked at stay near the part, so a long paragraph costs linear time.
        reach = min(end, position + 64 * limit + 1024)
        for candidates in levels:
            level = candidates.through(position, reach)
            lo = bisect_right(level, position)
            best = self._bisect(head, position, level, lo, bisect_left(level, reach), target)
            if best is not None:
                return best
        # Token boundaries of a window that holds at least the budget.
        window_end = min(end, position + 8 * limit + 64)
        boundaries = [position + b for b in self.p.tokenizer.boundaries(text[position:window_end])]
        boundaries = [b for b in boundaries if position < b < end]
        best = self._bisect(head, position, boundaries, 0, len(boundaries), limit)
        if best is not None:
            return best
        return position, 0

    def _bisect(
        self, head: str, position: int, candidates: list[int], first: int, stop: int, goal: int
    ) -> tuple[int, int] | None:
        """Largest of ``candidates[first:stop]`` whose part counts at most ``goal``, or ``None``.

        (A part never counts more than ``max_tokens``.)

        Every answer is an exact count of the whole ``head + text[position:cut]``. With an
        additive tokenizer the whole-document encoding first proposes a candidate (its counts
        are off by a token or two mid-line), so usually one or two exact counts decide.
        """
        text, counter = self.text, self.counter
        if first >= stop:
            return None

        def exact(i: int) -> int:
            return counter.exact(head + text[position : candidates[i]])

        lo, hi = first, stop - 1
        if counter.additive:
            head_tokens, base = counter.exact(head), counter.tokens_before(position)
            guess = first - 1
            while lo <= hi:
                mid = (lo + hi) // 2
                if head_tokens + counter.tokens_before(candidates[mid]) - base <= goal:
                    guess, lo = mid, mid + 1
                else:
                    hi = mid - 1
            for i in range(guess, max(guess - 3, first - 1), -1):
                count = exact(i)
                if count <= goal:
                    return candidates[i], count
            lo, hi = first, max(guess - 3, first - 1)
        best: tuple[int, int] | None = None
        while lo <= hi:
            mid = (lo + hi) // 2
            count = exact(mid)
            if count <= goal:
                best, lo = (candidates[mid], count), mid + 1
            else:
                hi = mid - 1
        if best is None and goal < self.p.max_tokens:
            # Nothing reaches the target at this level: accept the first candidate within max,
            # unless the encoding already shows it is far over (then it is not counted whole).
            if counter.additive and (
                counter.exact(head) + counter.tokens_before(candidates[first]) - counter.tokens_before(position)
                > self.p.max_tokens + _ESTIMATE_SLACK
            ):
                return None
            count = exact(first)
            if count <= self.p.max_tokens:
                best = (candidates[first], count)
        return best
