"""The greedy merge shared by the two separator splitters, and the ``""`` separator's atoms.

Beam-free. Pieces are ``(start, end, length)`` with code-point offsets and a length in the
splitter's unit; chunks are stripped ``(start, end)`` intervals. The merge follows LangChain's
``_merge_splits`` (``langchain_text_splitters/base.py``), with every chunk measured exactly on its
whole stripped text.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from transforms.chunkers.text.source import TextSplitter
from transforms.chunkers.text.spans import LENGTHS, Count, check_sizes, slice_counter, strip
from transforms.tokenizers import Tokenizer

__all__ = ["ATOM_SECTION_CHARS", "MergingSplitter"]

#: Longest stretch (code points) cut into atoms at once by the ``""`` separator; see
#: ``MergingSplitter._cut_anywhere``.
ATOM_SECTION_CHARS = 1 << 16


class MergingSplitter(TextSplitter):
    """Shared length measure, ``""`` atoms and greedy merge of the two separator splitters."""

    def __init__(
        self,
        *,
        chunk_size: int,
        chunk_overlap: int,
        length: str,
        tokenizer: Tokenizer | None,
        is_separator_regex: bool = False,
    ) -> None:
        check_sizes(chunk_size, chunk_overlap)
        if not isinstance(is_separator_regex, bool):
            raise ValueError(f"is_separator_regex must be a bool, got {is_separator_regex!r}")
        self.is_separator_regex = is_separator_regex
        if is_separator_regex:
            # The package that matches the separators can change the chunks: this instance's
            # documents name its version in their input fingerprint (the class keeps none).
            # (Chunker declares it a ClassVar: set in the instance's own dict.)
            vars(self)["fingerprint_libraries"] = ("regex",)
        if length not in LENGTHS:
            raise ValueError(f"length must be one of {LENGTHS}, got {length!r}")
        if length == "tokens" and tokenizer is None:
            raise ValueError("length='tokens' needs a tokenizer, got None")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.length = length
        # Only a token-sized splitter depends on the tokenizer (and names it in config()).
        self.tokenizer = tokenizer if length == "tokens" else None

    @classmethod
    def budget_parameter(cls, params: Mapping[str, Any]) -> str | None:
        """``chunk_size`` when it counts tokens (``length="tokens"``)."""
        return "chunk_size" if params.get("length") == "tokens" else None

    def _measure(self, text: str) -> int:
        """Length of ``text`` in this splitter's unit (code points, or tokens of the tokenizer)."""
        return self.tokenizer.count(text) if self.tokenizer is not None else len(text)

    def _counter(self, text: str) -> Count:
        """``count(a, b)``: the exact length of ``text[a:b]`` in this splitter's unit."""
        if self.tokenizer is None:
            return lambda a, b: b - a
        return slice_counter(self.tokenizer, text)

    def _atoms(self, text: str, start: int, end: int, count: Count) -> list[tuple[int, int, int]]:
        """Cut ``text[start:end]`` into the smallest safe pieces, as ``(start, end, length)``.

        The ``""`` separator: one code point each for ``length="characters"`` (LangChain's
        ``list(text)``), one step between consecutive token starts for ``length="tokens"``. A token
        step longer than ``chunk_size`` that spans several code points is cut into code points,
        so only a single code point can exceed ``chunk_size`` (e.g. a 3-token emoji with
        ``chunk_size=2``); it is kept whole and validation rejects it. The atoms are then merged
        like any other pieces, so ``chunk_overlap`` applies inside long words too.
        """
        if self.tokenizer is None:
            return [(i, i + 1, 1) for i in range(start, end)]
        cuts = [start + b for b in self.tokenizer.boundaries(text[start:end])]
        atoms: list[tuple[int, int, int]] = []
        for a, b in itertools.pairwise(cuts):
            size = count(a, b)
            if size > self.chunk_size and b - a > 1:
                atoms.extend((c, c + 1, count(c, c + 1)) for c in range(a, b))
            else:
                atoms.append((a, b, size))
        return atoms

    def _cut_anywhere(self, text: str, start: int, end: int, count: Count) -> list[tuple[int, int]]:
        """Chunks of ``text[start:end]`` merged from its atoms (the ``""`` separator).

        A stretch longer than :data:`ATOM_SECTION_CHARS` is taken a section at a time, so that
        its atoms (a few Python objects per token) never all exist at once: each section's last
        chunk is given back and the next section starts where it started, so only where a
        section ends can a chunk break differ from merging the whole stretch at once.
        """
        out: list[tuple[int, int]] = []
        while True:
            stop = min(end, start + ATOM_SECTION_CHARS)
            chunks = self._merge(text, self._atoms(text, start, stop, count), 0, cut=True, count=count)
            if stop < end and len(chunks) >= 2 and chunks[-1][0] > start:
                chunks, start = chunks[:-1], chunks[-1][0]
            else:
                start = stop
            out.extend(c for c in chunks if not out or out[-1] != c)
            if start >= end:
                return out

    def _merge(
        self,
        text: str,
        pieces: list[tuple[int, int, int]],
        gap: int | Sequence[int],
        *,
        cut: bool,
        count: Count,
    ) -> list[tuple[int, int]]:
        """Greedily merge consecutive pieces into chunks of at most ``chunk_size`` units.

        Args:
            text: The whole document.
            pieces: ``(start, end, length)`` in order; each piece fits ``chunk_size``.
            gap: The length of what separates two consecutive pieces (0 when they touch), or
                per piece the length of what separates it from the one before (a separator
                that is a regular expression: its matches differ in length).
            cut: Whether a chunk may be cut anywhere safe (``""`` is among the separators).
            count: ``count(a, b)``, the exact length of ``text[a:b]`` (:meth:`_counter`).

        Returns:
            Stripped, non-empty ``(start, end)`` intervals. A chunk's exact length is measured on
            its whole stripped text; when the running sum of piece lengths underestimated it,
            pieces are given back from the end until it fits. A single piece can still be too long
            once stripped (``" wonderful"`` is 1 cl100k token, ``"wonderful"`` is 3); with ``cut``
            it is then cut into atoms like any oversized text. Up to ``chunk_overlap`` units of
            trailing pieces start the next chunk, as in LangChain's ``_merge_splits``.
        """
        out: list[tuple[int, int]] = []
        lo, n = 0, len(pieces)
        gaps = None if isinstance(gap, int) else gap
        g = gap if isinstance(gap, int) else 0
        while lo < n:
            hi, total = lo + 1, pieces[lo][2]
            while hi < n and total + (g if gaps is None else gaps[hi]) + pieces[hi][2] <= self.chunk_size:
                total += (g if gaps is None else gaps[hi]) + pieces[hi][2]
                hi += 1
            while True:
                start, end = strip(text, pieces[lo][0], pieces[hi - 1][1])
                fits = start == end or count(start, end) <= self.chunk_size
                if fits or hi - lo == 1:
                    break
                hi -= 1
            if not fits and cut and end - start > 1:
                # Terminates: the atoms of [start, end) are shorter spans, or single code points.
                out.extend(self._cut_anywhere(text, start, end, count))
            elif start < end and (not out or out[-1] != (start, end)):
                # (A carried overlap plus whitespace strips to the previous chunk: no repeat.)
                out.append((start, end))
            if hi >= n:
                break
            lo = self._carried_start(pieces, lo, hi, gap)
        return out

    def _carried_start(self, pieces: list[tuple[int, int, int]], lo: int, hi: int, gap: int | Sequence[int]) -> int:
        """The first piece of the chunk after ``pieces[lo:hi]``: trailing pieces worth at most
        ``chunk_overlap`` are carried into it, always leaving room for ``pieces[hi]`` and always
        moving forward (``lo < result <= hi``). ``gap`` as :meth:`_merge`'s."""
        nxt, carried = hi, 0
        before = (lambda k: gap) if isinstance(gap, int) else gap.__getitem__
        while nxt - 1 > lo:
            size = pieces[nxt - 1][2] + (before(nxt) if nxt < hi else 0)
            if carried + size > self.chunk_overlap or (carried + size + before(hi) + pieces[hi][2] > self.chunk_size):
                break
            carried += size
            nxt -= 1
        return nxt
