"""What the packer makes: a chunk as spans of the normalized text, and its embedding text.

Positions are code points of the normalized text (``NormalizedDocument.text``); token counts are
tokens of the budget tokenizer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transforms.structure.tree import Node

__all__ = [
    "EMBEDDING_TEXT_VERSION",
    "OpenChunk",
    "PackedChunk",
    "build_embedding_text",
    "distinct_titles",
    "heading_prefix",
]

#: Marks metadata whose ``structure.prefix`` :func:`build_embedding_text` puts before the text.
EMBEDDING_TEXT_VERSION = "heading-path/1"
_PATH_SEPARATOR = " > "


def distinct_titles(path: Sequence[Node]) -> tuple[str, ...]:
    """The titles of ``path``'s sections, outermost first, leaving out empty titles and a title
    that repeats the one kept before it (a section repeating its parent's title is one heading)."""
    titles: list[str] = []
    for node in path:
        if node.title and (not titles or node.title != titles[-1]):
            titles.append(node.title)
    return tuple(titles)


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
        spans: Intervals ``[start, end)`` of the normalized text, in code points, in order; the
            chunk's text is their concatenation. One span: a verbatim slice. Two: a repeated
            table header or code fence (or, from ``HeadingChunker``, ancestor headings) before a
            slice.
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
        token_count: Tokens of the embedding text (budget tokenizer), as the packer counted them.
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


@dataclass
class OpenChunk:
    """The chunk being filled: the ``context`` span (if any), then ``text[start:end]``.

    Attributes:
        start: Where its own text starts (code points); an overlap may move it earlier.
        end: Where its text ends so far (code points); only grows.
        path: Sections at its start, outermost first (its heading path is their titles).
        prefix: The titles put before the text in the embedding text.
        prefix_dropped: Outer titles left out of ``prefix`` for room.
        top: Index of the top-level section it starts in.
        has_body: Whether it holds text other than heading lines.
        kinds: Block kinds in it, in order of first appearance.
        sections: Headings whose line is in its text.
        page_no: The first page of its blocks.
        context: A repeated table header, code fence or directive line before its text.
        context_kind: ``"table_header"``, ``"code_fence"`` or ``"directive"`` with ``context``.
        split: The kind of oversized block it is a part of.
        exact_count: Tokens of its embedding text, set for prose parts (counted whole).
    """

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
    exact_count: int | None = None

    @classmethod
    def empty(
        cls,
        start: int,
        path: tuple[Node, ...],
        top: int,
        *,
        prefix: tuple[str, ...] = (),
        prefix_dropped: int = 0,
        context: tuple[int, int] | None = None,
        context_kind: str | None = None,
        split: str | None = None,
    ) -> OpenChunk:
        """A chunk opened at ``start`` with no text yet (no body, blocks, headings or page)."""
        return cls(
            start=start,
            end=start,
            path=path,
            prefix=prefix,
            prefix_dropped=prefix_dropped,
            top=top,
            has_body=False,
            kinds=[],
            sections=0,
            page_no=None,
            context=context,
            context_kind=context_kind,
            split=split,
        )
