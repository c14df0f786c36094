"""The normalized structure every format is turned into: blocks with code-point intervals.

Beam-free. A normalizer (``transforms.structure.normalizers``) turns one document's content into a
:class:`NormalizedDocument`: the ``text`` that chunks are cut from, and the document's blocks in
reading order. Blocks are :class:`Node` objects; each keeps its interval ``[start, end)`` in
``text``, counted in code points. Headings are blocks too; :func:`build_sections` nests the flat
sequence into a tree of sections (``NormalizedDocument.root``).

For ``markdown``, ``text`` and ``rst`` the ``text`` *is* the document's content, so intervals are
offsets in the source. For ``html`` and ``docling`` the normalizer renders the document as
Markdown and ``text`` is that rendering (``verbatim`` is ``False``): intervals then index the
rendering, and chunks carry no source offsets.

Node kinds and what their fields mean:

================  ===================================================================================
``heading``       a heading line (or Setext pair); ``level`` 1-6, ``title`` its plain text
``paragraph``     prose; no children
``code``          a fenced or indented code block; ``fence`` the opening fence line as written
                  (``""`` for indented code), ``language`` the info string's first word
``table``         children are ``table_row`` nodes; the first ``header_rows`` of them are the header
``table_row``     one row (a Markdown header row includes its delimiter line)
``list``          children are ``list_item`` nodes; ``level`` 1 for a top-level list, 2 nested, ...
``list_item``     children are the item's blocks after its first line (paragraphs, nested lists)
``quote``         a block quote; children are its blocks
``html``          a raw HTML block inside Markdown; no children
``rule``          a thematic break, front matter, an rST directive or comment: kept as one block;
                  a directive's ``fence`` is its first line
``section``       built by :func:`build_sections`: a heading and everything up to the next heading
                  of the same or a higher level; ``level`` and ``title`` are the heading's
``document``      the root: blocks before the first heading, then the top-level sections
================  ===================================================================================

Long documents: a normalizer may give ``blocks`` as a :class:`StreamedChildren` (made again on
every pass; see :func:`streamed_document`), so that their number never sets the memory; the
section tree is then a stream too (:func:`iter_sections`), and with blocks that can be read
again from a heading, no section holds more than :data:`HELD_SECTION_NODES` nodes.

Invariants a normalizer must keep (checked by :func:`check_blocks`): blocks are in order and do not
overlap; every child lies inside its parent, children in order and not overlapping; every interval
is non-empty and inside ``[0, len(text)]``. Whitespace between blocks belongs to no block.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import abc
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

__all__ = [
    "BLOCK_KINDS",
    "HELD_SECTION_NODES",
    "LINE_BREAK",
    "LazyChildren",
    "LineStarts",
    "Node",
    "NormalizationError",
    "NormalizedDocument",
    "StreamedChildren",
    "build_sections",
    "check_blocks",
    "iter_sections",
    "map_blocks",
    "streamed_document",
]

#: Kinds a normalizer may emit (``section`` and ``document`` are built here).
BLOCK_KINDS = frozenset(
    {"heading", "paragraph", "code", "table", "table_row", "list", "list_item", "quote", "html", "rule"}
)


#: A line break: ``\r\n``, a lone ``\r`` or ``\n`` (as CommonMark and the tokenizer's pattern
#: see them; not the other characters ``str.splitlines`` breaks on).
LINE_BREAK = re.compile(r"\r\n?|\n")


def count_line_breaks(text: str, start: int = 0, end: int | None = None) -> int:
    """How many line breaks (``"\\r\\n"``, a lone ``"\\r"`` or ``"\\n"``: :data:`LINE_BREAK`)
    ``text[start:end]`` holds."""
    end = len(text) if end is None else end
    line_feeds = text.count("\n", start, end)
    returns = text.count("\r", start, end)
    return line_feeds + returns - text.count("\r\n", start, end) if returns else line_feeds


class LineStarts:
    """Where the line holding a code-point position starts, for one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        # With a carriage return anywhere, line starts come from a list (rfind for "\r" could
        # scan far back on every call); otherwise from rfind("\n").
        self._cr_line_starts = [0] + [m.end() for m in LINE_BREAK.finditer(text)] if "\r" in text else None

    def line_start(self, position: int) -> int:
        """The start of the line that holds ``position`` (after the last line break before it)."""
        if self._cr_line_starts is not None:
            return self._cr_line_starts[bisect_right(self._cr_line_starts, position) - 1]
        return self.text.rfind("\n", 0, position) + 1


class LazyChildren(abc.Sequence):
    """A node's children, built on first use (most blocks are never looked into).

    Behaves as the tuple it builds: indexing, ``len``, iteration, truth and ``==``.
    """

    __slots__ = ("_args", "_make", "_nodes")

    def __init__(self, make: Callable[..., Iterable[Any]], *args: Any) -> None:
        self._make: Callable[..., Iterable[Any]] | None = make
        self._args: tuple[Any, ...] | None = args
        self._nodes: tuple[Any, ...] | None = None

    def _get(self) -> tuple[Any, ...]:
        if self._nodes is None:
            assert self._make is not None and self._args is not None  # (both are set until built)
            self._nodes = tuple(self._make(*self._args))
            self._make = self._args = None
        return self._nodes

    def __getitem__(self, index):
        return self._get()[index]

    def __len__(self) -> int:
        return len(self._get())

    def __iter__(self) -> Iterator[Node]:
        return iter(self._get())

    def __bool__(self) -> bool:
        return bool(self._get())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (tuple, LazyChildren)) and self._get() == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # like the nodes it holds

    def __repr__(self) -> str:
        return repr(self._get())


class StreamedChildren(abc.Iterable):
    """A huge block's children, made again on every iteration and never all held at once.

    For a block too large to keep its children in memory (a Markdown list or table of many
    megabytes, see ``normalizers.markdown``): each ``iter()`` calls ``make(*args)`` afresh and
    yields the children in order, so what is alive at a time is one window of them. It has no
    ``len`` and no indexing; it is always true (a block is only streamed when it has children).
    Code that walks a tree must iterate children once per pass and not keep them.
    """

    __slots__ = ("_args", "_make")

    def __init__(self, make: Callable[..., Iterable[Node]], *args) -> None:
        self._make = make
        self._args = args

    def __iter__(self) -> Iterator[Node]:
        return iter(self._make(*self._args))

    def __bool__(self) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StreamedChildren({getattr(self._make, '__name__', self._make)!r})"


@dataclass(slots=True)
class Node:
    """One block of a normalized document; intervals are code points of ``NormalizedDocument.text``.

    Treat it as immutable (it is not frozen only because a frozen dataclass is six times slower
    to build, and normalizers build one per block).

    Attributes:
        kind: One of :data:`BLOCK_KINDS`, or ``section`` / ``document``.
        start: First code point of the block.
        end: One past its last code point (``start < end``).
        children: Nested blocks (``table_row`` of a table, ``list_item`` of a list, blocks of an
            item, a quote or a section), in order.
        level: Heading or section level (1-6), or list nesting depth (1 = outermost list).
        title: A heading's or section's plain text, whitespace collapsed.
        language: A code block's language (the info string's first word), or ``""``.
        fence: A fenced code block's opening fence line as written (e.g. ``"```python"``), or an
            rST directive's line; ``""`` when none. When such a block is split, the packer repeats
            the source's own first line(s) of the block (not this string) at the top of each part.
        header_rows: A table's number of leading header rows among ``children``.
        page_no: The page the block starts on, where the source has pages (DoclingDocument).
    """

    kind: str
    start: int
    end: int
    children: Sequence[Node] | StreamedChildren = ()
    level: int = 0
    title: str = ""
    language: str = ""
    fence: str = ""
    header_rows: int = 0
    page_no: int | None = None

    def walk(self) -> Iterator[Node]:
        """This node and all its descendants, in document order (pre-order)."""
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class NormalizedDocument:
    """A document as text plus blocks in reading order.

    Attributes:
        text: What intervals index and chunks are cut from (the content itself when ``verbatim``).
        blocks: Top-level blocks in reading order, headings included: a tuple, or for a long
            document a :class:`StreamedChildren` that makes them again on every iteration (no
            ``len``, no indexing; iterate it once per pass), so their number does not set the
            memory (the Markdown, rST and HTML normalizers past their window sizes).
        content_format: The format it was normalized from (``markdown``, ``html``, ...).
        verbatim: ``True`` when ``text`` is the document's content unchanged, so intervals are
            source offsets.
        diagnostics: Human notes about what the normalizer had to guess (e.g. an unclosed fence):
            a tuple, or with streamed ``blocks`` a :class:`LazyChildren`-like sequence of them
            that runs a pass over the blocks when first read, if none has run to its end yet.
    """

    text: str
    blocks: Sequence[Node] | StreamedChildren
    content_format: str
    verbatim: bool = True
    diagnostics: Sequence[str] = field(default=())

    @cached_property
    def root(self) -> Node:
        """The section tree: a ``document`` node over :func:`build_sections` of ``blocks``.

        When ``blocks`` is a :class:`StreamedChildren`, so are the root's children
        (:func:`iter_sections` over a fresh pass of the blocks on each iteration): the top-level
        sections are never all held; and when they come from :func:`streamed_document` with
        ``resumable``, no section holds more than :data:`HELD_SECTION_NODES` nodes (a larger
        one's children are a ``StreamedChildren`` too, read again from its heading).
        """
        blocks = self.blocks
        if type(blocks) is StreamedChildren:
            passes = _passes_of(blocks)
            if passes is not None and passes.resumable:
                return Node("document", 0, len(self.text), StreamedChildren(_stream_sections, passes))
            return Node("document", 0, len(self.text), StreamedChildren(iter_sections, blocks))
        return Node("document", 0, len(self.text), build_sections(blocks))


def build_sections(blocks: Iterable[Node]) -> tuple[Node, ...]:
    """Nest a flat block sequence into sections.

    A ``heading`` of level ``n`` opens a ``section`` that holds the heading, the blocks after it
    and every later section of a level greater than ``n``, up to the next heading of level ``n`` or
    less. Levels may skip (a level-3 heading right under a level-1 one nests under it). Blocks
    before the first heading stay at the top, before the first section.

    Returns:
        The root's children: leading blocks, then top-level sections (:func:`iter_sections`, held).
    """
    return tuple(iter_sections(blocks))


def iter_sections(blocks: Iterable[Node]) -> Iterator[Node]:
    """:func:`build_sections`'s nodes as a stream, each as soon as it is complete.

    ``blocks`` is read once, in order. A block before the first heading comes out at once; a
    top-level section when the next heading of its level or a higher one (or the end) is read.
    What is held at a time is the open top-level section (its blocks and subsections), not
    the document.

    Yields:
        The root's children, in order: leading blocks, then top-level sections.
    """
    # Open sections as [heading, children] frames, outermost first.
    stack: list[tuple[Node, list[Node]]] = []

    def close() -> Node | None:
        """Close the innermost open section: returned when it is a top-level one, else put in its parent."""
        heading, children = stack.pop()
        section = Node(
            "section",
            heading.start,
            children[-1].end,
            tuple(children),
            level=heading.level,
            title=heading.title,
            page_no=heading.page_no,
        )
        if stack:
            stack[-1][1].append(section)
            return None
        return section

    for block in blocks:
        if block.kind == "heading":
            while stack and stack[-1][0].level >= block.level:
                section = close()
                if section is not None:
                    yield section
            stack.append((block, [block]))
        elif stack:
            stack[-1][1].append(block)
        else:
            yield block
    while stack:
        section = close()
        if section is not None:
            yield section


class _Passes:
    """Passes over a long document's top-level blocks, and the diagnostics of the first complete one.

    ``make(*args, notes, resume)`` yields ``(mark, block)`` pairs: ``mark`` is ``None``, or for a
    heading an opaque value from which ``make(*args, notes, mark)`` yields the same pairs again,
    from that heading on (it may skip what comes before). Without ``resumable``, marks are unused.
    """

    __slots__ = ("_args", "_make", "_notes", "resumable")

    def __init__(self, make: Callable[..., Iterable[tuple[object, Node]]], args: tuple, resumable: bool) -> None:
        self._make = make
        self._args = args
        self._notes: tuple[str, ...] | None = None
        self.resumable = resumable

    def blocks(self) -> Iterator[Node]:
        for _, block in self.marked():
            yield block

    def marked(self) -> Iterator[tuple[object, Node]]:
        notes: list[str] = []
        yield from self._make(*self._args, notes, None)
        if self._notes is None:
            self._notes = tuple(notes)

    def resumed(self, mark: object) -> Iterator[tuple[object, Node]]:
        """The pairs from the heading of ``mark`` on (``notes`` of this pass are dropped)."""
        return iter(self._make(*self._args, [], mark))

    def notes(self) -> tuple[str, ...]:
        if self._notes is None:
            for _ in self.blocks():
                pass
        return self._notes  # type: ignore[return-value]


def _passes_of(blocks: StreamedChildren) -> _Passes | None:
    """The :class:`_Passes` whose ``blocks`` make ``blocks`` (:func:`streamed_document`'s), or ``None``."""
    passes = getattr(blocks._make, "__self__", None)
    return passes if type(passes) is _Passes else None


def streamed_document(
    text: str,
    make: Callable[..., Iterable[tuple[object, Node]]],
    *args,
    content_format: str,
    verbatim: bool = True,
    resumable: bool = False,
) -> NormalizedDocument:
    """A :class:`NormalizedDocument` whose ``blocks`` are made by ``make(*args, notes, resume)`` on every pass.

    For a normalizer of long documents: ``make`` yields the top-level blocks in order as
    ``(mark, block)`` pairs and appends its diagnostics (strings) to ``notes``, the same ones on
    every pass. With ``resumable``, the mark of every heading is a value that, given as
    ``resume``, makes ``make`` yield the same pairs from that heading on (``None``: from the
    start); then :attr:`NormalizedDocument.root` holds no section of more than
    :data:`HELD_SECTION_NODES` nodes: a larger one's children are read from its heading again
    (see :func:`_stream_sections`). ``blocks`` is a :class:`StreamedChildren` over the blocks,
    and ``diagnostics`` a :class:`LazyChildren` of the notes of the first pass that ran to its
    end (one is run when they are read before any did).
    """
    passes = _Passes(make, args, resumable)
    return NormalizedDocument(
        text=text,
        blocks=StreamedChildren(passes.blocks),
        content_format=content_format,
        verbatim=verbatim,
        diagnostics=LazyChildren(passes.notes),
    )


def map_blocks(normalized: NormalizedDocument, fn: Callable[[Node], Node]) -> NormalizedDocument:
    """``normalized`` with ``fn`` applied to each top-level block (its text and diagnostics kept).

    Streamed ``blocks`` stay a stream, ``fn`` applied as they are made; blocks made by
    :func:`streamed_document` keep their marks (``fn`` gives a heading's mark to what it makes
    of the heading), so sections too large to hold are still read again from their heading.
    """
    blocks = normalized.blocks
    if type(blocks) is not StreamedChildren:
        mapped: Sequence[Node] | StreamedChildren = tuple(fn(b) for b in blocks)
    else:
        passes = _passes_of(blocks)
        if passes is not None:
            mapped = StreamedChildren(_Passes(_mapped_pairs, (passes, fn), passes.resumable).blocks)
        else:
            mapped = StreamedChildren(map, fn, blocks)
    return NormalizedDocument(
        text=normalized.text,
        blocks=mapped,
        content_format=normalized.content_format,
        verbatim=normalized.verbatim,
        diagnostics=normalized.diagnostics,
    )


def _mapped_pairs(
    passes: _Passes, fn: Callable[[Node], Node], notes: list[str], resume: object
) -> Iterator[tuple[object, Node]]:
    for mark, block in passes.marked() if resume is None else passes.resumed(resume):
        yield mark, fn(block)


#: The most nodes (blocks and sections, counted at the levels sectioning builds: a block's own
#: children are not) a section built from resumable streamed blocks holds; a section with more
#: gets its children as a :class:`StreamedChildren` read again from its heading.
HELD_SECTION_NODES = 1 << 13


def _stream_sections(passes: _Passes) -> Iterator[Node]:
    """:func:`iter_sections` of resumable passes, holding no section of more than
    :data:`HELD_SECTION_NODES` nodes (see :func:`_section_of`)."""
    pairs = passes.marked()
    return (node for node, _, _ in _children(pairs, next(pairs, None), passes, -1))


def _children(
    pairs: Iterator[tuple[object, Node]], pair: tuple[object, Node] | None, passes: _Passes, level: int
) -> Iterator[tuple[Node, int, tuple[object, Node] | None]]:
    """The children of a section whose heading has ``level`` (-1: the root), from ``pair`` (the
    first pair after the heading) on, up to the next heading of ``level`` or a higher one: blocks,
    and a section for each heading deeper than ``level``. Each as ``(node, how many nodes it
    holds, the pair after it)``."""
    while pair is not None:
        block = pair[1]
        if block.kind == "heading":
            if block.level <= level:
                return
            node, size, pair = _section_of(pair[0], block, pairs, passes)
        else:
            node, size, pair = block, 1, next(pairs, None)
        yield node, size, pair


def _section_of(
    mark: object, heading: Node, pairs: Iterator[tuple[object, Node]], passes: _Passes
) -> tuple[Node, int, tuple[object, Node] | None]:
    """The section ``heading`` opens, its blocks read from ``pairs``; how many nodes it holds; and
    the pair after it (``None`` at the end).

    Its children are a tuple while they hold at most :data:`HELD_SECTION_NODES` nodes; past that
    they are dropped, the rest of the section is read through only to find its end, and its
    children are a :class:`StreamedChildren` that resumes the blocks at ``mark`` (the heading)
    on each iteration, nesting them the same way (it holds one node then).
    """
    level = heading.level
    children = [heading]
    held = 1
    first = pair = next(pairs, None)  # (``pair``: the pair after the latest child)
    for node, size, pair in _children(pairs, first, passes, level):
        children.append(node)
        held += size
        if held > HELD_SECTION_NODES:
            del children
            end = node.end
            while pair is not None:
                block = pair[1]
                if block.kind == "heading" and block.level <= level:
                    break
                end = block.end
                pair = next(pairs, None)
            streamed = StreamedChildren(_resumed_section, passes, mark, level)
            return (
                Node(
                    "section", heading.start, end, streamed, level=level, title=heading.title, page_no=heading.page_no
                ),
                1,
                pair,
            )
    section = Node(
        "section",
        heading.start,
        children[-1].end,
        tuple(children),
        level=level,
        title=heading.title,
        page_no=heading.page_no,
    )
    return section, held, pair


def _resumed_section(passes: _Passes, mark: object, level: int) -> Iterator[Node]:
    """The children of a section too large to hold: its heading, then its nodes, read from ``mark``."""
    pairs = passes.resumed(mark)
    for _, block in pairs:
        if block.kind == "heading":
            yield block
            break
    for node, _, _ in _children(pairs, next(pairs, None), passes, level):
        yield node


def check_blocks(normalized: NormalizedDocument) -> None:
    """Raise ``ValueError`` naming the first block that breaks the interval invariants."""
    limit = len(normalized.text)

    def check(nodes: Iterable[Node], lo: int, hi: int, where: str) -> None:
        previous_end = lo
        for i, node in enumerate(nodes):
            here = f"{where}[{i}] {node.kind} [{node.start}, {node.end})"
            if node.kind not in BLOCK_KINDS:
                raise ValueError(f"{here}: unknown kind")
            if not node.start < node.end:
                raise ValueError(f"{here}: empty interval")
            if node.start < previous_end or node.end > hi:
                raise ValueError(f"{here}: overlaps its neighbour or leaves its parent [{lo}, {hi})")
            previous_end = node.end
            check(node.children, node.start, node.end, here)

    check(normalized.blocks, 0, limit, "blocks")


class NormalizationError(ValueError):
    """Content cannot be normalized; ``reason`` is a dead-letter code (``invalid_docling_json``, ...)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
