"""``RecursiveCharacterTextSplitter``: paragraphs, then lines, then words, then anywhere safe.

Beam-free. In characters it is LangChain's ``RecursiveCharacterTextSplitter`` chunk for chunk
(``_split_text`` and ``_merge_splits``); in tokens it searches back from where the budget runs out
over one encoding of the document (see the class docstring).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from transforms.chunkers.base import Piece
from transforms.chunkers.text.merging import MergingSplitter
from transforms.chunkers.text.separators import (
    Occurrences,
    RegexClock,
    check_pattern,
    literal_occurrences,
    regex_occurrences,
)
from transforms.chunkers.text.spans import (
    DEFAULT_SEPARATORS,
    Count,
    fast_piece,
    next_cut,
    piece_counts,
    skip_space,
    strip,
    token_index,
)
from transforms.tokenizers import Tokenizer

__all__ = ["RecursiveCharacterTextSplitter"]


class RecursiveCharacterTextSplitter(MergingSplitter):
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
      separately counted pieces: inexact, and four times slower).

    Args:
        chunk_size: Maximum chunk length, in code points or in tokens (see ``length``).
        chunk_overlap: Maximum length shared by consecutive chunks, same unit (see above).
        separators: Separators in priority order; default ``["\\n\\n", "\\n", " ", ""]``.
        length: ``"characters"`` (code points) or ``"tokens"`` (of ``tokenizer``).
        tokenizer: The tokenizer that measures ``length="tokens"``.
        is_separator_regex: Every separator but ``""`` is a regular expression (``re`` syntax),
            as LangChain's option of that name: a separator occurs where a match starts
            (:mod:`~transforms.chunkers.text.separators`), e.g. ``(?<=\\. )`` right after a
            full stop and a space. In characters each piece is searched on its own, as LangChain
            does (a lookbehind does not see before the piece); in tokens the whole text is
            searched once.

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
        is_separator_regex: bool = False,
    ) -> None:
        super().__init__(
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            length=length,
            tokenizer=tokenizer,
            is_separator_regex=is_separator_regex,
        )
        if separators is not None and not isinstance(separators, (list, tuple)):
            # (a string or a mapping would be taken apart into its characters or keys)
            raise ValueError(f"separators must be a non-empty list of strings, got {separators!r:.80}")
        separators = list(DEFAULT_SEPARATORS if separators is None else separators)
        if not separators or not all(isinstance(s, str) for s in separators):
            raise ValueError(f"separators must be a non-empty list of strings, got {separators!r:.80}")
        self.separators = separators
        # The compiled pattern of each regular-expression separator ("" stays "cut anywhere").
        self._patterns: dict[str, Any] = {}
        if is_separator_regex:
            for i, sep in enumerate(separators):
                if sep and sep not in self._patterns:
                    self._patterns[sep] = check_pattern(sep, f"separators[{i}]")

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "separators": list(self.separators),
            "length": self.length,
            # Only when set, so literal configurations keep their config_hash.
            **({"is_separator_regex": True} if self.is_separator_regex else {}),
        }

    def split_text(self, text: str) -> Iterator[Piece]:
        """Yield chunks of ``text`` as verbatim slices with offsets.

        Raises:
            ChunkingError: ``chunker_error`` when the separators' regular expressions run out
                of time on the text (:data:`~transforms.chunkers.text.separators.DOCUMENT_SECONDS`).
        """
        if self.tokenizer is not None:
            for start, end in self._search_back(text):
                yield fast_piece(text[start:end], start, end)
            return
        clock = RegexClock() if self._patterns else None
        for start, end in self._split(text, 0, len(text), self.separators, self._counter(text), clock):
            yield Piece(text=text[start:end], start_offset=start, end_offset=end)

    def _occurrences(self, text: str, searched: list[str]) -> list[Occurrences]:
        """Where each separator of ``searched`` occurs in ``text`` (a regular expression's
        matches found once, on the whole text)."""
        if not self._patterns:
            return [literal_occurrences(text, sep) for sep in searched]
        clock = RegexClock()
        return [regex_occurrences(text, self._patterns[sep], clock) for sep in searched]

    def _search_back(self, text: str) -> Iterator[tuple[int, int]]:
        """Token-sized chunks of ``text``: where the budget runs out, search back for a separator.

        The document is encoded once (:func:`token_index`). From a chunk's start ``s`` (never
        whitespace), the whole encoding says where ``chunk_size`` tokens end (``limit``); the
        chunk ends at the last occurrence in ``(s, limit]`` of the first separator in
        ``separators`` order that occurs there, the separator going to the next chunk (``""``:
        at ``limit`` itself). The stripped chunk is then counted exactly, once as a rule; when
        it is over budget (the whole encoding's tokens at the chunk's edges differ from the
        chunk's own), ``limit`` moves back by the excess and the search is done again. If no
        cut after ``s`` fits: with ``""``, the longest prefix of the local encoding that fits
        (:func:`next_cut`, a single code point kept whole when it alone needs more); without,
        the piece up to the nearest separator, kept whole (over budget, validation rejects it).

        ``chunk_overlap``: the next chunk starts at the first occurrence of the first separator
        (in ``separators`` order) found within the last ``chunk_overlap`` tokens of the chunk
        (``""``: where those tokens start), provided the shared text, stripped, counts at most
        ``chunk_overlap`` tokens exactly; else it starts after the chunk. A chunk that starts in
        the previous one must end past it; when it cannot, it starts after the previous chunk.
        So starts and ends strictly increase, and only whitespace between chunks is left out.
        """
        n = len(text)
        overlap = self.chunk_overlap
        searched, anywhere = self._searched()
        assert self.tokenizer is not None  # split() calls this only for length="tokens"
        found = self._occurrences(text, searched)
        index = token_index(self.tokenizer, text)
        ends, tokens_before, count, tokens_from = index.ends, index.tokens_before, index.count, index.tokens_from
        s = skip_space(text, 0, n)
        ts = tokens_before(s)  # tokens_before(s), kept up to date with s
        floor = after = 0  # the previous chunk's end, and where the text after it starts
        while s < n:
            # A cut must lie after lo: after s, and after the first non-space past the previous chunk.
            lo = s if s >= floor else skip_space(text, floor, n)
            cut, first, b, tb = self._fitting_cut(text, index, s, ts, lo, found)
            if cut is None:
                if s < floor:  # started inside the previous chunk: start after it instead
                    s = skip_space(text, after, n)
                    ts = tokens_before(s)
                    continue
                if anywhere:
                    cut = self._local_fit(text, s, first if first is not None else n, count)
                else:
                    cut = min((h for where in found if (h := where.first_after(s)) != -1), default=n)
                b, tb = strip(text, s, cut)[1], None
            yield s, b
            floor, after = b, cut
            nxt = cut
            if overlap and cut < n:
                shared = self._overlap_start(text, s, b, found, anywhere, ends, tokens_before, count)
                if shared is not None:
                    nxt, tb = shared, None
            s = skip_space(text, nxt, n)
            # (From where the chunk's tokens were counted to, a line break or two away; else searched.)
            ts = tokens_before(s) if tb is None else tokens_from(tb, s)

    def _searched(self) -> tuple[list[str], bool]:
        """The separators searched for, in priority order (those before ``""``), and whether ``""``
        (cut anywhere) is among them."""
        anywhere = "" in self.separators
        return list(self.separators[: self.separators.index("")] if anywhere else self.separators), anywhere

    def _fitting_cut(
        self, text: str, index: Any, s: int, ts: int, lo: int, found: list[Occurrences]
    ) -> tuple[int | None, int | None, int, int | None]:
        """Search back for the end of the chunk that starts at ``s`` (not whitespace; ``ts`` tokens before it).

        From where the whole encoding says ``chunk_size`` tokens end, the last occurrence in
        ``(lo, limit]`` of the first separator (in ``separators`` order) that occurs there; the
        stripped chunk is counted exactly, and while it is over budget ``limit`` moves back by
        the excess.

        Returns:
            ``(cut, first, b, tb)``: the cut (``None`` when none after ``lo`` fits), the first cut
            tried (``None`` when there was none), the stripped chunk's end, and
            ``tokens_before`` of the offset its count reached (both meaningful with a cut).
        """
        n, size = len(text), self.chunk_size
        anywhere = "" in self.separators
        ends, total = index.ends, len(index.ends)
        t = ts + size - 1
        limit = n if t >= total else int(ends[t])
        s_safe = text[s - 1] == "\n" or index.safe_cut(s)  # (s is not whitespace: after a line feed is safe)
        first: int | None = None
        while limit > lo:
            c: int | None
            if limit >= n:
                c = n
            else:
                c = limit if anywhere else None
                for where in found:
                    hit = where.last_start(lo, limit)
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
            k, tb = index.count_from(s, ts, s_safe, b)
            if k <= size:
                return c, first, b, tb
            t = index.tokens_before(c - 1) - (k - size)
            limit = int(ends[t]) if t >= 0 else -1
        return None, first, 0, None

    def _overlap_start(self, text, a, b, found, anywhere, ends, tokens_before, count) -> int | None:
        """Where the chunk after ``text[a:b]`` starts inside it (``chunk_overlap``), or ``None``."""
        overlap = self.chunk_overlap
        t = tokens_before(b) - overlap - 1
        lo = int(ends[t]) if t >= 0 else 0
        while True:
            lo = max(lo, a + 1)
            if lo >= b:
                return None
            p = None
            for where in found:
                hit = where.first_within(lo, b)
                if hit != -1:
                    p = hit
                    break
            if p is None:
                if not anywhere:
                    return None
                p = lo
            q = skip_space(text, p, b)
            if q >= b:
                return None
            k = count(q, b)
            if k <= overlap:
                return p
            t = tokens_before(q) + (k - overlap) - 1
            lo = max(int(ends[t]) if t < len(ends) else b, q + 1)

    def _local_fit(self, text: str, s: int, end: int, count: Count) -> int:
        """The end of the longest prefix of ``text[s:end]`` that fits ``chunk_size`` once stripped,
        cut where a token of its own encoding starts (or between code points, see
        :func:`next_cut`); at least one step, so it always moves forward."""
        assert self.tokenizer is not None  # only for length="tokens"
        cuts = [s + c for c in self.tokenizer.boundaries(text[s:end])]
        k = next_cut(count, cuts, 0, len(cuts) - 1, self.chunk_size)
        while k > 1 and count(*strip(text, s, cuts[k])) > self.chunk_size:
            k -= 1
        return cuts[k]

    def _split(
        self,
        text: str,
        start: int,
        end: int,
        separators: Sequence[str],
        count: Count,
        clock: RegexClock | None = None,
    ) -> list[tuple[int, int]]:
        """Chunk intervals of ``text[start:end]``, using ``separators`` in order (LangChain's ``_split_text``).

        ``clock``: the document's time for regular-expression separators (``None`` for literal ones).
        """
        # As LangChain: the first separator found in the text; when none is, the last one (which
        # then splits nothing, so an oversized text is kept whole unless "" is in the list).
        sep: str = separators[-1]
        rest: Sequence[str] = ()
        hits: list[int] | None = None  # a regular expression's match starts in the piece
        for i, candidate in enumerate(separators):
            if candidate == "":
                sep, rest = candidate, separators[i + 1 :]
                break
            if clock is not None:
                # As LangChain's re.split of the piece: matched on the piece alone.
                piece = text[start:end] if start or end != len(text) else text
                hits = [start + a for a in clock.matches(self._patterns[candidate], piece)[0]]
                if hits:
                    sep, rest = candidate, separators[i + 1 :]
                    break
            elif text.find(candidate, start, end) != -1:
                sep, rest = candidate, separators[i + 1 :]
                break
        cut = "" in separators
        if sep == "":
            return self._cut_anywhere(text, start, end, count)
        # Pieces keep their separator at the start: [start, hit1), [hit1, hit2), ..., [hitN, end).
        cuts, pos = [start], start
        if hits is not None:
            for hit in hits:  # ascending (the matches do not overlap); an empty one may share a start
                if cuts[-1] < hit < end:
                    cuts.append(hit)
        else:
            while (hit := text.find(sep, pos, end)) != -1:
                if hit > cuts[-1]:
                    cuts.append(hit)
                pos = hit + len(sep)
        cuts.append(end)
        out: list[tuple[int, int]] = []
        good: list[tuple[int, int, int]] = []
        for s, e, size in zip(cuts, cuts[1:], piece_counts(count, cuts)):
            if size <= self.chunk_size:
                good.append((s, e, size))
                continue
            if good:
                out.extend(self._merge(text, good, 0, cut=cut, count=count))
                good = []
            if rest:
                out.extend(self._split(text, s, e, rest, count, clock))
            else:
                out.extend(self._merge(text, [(s, e, size)], 0, cut=False, count=count))
        if good:
            out.extend(self._merge(text, good, 0, cut=cut, count=count))
        return out
