"""Independent validation of structure chunks against the text they were cut from.

Beam-free. :func:`validate_structure_chunks` trusts nothing a chunk says about itself: it rebuilds
each chunk's text from its ``structure.spans`` over the source, rebuilds its embedding text with
:func:`~transforms.structure.packing.build_embedding_text`, recomputes which non-whitespace
characters of the source the chunks cover, measures the overlap between neighbours in tokens,
and counts merged, split, oversized and small chunks. The job's validation transform turns the
problems into dead-letter rows and the counts into the report.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from transforms.documents import Chunk
from transforms.structure.packing import EMBEDDING_TEXT_VERSION, build_embedding_text
from transforms.tokenizers import Tokenizer

__all__ = ["ChunkValidation", "StructureProblem", "StructureValidator", "has_structure", "validate_structure_chunks"]


@dataclass(frozen=True)
class StructureProblem:
    """One finding: a chunk (``chunk_index``) or the whole document (``None``), with a reason code."""

    chunk_index: int | None
    reason: str
    detail: str


@dataclass(frozen=True)
class ChunkValidation:
    """What validation found for one document's structure chunks; counts are recomputed.

    Attributes:
        chunk_count: Chunks checked.
        source_characters: Non-whitespace code points of the source.
        retained_characters: Of those, how many lie inside some chunk's spans.
        excluded_characters: ``source_characters - retained_characters`` (0 when nothing is lost).
        embedding_tokens: Sum of the chunks' recounted embedding-text tokens.
        classification: ``"complete"`` (everything covered, no problem) or ``"incomplete"``.
        token_counts: Each chunk's recounted tokens, in order.
        merged_chunks: Chunks whose text holds more than one heading (merged sections).
        split_chunks: Chunks that are a part of a block too large for one chunk.
        oversized_chunks: Chunks over ``max_tokens`` (each is also a problem).
        small_chunks: Chunks under ``min_preferred_tokens``.
        max_overlap: Largest overlap between neighbours, in tokens.
        problems: Findings, in chunk order; document-level ones last.
    """

    chunk_count: int
    source_characters: int
    retained_characters: int
    excluded_characters: int
    embedding_tokens: int
    classification: str
    token_counts: tuple[int, ...] = ()
    merged_chunks: int = 0
    split_chunks: int = 0
    oversized_chunks: int = 0
    small_chunks: int = 0
    max_overlap: int = 0
    problems: tuple[StructureProblem, ...] = ()


def has_structure(chunk: Chunk) -> bool:
    """Whether ``chunk`` carries the structure metadata this module validates."""
    structure = chunk.metadata.get("structure")
    return isinstance(structure, dict) and structure.get("embedding") == EMBEDDING_TEXT_VERSION


def _spans(structure: dict[str, Any], limit: int) -> list[tuple[int, int]] | None:
    spans = structure.get("spans")
    if not isinstance(spans, list) or not spans:
        return None
    out = []
    for span in spans:
        # The common case first: a list of two ints (as the chunkers write them) in range.
        if type(span) is list and len(span) == 2:
            start, end = span
            if type(start) is int and type(end) is int and 0 <= start < end <= limit:
                out.append((start, end))
                continue
        if (
            not isinstance(span, (list, tuple))
            or len(span) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in span)
            or not 0 <= span[0] < span[1] <= limit
        ):
            return None
        out.append((span[0], span[1]))
    return out


#: Every code point Python calls whitespace (str.isspace): ASCII 9-13 and 28-32, and 19 above 127,
#: the last U+3000 (none outside the Basic Multilingual Plane, none a surrogate).
_WHITESPACE = tuple(c for c in map(chr, range(0x3001)) if c.isspace())
assert {ord(c) for c in _WHITESPACE if c.isascii()} == {*range(9, 14), *range(28, 33)}
_new = object.__new__
#: Code points of a text counted at a time (bounds the copy and the masks).
_PART_CHARS = 1 << 20


@lru_cache(maxsize=1)
def _space_table():
    """A numpy ``bool`` table of the 65,536 UTF-16 code units: whether the unit is a whitespace
    code point (:data:`_WHITESPACE`)."""
    import numpy as np

    table = np.zeros(1 << 16, dtype=np.bool_)
    table[[ord(c) for c in _WHITESPACE]] = True
    return table


def _non_space(text: str) -> int:
    """Code points of ``text`` that are not whitespace (``str.isspace``).

    Counted over UTF-16 code units (one byte per code point for an ASCII text): every whitespace
    code point is one unit of its own value (ASCII ones compared by value, wider ones, from U+0085,
    looked up in :func:`_space_table`), and a code point outside the Basic Multilingual Plane is
    two surrogate units, neither whitespace, as is a lone surrogate (passed as its own unit).
    """
    if len(text) < 256:
        return len(text) - sum(map(str.isspace, text))
    import numpy as np

    ascii_only = text.isascii()
    whitespace = 0
    for i in range(0, len(text), _PART_CHARS):
        part = text[i : i + _PART_CHARS]
        if ascii_only:
            units = np.frombuffer(part.encode("ascii"), dtype=np.uint8)
        else:
            units = np.frombuffer(part.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
        # ASCII whitespace: the units up to 32, less those up to 8 and those from 14 to 27
        # (a wrapping subtraction), compared in place rather than looked up (several times faster).
        whitespace += (
            int(np.count_nonzero(units <= 32))
            - int(np.count_nonzero(units <= 8))
            - int(np.count_nonzero((units - units.dtype.type(14)) <= 13))
        )
        if not ascii_only:
            # Wider whitespace starts at U+0085: the few units from there are looked up.
            wide = units[units >= 0x85]
            if len(wide):
                whitespace += int(np.count_nonzero(_space_table().take(wide)))
    return len(text) - whitespace


class StructureValidator:
    """Running validation of one document's structure chunks, fed one at a time in order.

    What :func:`validate_structure_chunks` checks, with state that does not hold the chunks: the
    previous chunk's main span (for the overlap), the chunks' spans as two integer arrays (16
    bytes per span, for the coverage counted in :meth:`finish`), each chunk's token count and
    the counters. :meth:`check` returns the chunk's own problems, in the order
    :func:`validate_structure_chunks` lists them; :meth:`finish` adds the document-level one.

    Args:
        source: The normalized text (the document's content for markdown, text and rst).
        tokenizer: The budget tokenizer (counts the overlaps).
        max_tokens: The hard budget, in tokens of ``tokenizer``.
        max_overlap_tokens: Largest allowed overlap between neighbours, in tokens.
        min_preferred_tokens: Chunks under this count as small.
    """

    def __init__(
        self,
        source: str,
        *,
        tokenizer: Tokenizer,
        max_tokens: int,
        max_overlap_tokens: int = 50,
        min_preferred_tokens: int = 100,
    ) -> None:
        self._source = source
        self._tokenizer = tokenizer
        self._max_tokens = max_tokens
        self._max_overlap_tokens = max_overlap_tokens
        self._min_preferred_tokens = min_preferred_tokens
        self._counts = array("q")
        self._starts = array("q")
        self._ends = array("q")
        self._problems: list[StructureProblem] = []
        self._previous_main: tuple[int, int] | None = None
        self._merged = self._split = self._small = self._oversized = 0
        self._max_overlap = 0

    def check(self, chunk: Chunk, token_count: int) -> list[StructureProblem]:
        """Check the next chunk, whose ``embedding_text`` has ``token_count`` tokens; its problems."""
        i = len(self._counts)
        self._counts.append(token_count)
        source = self._source
        structure = chunk.metadata.get("structure") or {}
        spans = _spans(structure, len(source))
        if spans is None:
            self._previous_main = None
            return self._found(StructureProblem(i, "offset_mismatch", "structure.spans is missing or out of range"))
        text = chunk.text
        if len(spans) == 1:  # compared in place, without a copy
            is_concatenation = spans[0][1] - spans[0][0] == len(text) and source.startswith(text, spans[0][0])
        else:
            is_concatenation = "".join(source[s:e] for s, e in spans) == text
        if not is_concatenation:
            self._previous_main = None
            return self._found(
                StructureProblem(i, "offset_mismatch", f"the text is not the concatenation of its spans {spans[:4]}")
            )
        for start, end in spans:
            self._starts.append(start)
            self._ends.append(end)
        problems = []
        if build_embedding_text(chunk.text, chunk.metadata) != chunk.embedding_text:
            problems.append(
                StructureProblem(i, "embedding_text_mismatch", "embedding_text is not the heading prefix plus the text")
            )
        if token_count > self._max_tokens:
            self._oversized += 1
            problems.append(
                StructureProblem(i, "token_budget_exceeded", f"{token_count} tokens > max {self._max_tokens}")
            )
        main = spans[-1]
        previous_main = self._previous_main
        if previous_main is not None and main[0] < previous_main[1]:
            overlap = self._tokenizer.count(source[main[0] : min(previous_main[1], main[1])])
            self._max_overlap = max(self._max_overlap, overlap)
            if overlap > self._max_overlap_tokens:
                problems.append(
                    StructureProblem(
                        i, "overlap_exceeded", f"{overlap} tokens overlap > max {self._max_overlap_tokens}"
                    )
                )
        self._previous_main = main
        self._merged += 1 if (structure.get("sections") or 0) > 1 else 0
        self._split += 1 if structure.get("split") else 0
        self._small += 1 if token_count < self._min_preferred_tokens else 0
        return self._found(*problems)

    def _found(self, *problems: StructureProblem) -> list[StructureProblem]:
        self._problems.extend(problems)
        return list(problems)

    def finish(self) -> ChunkValidation:
        """The document's :class:`ChunkValidation`, coverage of the source included."""
        source, starts, ends = self._source, self._starts, self._ends
        excluded = 0
        position = 0
        # Spans by start (ties in any order give the same union).
        order = range(len(starts)) if len(starts) < 2 else sorted(range(len(starts)), key=starts.__getitem__)
        for k in order:
            start, end = starts[k], ends[k]
            if start > position:
                excluded += _non_space(source[position:start])
            position = max(position, end)
        excluded += _non_space(source[position:])
        total = _non_space(source)
        problems = list(self._problems)
        if excluded:
            problems.append(
                StructureProblem(
                    None,
                    "incomplete_coverage",
                    f"{excluded} of {total} non-whitespace characters are in no chunk",
                )
            )
        counts = tuple(self._counts)
        # ChunkValidation(**fields) without the frozen dataclass's __init__ (an object.__setattr__
        # per field, a few microseconds a document): the same object, every field set.
        validation = _new(ChunkValidation)
        validation.__dict__.update(
            chunk_count=len(counts),
            source_characters=total,
            retained_characters=total - excluded,
            excluded_characters=excluded,
            embedding_tokens=sum(counts),
            classification="complete" if not problems else "incomplete",
            token_counts=counts,
            merged_chunks=self._merged,
            split_chunks=self._split,
            oversized_chunks=self._oversized,
            small_chunks=self._small,
            max_overlap=self._max_overlap,
            problems=tuple(problems),
        )
        return validation


def validate_structure_chunks(
    source: str,
    chunks: Sequence[Chunk],
    *,
    tokenizer: Tokenizer,
    max_tokens: int,
    max_overlap_tokens: int = 50,
    min_preferred_tokens: int = 100,
    token_counts: Sequence[int] | None = None,
) -> ChunkValidation:
    """Validate one document's structure chunks against ``source``, the text their spans index.

    Checks: each chunk's spans are in range and their concatenation is its ``text``
    (``offset_mismatch``); its ``embedding_text`` is ``build_embedding_text(text, metadata)``
    (``embedding_text_mismatch``); it has at most ``max_tokens`` tokens
    (``token_budget_exceeded``); it overlaps the previous chunk by at most
    ``max_overlap_tokens`` (``overlap_exceeded``); and together the chunks cover every
    non-whitespace character of ``source`` (``incomplete_coverage``, a document-level problem).
    The same as feeding the chunks to a :class:`StructureValidator`.

    Args:
        source: The normalized text (the document's content for markdown, text and rst).
        chunks: The document's chunks, in order, all with structure metadata.
        tokenizer: The budget tokenizer.
        max_tokens: The hard budget, in tokens of ``tokenizer``.
        max_overlap_tokens: Largest allowed overlap between neighbours, in tokens.
        min_preferred_tokens: Chunks under this count as small.
        token_counts: Each chunk's embedding-text tokens when already recounted by the caller;
            recounted here otherwise.

    Returns:
        The :class:`ChunkValidation`, problems included; nothing is raised for bad chunks.
    """
    validator = StructureValidator(
        source,
        tokenizer=tokenizer,
        max_tokens=max_tokens,
        max_overlap_tokens=max_overlap_tokens,
        min_preferred_tokens=min_preferred_tokens,
    )
    for i, chunk in enumerate(chunks):
        validator.check(chunk, token_counts[i] if token_counts is not None else tokenizer.count(chunk.embedding_text))
    return validator.finish()
