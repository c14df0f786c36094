"""``TokenTextSplitter``: windows of ``chunk_size`` tokens sharing ``chunk_overlap``, cut safely.

Beam-free. Offsets are code points; sizes are tokens of the splitter's tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from transforms.chunkers.base import Piece
from transforms.chunkers.text.source import TextSplitter
from transforms.chunkers.text.spans import check_sizes, fast_piece, next_cut, slice_counter
from transforms.tokenizers import SliceCounter, Tokenizer

__all__ = ["TokenTextSplitter"]


class TokenTextSplitter(TextSplitter):
    """Windows of ``chunk_size`` tokens with ``chunk_overlap`` tokens shared, cut at safe offsets.

    Encodes the document once; each window's character interval comes from per-token code-point
    offsets (a running sum of a per-token table, never decoding), so a cut never falls inside a
    code point (no U+FFFD, unlike splitters that decode token slices). A window's text is counted
    exactly and shortened while it has more than ``chunk_size`` tokens; with cl100k_base the
    count of a window between two token starts where the tokenization cannot change is the
    difference of their token indices (no encoding), other windows are counted with a few
    characters encoded at their edges (``SliceCounter``). A step that ties several code points
    together (a token that starts inside a code point) is cut between code points when it does
    not fit. Consecutive windows share up to ``chunk_overlap`` steps (tokens of the whole
    encoding with cl100k_base; none after a window cut between code points), fewer when sharing
    them would leave no room to move past the previous window. Windows are verbatim slices, not
    stripped; whitespace-only windows are skipped.

    Args:
        chunk_size: Maximum tokens per chunk. Default 4000, as LangChain's ``TokenTextSplitter``.
        chunk_overlap: Tokens shared by consecutive windows. Default 200, as LangChain's.
        tokenizer: A :class:`~transforms.tokenizers.TiktokenTokenizer` or any tokenizer with
            ``boundaries``.

    Raises:
        ValueError: Sizes out of range (as :class:`CharacterTextSplitter`) or no tokenizer.
    """

    def __init__(self, *, chunk_size: int = 4000, chunk_overlap: int = 200, tokenizer: Tokenizer | None = None) -> None:
        check_sizes(chunk_size, chunk_overlap)
        if tokenizer is None:
            raise ValueError("TokenTextSplitter needs a tokenizer, got None")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.tokenizer = tokenizer

    @classmethod
    def budget_parameter(cls, params: Mapping[str, Any]) -> str | None:
        """``chunk_size``: always tokens."""
        return "chunk_size"

    def to_dict(self) -> dict[str, Any]:
        return {"chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap}

    def split_text(self, text: str) -> Iterator[Piece]:
        """Yield token windows of ``text`` as verbatim slices with offsets.

        With a tokenizer that gives a ``SliceCounter`` (cl100k_base), :meth:`_windows`. With
        another, its token starts (``boundaries``) are read once and each window is counted on its
        own; the starts stay numpy arrays, a block of a few windows at a time, of which only the
        entries a window looks at become Python ints (no per-token Python object).
        """
        make = getattr(self.tokenizer, "slice_counter", None)
        if make is not None:
            yield from self._windows(text, make(text))
        else:
            yield from self._plain_windows(text)

    def _plain_windows(self, text: str) -> Iterator[Piece]:
        """:meth:`split` for a tokenizer without a ``SliceCounter``: its token starts, read a block
        at a time, and each window counted on its own."""
        import numpy as np

        tokenizer, size = self.tokenizer, self.chunk_size
        count = slice_counter(tokenizer, text)
        all_cuts = np.asarray(tokenizer.boundaries(text), dtype=np.int64)
        total = len(all_cuts)
        need = size + 2
        cuts = _Cuts(np.zeros(0, dtype=np.int64))  # token starts (plus cuts between code points) still ahead
        taken = 0  # entries of all_cuts already moved into cuts

        def refill(i: int) -> int:
            """Keep at least ``need`` cuts from ``i`` on (or all that are left); return ``i``'s new index."""
            nonlocal taken
            while len(cuts) - i < need and taken < total:
                stop = taken + max(4 * need, 1 << 16)
                more = all_cuts[taken:stop]
                cuts.array = np.concatenate((cuts.array[i:], more))
                taken, i = min(stop, total), 0
            return i

        i = refill(0)
        while i < len(cuts) - 1:
            j = min(i + size, len(cuts) - 1)
            a = cuts[i]
            j = next_cut(count, cuts, i, j, size, None)  # may insert a cut into cuts
            b = cuts[j]
            window = text[a:b]
            if not window.isspace():
                yield Piece(text=window, start_offset=a, end_offset=b)
            if j >= len(cuts) - 1:
                break
            # Share up to chunk_overlap steps, but only as many as still leave room for the next
            # step: a window that cannot reach past this one would repeat a part of it.
            nxt = max(j - self.chunk_overlap, i + 1)
            if nxt < j:
                after = cuts[j + 1]
                while nxt < j and count(cuts[nxt], after) > size:
                    nxt += 1
            i = refill(nxt)

    def _windows(self, text: str, counter: SliceCounter) -> Iterator[Piece]:
        """:meth:`split` with a :class:`SliceCounter`, in token indices of the whole encoding.

        A window from token ``ti`` (offset ``a``) ends where token ``ti + chunk_size`` starts
        (moved back to a token that starts a code point). When both ends are token starts where
        cl100k_base's tokenization cannot change (``SliceCounter.safe_token_start``: on
        ``docs.parquet`` all but about 1.4% of window ends), its exact count is the difference of
        the token indices, with no encoding at all; else it is counted (``SliceCounter.count``).
        A window that does not fit is cut by :func:`next_cut` over its
        own token starts (bisection, and between code points when a step alone is too long); a
        window that ends between code points is followed by one that starts there, without
        overlap. The next window starts ``chunk_overlap`` tokens before the end, or later when
        those tokens and the next one would not fit ``chunk_size``.
        """
        n, size, overlap = len(text), self.chunk_size, self.chunk_overlap
        ends, begins, total = counter.ends, counter.begins, len(counter.ends)
        count, safe = counter.count, counter.safe_token_start

        def start_of(t: int) -> int:
            return int(ends[t - 1]) if t > 0 else 0

        a = ti = 0  # the window's start, and the first token that ends after it
        at_start = True  # whether a is where token ti starts
        a_safe: bool | None = True  # safe(a) when known (a is where the previous window ended), else None
        last = 0  # where the previous window ended: a window must reach past it
        while a < n:
            tj = ti + size
            if tj >= total:
                tj, b = total, n
            else:
                if begins is not None:
                    while tj > ti and not begins[tj]:
                        tj -= 1
                b = start_of(tj)
            b_safe: bool | None = None
            if b <= a or b <= last:
                fits = False  # (b <= last: the local count allows more than the whole encoding)
            elif at_start and (safe(a) if a_safe is None else a_safe) and (b_safe := safe(b)):
                fits = True  # tj - ti <= size tokens, exactly
            else:
                fits = count(a, b) <= size
            if not fits:
                b, b_safe = self._cut_window(counter, a, ti), None
                tj = counter.tokens_before(b)
            window = text[a:b]
            if not window.isspace():
                yield fast_piece(window, a, b)
            if b >= n:
                return
            last = b
            nt = self._overlap_token(counter, ti, tj, start_of) if overlap and fits else tj
            if nt == tj and not fits:
                a, ti = b, tj
                at_start = b == start_of(tj) and (begins is None or tj >= total or bool(begins[tj]))
            else:
                a, ti, at_start = start_of(nt), nt, True
            a_safe = b_safe if a == b else None

    def _cut_window(self, counter: SliceCounter, a: int, ti: int) -> int:
        """The end of the longest window from ``a`` (where token ``ti`` ends or starts) that fits
        ``chunk_size``, over its own token starts (:func:`next_cut`: between code points when a
        step alone is too long; a single code point that needs more is kept whole)."""
        size, n = self.chunk_size, len(counter.text)
        # The next chunk_size token starts that start a code point (as in the other path).
        # (A code point is at most 4 tokens, so 4 more tokens than cuts hold one.)
        ahead = counter.boundaries(ti + 1, ti + 2 * size + 5)
        ahead = ahead[ahead > a][:size]
        cuts = [a, *(int(c) for c in ahead)] if len(ahead) else [a, n]
        return cuts[next_cut(counter.count, cuts, 0, len(cuts) - 1, size)]

    def _overlap_token(self, counter: SliceCounter, ti: int, tj: int, start_of: Callable[[int], int]) -> int:
        """The token where the window after tokens ``ti..tj - 1`` starts: up to ``chunk_overlap``
        tokens before ``tj``, but leaving room for the next token (a window that cannot reach
        past this one would repeat a part of it); on a token that starts a code point."""
        begins, total, size = counter.begins, len(counter.ends), self.chunk_size
        nt = max(tj - self.chunk_overlap, ti + 1)
        if begins is not None:
            while nt < tj and not begins[nt]:
                nt += 1
        if nt < tj:
            t = tj + 1
            if begins is not None:
                while t < total and not begins[t]:
                    t += 1
            after = start_of(t) if t < total else len(counter.text)
            while nt < tj and counter.count(start_of(nt), after) > size:
                nt += 1
                if begins is not None:
                    while nt < tj and not begins[nt]:
                        nt += 1
        return nt


class _Cuts:
    """Ascending cut offsets held as a numpy array, read as Python ints one entry at a time.

    What :func:`next_cut` needs of a list (``len``, indexing, ``insert``), so that a window
    converts only the few entries it looks at; an insert (a cut between code points, rare)
    copies the array.
    """

    __slots__ = ("array", "inserted")

    def __init__(self, array) -> None:
        self.array = array
        self.inserted = False  # whether insert() was ever called

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, k: int) -> int:
        return int(self.array[k])

    def insert(self, k: int, value: int) -> None:
        import numpy as np

        self.array = np.insert(self.array, k, value)
        self.inserted = True
