"""Plain-text splitters: one separator, a separator hierarchy, and token windows.

Beam-free. Each yields verbatim slices of the document (``content[start:end] == text``) with
code-point offsets. Lengths are measured either in characters (code points) or in tokens of an
injected :class:`~transforms.tokenizers.Tokenizer` (``length="tokens"``: the token-sized
splitting known from LangChain's ``from_tiktoken_encoder``, but with every chunk's count exact).

The separator semantics follow LangChain's ``CharacterTextSplitter`` and
``RecursiveCharacterTextSplitter`` (``langchain_text_splitters/character.py``): separators are
literal strings, the recursive splitter keeps each separator at the start of the piece that
follows it, and chunks are stripped of surrounding whitespace. In characters both merge pieces
greedily up to ``chunk_size`` with up to ``chunk_overlap`` carried over, and the recursive splitter
gives exactly LangChain's chunks. In tokens the recursive splitter does not merge pieces: it
encodes the document once and, from each chunk's start, searches back from where the budget runs
out for the highest-priority separator (see ``RecursiveCharacterTextSplitter``), so its chunk
boundaries differ from LangChain's (whose token mode sums separately counted pieces and is
inexact anyway). The departures common to both units: a chunk's length is the exact length of
its whole stripped text, never a sum of separately measured pieces, and a chunk that is still
too long is cut further when ``""`` allows it, so a token-sized chunk never exceeds
``chunk_size`` unless it is one code point that alone needs more tokens; chunks are verbatim
slices (``CharacterTextSplitter`` keeps a doubled separator inside a chunk instead of dropping
the empty piece); and a chunk equal to the one before it is not repeated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from transforms.chunkers.base import Chunker, Piece
from transforms.documents import Document
from transforms.tokenizers import SliceCounter, Tokenizer

__all__ = ["CharacterTextSplitter", "RecursiveCharacterTextSplitter", "TokenTextSplitter"]

_PLAIN_FORMATS = frozenset({"html", "markdown", "rst", "text"})
_LENGTHS = ("characters", "tokens")
DEFAULT_SEPARATORS = ("\n\n", "\n", " ", "")
#: Longest stretch (code points) cut into atoms at once by the ``""`` separator; see
#: ``_MergingSplitter._cut_anywhere``.
ATOM_SECTION_CHARS = 1 << 16


def _check_sizes(chunk_size: Any, chunk_overlap: Any) -> None:
    for name, value in (("chunk_size", chunk_size), ("chunk_overlap", chunk_overlap)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
    if chunk_overlap < 0:
        raise ValueError(f"chunk_overlap must be >= 0, got {chunk_overlap}")
    if chunk_overlap >= chunk_size:
        raise ValueError(f"chunk_overlap must be smaller than chunk_size, got {chunk_overlap} >= {chunk_size}")


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    """Narrow ``[start, end)`` past leading and trailing whitespace of ``text``."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _piece(text: str, start: int, end: int) -> Piece:
    """``Piece(text=text, start_offset=start, end_offset=end)``, built without the frozen
    dataclass's ``__init__`` (a field at a time, with a ``default_factory``): the same object,
    about 1.5 microseconds less for each of the tens of thousands of chunks of a corpus."""
    piece = object.__new__(Piece)
    piece.__dict__.update(
        text=text,
        start_offset=start,
        end_offset=end,
        embedding_text=None,
        headings=(),
        page_no=None,
        metadata={},
        content_format=None,
    )
    return piece


def _skip_space(text: str, start: int, end: int) -> int:
    """The first offset in ``[start, end)`` that is not whitespace, or ``end``."""
    while start < end and text[start].isspace():
        start += 1
    return start


def _token_index(tokenizer: Tokenizer, text: str):
    """One encoding of ``text``, with :class:`SliceCounter`'s reading methods.

    ``ends``: per token, the code-point offset where it ends (non-decreasing numpy array);
    ``tokens_before(offset)``: how many tokens end at or before ``offset``; ``count(a, b)``: the
    exact tokens of ``text[a:b]``; ``safe_cut``, ``count_from`` and ``tokens_from`` as
    :class:`SliceCounter`'s. With cl100k_base the :class:`SliceCounter` itself (a slice costs a
    few characters of encoding at its edges); a tokenizer with ``token_ends`` (UTF-8 bytes) or
    only ``boundaries`` gives a :class:`_PlainIndex`, which counts each slice on its own.
    """
    import numpy as np

    make = getattr(tokenizer, "slice_counter", None)
    if make is not None:
        return make(text)
    token_ends = getattr(tokenizer, "token_ends", None)
    if token_ends is not None:
        ends = np.asarray(token_ends(text), dtype=np.int64)
    else:
        ends = np.asarray(list(tokenizer.boundaries(text))[1:], dtype=np.int64)
    return _PlainIndex(tokenizer, text, ends)


class _PlainIndex:
    """:func:`_token_index` for a tokenizer without ``slice_counter``: the token ends, and every
    slice counted on its own (``safe_cut`` is never true, so ``count_from`` is ``count``)."""

    def __init__(self, tokenizer: Tokenizer, text: str, ends) -> None:
        self.text, self.ends, self._count = text, ends, tokenizer.count

    def tokens_before(self, offset: int) -> int:
        return int(self.ends.searchsorted(offset, "right"))

    def tokens_from(self, t: int, offset: int) -> int:
        return self.tokens_before(offset)

    def count(self, a: int, b: int) -> int:
        return self._count(self.text[a:b])

    def safe_cut(self, p: int) -> bool:
        return False

    def count_from(self, a: int, tokens_a: int, a_safe: bool, b: int) -> tuple[int, int]:
        return self._count(self.text[a:b]), tokens_a


def _slice_counter(tokenizer: Tokenizer, text: str) -> Callable[[int, int], int]:
    """``count(a, b)``: the exact tokens of ``text[a:b]``.

    With a tokenizer that offers ``slice_counter`` (cl100k_base) the document is encoded once and
    a slice costs a few characters of encoding at its edges (``transforms.tokenizers.SliceCounter``);
    otherwise every slice is encoded on its own.
    """
    make = getattr(tokenizer, "slice_counter", None)
    if make is not None:
        return make(text).count
    count = tokenizer.count
    return lambda a, b: count(text[a:b])


def _piece_counts(count: Callable[[int, int], int], cuts: Sequence[int]) -> list[int]:
    """``[count(cuts[k], cuts[k + 1]) for each k]``, in one call when ``count`` is a
    ``SliceCounter``'s (its ``counts``: the same exact numbers, cheaper per piece)."""
    owner = getattr(count, "__self__", None)
    if isinstance(owner, SliceCounter) and count == owner.count:
        return owner.counts(cuts)
    return [count(a, b) for a, b in zip(cuts, cuts[1:])]


def _longest_fit(
    count: Callable[[int, int], int], cuts: Sequence[int], i: int, j: int, max_tokens: int, hint: int | None = None
) -> int:
    """Return the largest ``k`` in ``(i, j]`` with ``count(cuts[i], cuts[k]) <= max_tokens``.

    Tries ``j`` first (the usual answer when cuts are token starts), then ``hint`` (where the
    whole text's encoding says the budget runs out): when ``hint`` fits and ``hint + 1`` does
    not, that is the answer bisection would find. Else bisects. Returns ``i + 1`` when even one
    step is too long, so callers always move forward.
    """
    a = cuts[i]
    if count(a, cuts[j]) <= max_tokens:
        return j
    lo, hi = i + 1, j  # invariant: the answer is in [lo, hi); hi does not fit
    if hint is not None and lo <= hint < hi - 1:
        if count(a, cuts[hint]) <= max_tokens:
            if count(a, cuts[hint + 1]) > max_tokens:
                return hint
            lo = hint + 1
        else:
            hi = hint
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count(a, cuts[mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid
    return lo


def _next_cut(
    count: Callable[[int, int], int], cuts: list[int], i: int, j: int, max_tokens: int, hint: int | None = None
) -> int:
    """Return the largest ``k`` in ``(i, j]`` such that ``text[cuts[i]:cuts[k]]`` fits ``max_tokens``.

    ``cuts`` are token starts. When even the first step is too long and spans several code
    points (a token that starts inside a code point ties them together, e.g. Hangul or CJK under
    cl100k_base), the step is cut at the longest code-point prefix that fits, and that offset is
    inserted into ``cuts`` in place. Only a single code point that needs more than ``max_tokens``
    tokens comes back whole (``k = i + 1`` with ``count > max_tokens``); validation rejects it.
    """
    k = _longest_fit(count, cuts, i, j, max_tokens, hint)
    a, b = cuts[i], cuts[k]
    if k == i + 1 and b - a > 1 and count(a, b) > max_tokens:
        points = list(range(a, b + 1))
        m = _longest_fit(count, points, 0, len(points) - 2, max_tokens)
        cuts.insert(i + 1, points[m])
    return k


class _MergingSplitter(Chunker):
    """Shared length measure, ``""`` atoms and greedy merge of the two separator splitters."""

    accepted_content_formats = _PLAIN_FORMATS

    def __init__(self, *, chunk_size: int, chunk_overlap: int, length: str, tokenizer: Tokenizer | None) -> None:
        _check_sizes(chunk_size, chunk_overlap)
        if length not in _LENGTHS:
            raise ValueError(f"length must be one of {_LENGTHS}, got {length!r}")
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

    def _counter(self, text: str) -> Callable[[int, int], int]:
        """``count(a, b)``: the exact length of ``text[a:b]`` in this splitter's unit."""
        if self.tokenizer is None:
            return lambda a, b: b - a
        return _slice_counter(self.tokenizer, text)

    def _atoms(self, text: str, start: int, end: int, count: Callable[[int, int], int]) -> list[tuple[int, int, int]]:
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
        for a, b in zip(cuts, cuts[1:]):
            size = count(a, b)
            if size > self.chunk_size and b - a > 1:
                atoms.extend((c, c + 1, count(c, c + 1)) for c in range(a, b))
            else:
                atoms.append((a, b, size))
        return atoms

    def _cut_anywhere(self, text: str, start: int, end: int, count: Callable[[int, int], int]) -> list[tuple[int, int]]:
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
        gap: int,
        *,
        cut: bool,
        count: Callable[[int, int], int],
    ) -> list[tuple[int, int]]:
        """Greedily merge consecutive pieces into chunks of at most ``chunk_size`` units.

        Args:
            text: The whole document.
            pieces: ``(start, end, length)`` in order; each piece fits ``chunk_size``.
            gap: The length of what separates two consecutive pieces (0 when they touch).
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
        while lo < n:
            hi, total = lo + 1, pieces[lo][2]
            while hi < n and total + gap + pieces[hi][2] <= self.chunk_size:
                total += gap + pieces[hi][2]
                hi += 1
            while True:
                start, end = _strip(text, pieces[lo][0], pieces[hi - 1][1])
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
            # Carry trailing pieces worth at most chunk_overlap into the next chunk, but always
            # leave room for the next piece and always move forward.
            nxt, carried = hi, 0
            while nxt - 1 > lo:
                size = pieces[nxt - 1][2] + (gap if nxt < hi else 0)
                if carried + size > self.chunk_overlap or (carried + size + gap + pieces[hi][2] > self.chunk_size):
                    break
                carried += size
                nxt -= 1
            lo = nxt
        return out


class CharacterTextSplitter(_MergingSplitter):
    """Split on one literal separator only, then merge pieces up to ``chunk_size``.

    Never descends to a smaller separator: a piece longer than ``chunk_size`` becomes one chunk
    as it is (and the job's validation rejects it if it exceeds the token budget). Right when the
    source's own structure guarantees short pieces at one boundary.

    Args:
        chunk_size: Maximum chunk length, in code points or in tokens (see ``length``).
        chunk_overlap: Maximum length carried from the end of one chunk into the next, same unit.
        separator: The literal string to split on; ``""`` cuts anywhere safe (between code
            points, or between tokens for ``length="tokens"``).
        length: ``"characters"`` (code points) or ``"tokens"`` (of ``tokenizer``).
        tokenizer: The tokenizer that measures ``length="tokens"``.

    Raises:
        ValueError: ``chunk_size <= 0``, ``chunk_overlap < 0`` or ``>= chunk_size``, a
            non-string separator, an unknown ``length``, or ``length="tokens"`` without a tokenizer.
    """

    def __init__(
        self,
        *,
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
        separator: str = "\n\n",
        length: str = "characters",
        tokenizer: Tokenizer | None = None,
    ) -> None:
        super().__init__(chunk_size=chunk_size, chunk_overlap=chunk_overlap, length=length, tokenizer=tokenizer)
        if not isinstance(separator, str):
            raise ValueError(f"separator must be a string, got {separator!r}")
        self.separator = separator

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "separator": self.separator,
            "length": self.length,
        }

    def split(self, document: Document) -> Iterator[Piece]:
        """Yield merged runs of separator-delimited pieces as verbatim slices."""
        text = document.content
        sep = self.separator
        count = self._counter(text)
        if sep:
            bounds, pos = [], 0
            while (hit := text.find(sep, pos)) != -1:
                bounds.append((pos, hit))
                pos = hit + len(sep)
            bounds.append((pos, len(text)))
            pieces = [(s, e, count(s, e)) for s, e in bounds if s < e]
        else:
            pieces = self._atoms(text, 0, len(text), count)
        gap = self._measure(sep) if sep else 0
        for start, end in self._merge(text, pieces, gap, cut=not sep, count=count):
            yield Piece(text=text[start:end], start_offset=start, end_offset=end)


class RecursiveCharacterTextSplitter(_MergingSplitter):
    """Split on paragraphs, then lines, then words, then anywhere safe, up to ``chunk_size``.

    Chunks break at a blank line when they can and inside a word only when they must. ``""`` as a
    separator means "cut anywhere": at code points for ``length="characters"``, where a token
    starts for ``length="tokens"``. Every chunk is a verbatim, whitespace-stripped slice of the
    source; only whitespace between chunks is left out.

    Two algorithms, by unit:

    * ``length="characters"``: LangChain's (``_split_text`` and ``_merge_splits``): split on the
      first separator found in the text, recurse into pieces still too long, merge pieces greedily
      up to ``chunk_size`` code points carrying up to ``chunk_overlap`` into the next chunk. The
      output is LangChain's, chunk for chunk.
    * ``length="tokens"``: search back. The document is encoded once. From a chunk's start, the
      whole encoding says where ``chunk_size`` tokens end; the chunk ends at the last occurrence,
      before that point, of the first separator in ``separators`` order that occurs there (the
      separator goes to the next chunk; ``""`` cuts at that point itself). The chunk, stripped,
      is counted exactly (with cl100k_base usually as a difference of token indices plus a few
      characters encoded at its edges, ``SliceCounter``): about one count per chunk. When it is
      over budget the point moves back by the excess and the search is repeated. With ``""``, a
      chunk that nothing else fits is cut where its own tokens start (between code points for a
      token that ties several; a single code point that alone needs more tokens is kept whole);
      without ``""``, the piece up to the nearest separator is kept whole, over budget (as in
      characters; validation rejects it). ``chunk_overlap`` (tokens): the next chunk starts at
      the first occurrence of the first separator, in ``separators`` order, within the last
      ``chunk_overlap`` tokens of the chunk (``""``: where those tokens start), provided the
      shared text, stripped, counts at most ``chunk_overlap`` tokens; else right after the chunk.
      A chunk that starts inside the previous one ends after it, or starts after it instead.
      The boundaries differ from LangChain's ``from_tiktoken_encoder`` (whose merge sums
      separately counted pieces: inexact, and four times slower); this is the prototype
      described in ``../shared/design/PLATFORM_NOTES.md`` ("How close exact chunking gets to
      the tokenizer").

    Args:
        chunk_size: Maximum chunk length, in code points or in tokens (see ``length``).
        chunk_overlap: Maximum length shared by consecutive chunks, same unit (see above).
        separators: Literal separators in priority order; default ``["\\n\\n", "\\n", " ", ""]``.
        length: ``"characters"`` (code points) or ``"tokens"`` (of ``tokenizer``).
        tokenizer: The tokenizer that measures ``length="tokens"``.

    Raises:
        ValueError: As :class:`CharacterTextSplitter`, or ``separators`` empty or not strings.
    """

    def __init__(
        self,
        *,
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
        separators: Sequence[str] | None = None,
        length: str = "characters",
        tokenizer: Tokenizer | None = None,
    ) -> None:
        super().__init__(chunk_size=chunk_size, chunk_overlap=chunk_overlap, length=length, tokenizer=tokenizer)
        separators = list(DEFAULT_SEPARATORS if separators is None else separators)
        if not separators or not all(isinstance(s, str) for s in separators):
            raise ValueError(f"separators must be a non-empty list of strings, got {separators!r}")
        self.separators = separators

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "separators": list(self.separators),
            "length": self.length,
        }

    def split(self, document: Document) -> Iterator[Piece]:
        """Yield chunks of ``document.content`` as verbatim slices with offsets."""
        text = document.content
        if self.tokenizer is not None:
            for start, end in self._search_back(text):
                yield _piece(text[start:end], start, end)
            return
        for start, end in self._split(text, 0, len(text), self.separators, self._counter(text)):
            yield Piece(text=text[start:end], start_offset=start, end_offset=end)

    def _search_back(self, text: str) -> Iterator[tuple[int, int]]:
        """Token-sized chunks of ``text``: where the budget runs out, search back for a separator.

        The document is encoded once (:func:`_token_index`). From a chunk's start ``s`` (never
        whitespace), the whole encoding says where ``chunk_size`` tokens end (``limit``); the
        chunk ends at the last occurrence in ``(s, limit]`` of the first separator in
        ``separators`` order that occurs there, the separator going to the next chunk (``""``:
        at ``limit`` itself). The stripped chunk is then counted exactly, once as a rule; when
        it is over budget (the whole encoding's tokens at the chunk's edges differ from the
        chunk's own), ``limit`` moves back by the excess and the search is done again. If no
        cut after ``s`` fits: with ``""``, the longest prefix of the local encoding that fits
        (:func:`_next_cut`, a single code point kept whole when it alone needs more); without,
        the piece up to the nearest separator, kept whole (over budget, validation rejects it).

        ``chunk_overlap``: the next chunk starts at the first occurrence of the first separator
        (in ``separators`` order) found within the last ``chunk_overlap`` tokens of the chunk
        (``""``: where those tokens start), provided the shared text, stripped, counts at most
        ``chunk_overlap`` tokens exactly; else it starts after the chunk. A chunk that starts in
        the previous one must end past it; when it cannot, it starts after the previous chunk.
        So starts and ends strictly increase, and only whitespace between chunks is left out.
        """
        n = len(text)
        size, overlap = self.chunk_size, self.chunk_overlap
        separators = self.separators
        anywhere = "" in separators
        searched = list(separators[: separators.index("")] if anywhere else separators)
        index = _token_index(self.tokenizer, text)
        ends, tokens_before, count = index.ends, index.tokens_before, index.count
        count_from, tokens_from, safe = index.count_from, index.tokens_from, index.safe_cut
        total = len(ends)
        s = _skip_space(text, 0, n)
        ts = tokens_before(s)  # tokens_before(s), kept up to date with s
        floor = after = 0  # the previous chunk's end, and where the text after it starts
        while s < n:
            # A cut must lie after lo: after s, and after the first non-space past the previous chunk.
            lo = s if s >= floor else _skip_space(text, floor, n)
            t = ts + size - 1
            limit = n if t >= total else int(ends[t])
            s_safe = text[s - 1] == "\n" or safe(s)  # (s is not whitespace: after a line feed is safe)
            cut = first = None
            while limit > lo:
                if limit >= n:
                    c = n
                else:
                    c = limit if anywhere else None
                    for sep in searched:
                        hit = text.rfind(sep, lo + 1, min(n, limit + len(sep)))
                        if hit != -1:
                            c = hit
                            break
                    if c is None:
                        break
                if first is None:
                    first = c
                # s is not whitespace (and c > s): only the end is stripped.
                b = c
                while text[b - 1].isspace():
                    b -= 1
                k, tb = count_from(s, ts, s_safe, b)
                if k <= size:
                    cut = c
                    break
                t = tokens_before(c - 1) - (k - size)
                limit = int(ends[t]) if t >= 0 else -1
            if cut is None:
                if s < floor:  # started inside the previous chunk: start after it instead
                    s = _skip_space(text, after, n)
                    ts = tokens_before(s)
                    continue
                if anywhere:
                    cut = self._local_fit(text, s, first if first is not None else n, count)
                else:
                    cut = min((h for sep in searched if (h := text.find(sep, s + 1)) != -1), default=n)
                b, tb = _strip(text, s, cut)[1], None
            yield s, b
            floor, after = b, cut
            nxt = cut
            if overlap and cut < n:
                shared = self._overlap_start(text, s, b, searched, anywhere, ends, tokens_before, count)
                if shared is not None:
                    nxt, tb = shared, None
            s = _skip_space(text, nxt, n)
            # (From where the chunk's tokens were counted to, a line break or two away; else searched.)
            ts = tokens_before(s) if tb is None else tokens_from(tb, s)

    def _overlap_start(self, text, a, b, searched, anywhere, ends, tokens_before, count) -> int | None:
        """Where the chunk after ``text[a:b]`` starts inside it (``chunk_overlap``), or ``None``."""
        overlap = self.chunk_overlap
        t = tokens_before(b) - overlap - 1
        lo = int(ends[t]) if t >= 0 else 0
        while True:
            lo = max(lo, a + 1)
            if lo >= b:
                return None
            p = None
            for sep in searched:
                hit = text.find(sep, lo, b)
                if hit != -1:
                    p = hit
                    break
            if p is None:
                if not anywhere:
                    return None
                p = lo
            q = _skip_space(text, p, b)
            if q >= b:
                return None
            k = count(q, b)
            if k <= overlap:
                return p
            t = tokens_before(q) + (k - overlap) - 1
            lo = max(int(ends[t]) if t < len(ends) else b, q + 1)

    def _local_fit(self, text: str, s: int, end: int, count: Callable[[int, int], int]) -> int:
        """The end of the longest prefix of ``text[s:end]`` that fits ``chunk_size`` once stripped,
        cut where a token of its own encoding starts (or between code points, see
        :func:`_next_cut`); at least one step, so it always moves forward."""
        cuts = [s + c for c in self.tokenizer.boundaries(text[s:end])]
        k = _next_cut(count, cuts, 0, len(cuts) - 1, self.chunk_size)
        while k > 1 and count(*_strip(text, s, cuts[k])) > self.chunk_size:
            k -= 1
        return cuts[k]

    def _split(
        self, text: str, start: int, end: int, separators: Sequence[str], count: Callable[[int, int], int]
    ) -> list[tuple[int, int]]:
        """Chunk intervals of ``text[start:end]``, using ``separators`` in order (LangChain's ``_split_text``)."""
        # As LangChain: the first separator found in the text; when none is, the last one (which
        # then splits nothing, so an oversized text is kept whole unless "" is in the list).
        sep, rest = separators[-1], []
        for i, candidate in enumerate(separators):
            if candidate == "" or text.find(candidate, start, end) != -1:
                sep, rest = candidate, separators[i + 1 :]
                break
        cut = "" in separators
        if sep == "":
            return self._cut_anywhere(text, start, end, count)
        # Pieces keep their separator at the start: [start, hit1), [hit1, hit2), ..., [hitN, end).
        cuts, pos = [start], start
        while (hit := text.find(sep, pos, end)) != -1:
            if hit > cuts[-1]:
                cuts.append(hit)
            pos = hit + len(sep)
        cuts.append(end)
        out: list[tuple[int, int]] = []
        good: list[tuple[int, int, int]] = []
        for s, e, size in zip(cuts, cuts[1:], _piece_counts(count, cuts)):
            if size <= self.chunk_size:
                good.append((s, e, size))
                continue
            if good:
                out.extend(self._merge(text, good, 0, cut=cut, count=count))
                good = []
            if rest:
                out.extend(self._split(text, s, e, rest, count))
            else:
                out.extend(self._merge(text, [(s, e, size)], 0, cut=False, count=count))
        if good:
            out.extend(self._merge(text, good, 0, cut=cut, count=count))
        return out


class TokenTextSplitter(Chunker):
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

    accepted_content_formats = _PLAIN_FORMATS

    def __init__(self, *, chunk_size: int = 4000, chunk_overlap: int = 200, tokenizer: Tokenizer | None = None) -> None:
        _check_sizes(chunk_size, chunk_overlap)
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

    def split(self, document: Document) -> Iterator[Piece]:
        """Yield token windows of ``document.content`` as verbatim slices with offsets.

        With a tokenizer that gives a ``SliceCounter`` (cl100k_base), :meth:`_windows`. With
        another, its token starts (``boundaries``) are read once and each window is counted on its
        own; the starts stay numpy arrays, a block of a few windows at a time, of which only the
        entries a window looks at become Python ints (no per-token Python object).
        """
        import numpy as np

        text = document.content
        tokenizer, size = self.tokenizer, self.chunk_size
        make = getattr(tokenizer, "slice_counter", None)
        if make is not None:
            yield from self._windows(text, make(text))
            return
        # A tokenizer without a SliceCounter: its token starts, and each window counted on its own.
        count = _slice_counter(tokenizer, text)
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
            j = _next_cut(count, cuts, i, j, size, None)  # may insert a cut into cuts
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
        A window that does not fit is cut by :func:`_next_cut` over its
        own token starts (bisection, and between code points when a step alone is too long); a
        window that ends between code points is followed by one that starts there, without
        overlap. The next window starts ``chunk_overlap`` tokens before the end, or later when
        those tokens and the next one would not fit ``chunk_size``.
        """
        n, size, overlap = len(text), self.chunk_size, self.chunk_overlap
        ends, begins, total = counter.ends, counter.begins, len(counter.ends)
        count, safe, tokens_before = counter.count, counter.safe_token_start, counter.tokens_before

        def start_of(t: int) -> int:
            return int(ends[t - 1]) if t > 0 else 0

        a = ti = 0  # the window's start, and the first token that ends after it
        at_start = True  # whether a is where token ti starts
        a_safe = True  # safe(a) when known (a is where the previous window ended), else None
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
            b_safe = None
            if b <= a or b <= last:
                fits = False  # (b <= last: the local count allows more than the whole encoding)
            elif at_start and (safe(a) if a_safe is None else a_safe) and (b_safe := safe(b)):
                fits = True  # tj - ti <= size tokens, exactly
            else:
                fits = count(a, b) <= size
            if not fits:
                # Token starts of the stretch (plus a cut between code points, when needed).
                # The next chunk_size token starts that start a code point (as in the other path).
                # (A code point is at most 4 tokens, so 4 more tokens than cuts hold one.)
                ahead = counter.boundaries(ti + 1, ti + 2 * size + 5)
                ahead = ahead[ahead > a][:size]
                cuts = [a, *(int(c) for c in ahead)] if len(ahead) else [a, n]
                k = _next_cut(count, cuts, 0, len(cuts) - 1, size)
                b, b_safe = cuts[k], None
                tj = tokens_before(b)
            window = text[a:b]
            if not window.isspace():
                yield _piece(window, a, b)
            if b >= n:
                return
            last = b
            nt = tj
            if overlap and fits:
                # Share up to chunk_overlap tokens, but leave room for the next one: a window
                # that cannot reach past this one would repeat a part of it.
                nt = max(tj - overlap, ti + 1)
                if begins is not None:
                    while nt < tj and not begins[nt]:
                        nt += 1
                if nt < tj:
                    t = tj + 1
                    if begins is not None:
                        while t < total and not begins[t]:
                            t += 1
                    after = start_of(t) if t < total else n
                    while nt < tj and count(start_of(nt), after) > size:
                        nt += 1
                        if begins is not None:
                            while nt < tj and not begins[nt]:
                                nt += 1
            if nt == tj and not fits:
                a, ti = b, tj
                at_start = b == start_of(tj) and (begins is None or tj >= total or bool(begins[tj]))
            else:
                a, ti, at_start = start_of(nt), nt, True
            a_safe = b_safe if a == b else None


class _Cuts:
    """Ascending cut offsets held as a numpy array, read as Python ints one entry at a time.

    What :func:`_next_cut` needs of a list (``len``, indexing, ``insert``), so that a window
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
