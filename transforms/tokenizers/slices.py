"""Exact cl100k_base counts of any slice of one text, from one encoding of the whole text.

Beam-free. :class:`SliceCounter` is made by
:meth:`~transforms.tokenizers.tiktoken_bpe.TiktokenTokenizer.slice_counter`; chunkers that measure
many slices of one document use it instead of encoding each slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from transforms.tokenizers.cuts import (
    ASCII_PUNCTUATION,
    SAFE_CUT,
    alnum_cut,
    cut_at,
    last_safe_cut_near,
    token_start_cut,
)

if TYPE_CHECKING:
    from transforms.tokenizers.tiktoken_bpe import TiktokenTokenizer

__all__ = ["SliceCounter"]


class SliceCounter:
    """Exact cl100k_base token counts of any slice of one text, from one encoding of the whole.

    ``count(a, b)`` equals ``tokenizer.count(text[a:b])`` for every ``0 <= a <= b <= len(text)``.
    A slice is split at its first and last :data:`~transforms.tokenizers.cuts.SAFE_CUT` point (where cl100k_base's
    tokenization cannot change, the rule :meth:`TiktokenTokenizer._encode_segments` relies on):
    the two edges are encoded on their own (usually a few characters) and the middle's count is
    the difference of the whole encoding's token indices at the two cuts. A slice with no safe
    cut within :data:`EDGE_CHARS` of its start is encoded whole. So a chunker that measures its
    chunks pays about one encoding of the document plus a few characters per chunk, instead of
    a second encoding of every chunk. ``tests/test_tokenizers.py`` checks it against whole
    encodings.

    Attributes:
        ends: Per token of the whole encoding, the code-point offset where it ends (as
            :meth:`TiktokenTokenizer.token_ends`).
        begins: Per token, whether its first byte starts a code point (a cut is possible there);
            ``None`` when every token does (an ASCII text).
    """

    #: How far (code points) from a slice's start a safe cut is looked for before the slice is
    #: encoded whole.
    EDGE_CHARS = 4096

    def __init__(self, tokenizer: TiktokenTokenizer, text: str, ends, begins) -> None:
        self._tokenizer = tokenizer
        self.text = text
        self.ends = ends
        self.begins = begins
        self._memo: dict[str, int] = {}  # counts of short edges (at most 16 code points)

    def boundaries(self, lo: int = 0, hi: int | None = None):
        """Code-point offsets where a token of the whole encoding starts, plus the end (numpy).

        With ``lo`` and ``hi``, only those of tokens ``lo`` to ``hi - 1`` (token ``len(ends)``
        stands for the end), so a caller can walk a long text in pieces without a second array
        as long as :attr:`ends`. Tokens that start inside a code point offer no cut: left out.
        """
        import numpy as np

        n = len(self.ends) + 1
        lo, hi = min(max(lo, 0), n), n if hi is None else min(max(hi, 0), n)
        if lo >= hi:
            return np.zeros(0, dtype=self.ends.dtype)
        part = np.empty(hi - lo, dtype=self.ends.dtype)
        if lo == 0:
            part[0] = 0
            part[1:] = self.ends[: hi - 1]
        else:
            part[:] = self.ends[lo - 1 : hi - 1]
        if self.begins is None:
            return part
        valid = np.ones(hi - lo, dtype=np.bool_)
        tokens = self.begins[lo:hi]
        valid[: len(tokens)] = tokens
        return part[valid]

    def tokens_before(self, offset: int) -> int:
        """Tokens of the whole encoding that end at or before ``offset``: the token index there
        when ``offset`` is a token start."""
        # As the array's own type: a Python int would make numpy copy the array to int64 first.
        return int(self.ends.searchsorted(self.ends.dtype.type(offset), "right"))

    def tokens_from(self, t: int, offset: int) -> int:
        """``tokens_before(offset)``, for a caller that knows ``t <= tokens_before(offset)`` (an
        index found a little earlier in the text): a few tokens are stepped over one by one,
        cheaper than a binary search when ``offset`` is a line break or two past ``t``'s token."""
        ends, total = self.ends, len(self.ends)
        for _ in range(8):
            if t >= total or ends[t] > offset:
                return t
            t += 1
        return self.tokens_before(offset)

    def count_from(self, a: int, tokens_a: int, a_safe: bool, b: int) -> tuple[int, int]:
        """``(count(a, b), t)`` for a caller that counts slices from a start ``a`` it knows
        ``tokens_a == tokens_before(a)`` and ``a_safe == safe_cut(a)`` of.

        The start's token index and safety are not looked up again, and the index of the first
        safe cut after an unsafe start is stepped to from ``tokens_a`` (:meth:`tokens_from`). ``t`` is
        ``tokens_before(p)`` of an offset ``a <= p <= b`` (where the middle of the slice ends, or
        ``a``), for :meth:`tokens_from` of an offset past ``b``.
        """
        if b - a < 64:
            return self._edge(a, b), tokens_a
        head, first, t_first = 0, a, tokens_a
        if not a_safe:
            match = SAFE_CUT.search(self.text, a, min(b, a + self.EDGE_CHARS))
            # A cut whose characters are inside [a, b) (one at a itself is a safe cut of the
            # whole text too: the space case looks at the character before a).
            first = cut_at(match) if match else b
            if first >= b:
                return self._tokenizer.count(self.text[a:b]), tokens_a
            head, t_first = self._edge(a, first), self.tokens_from(tokens_a, first)
        if self._safe(b):
            t = self.tokens_before(b)
            return head + t - t_first, t
        last = self._last_cut(first, b)
        if last is None:
            return head + self._tokenizer.count(self.text[first:b]), t_first
        t = self.tokens_before(last)
        return head + t - t_first + self._edge(last, b), t

    def count(self, a: int, b: int) -> int:
        """Exact number of tokens of ``text[a:b]``: the edges up to the first and from the last
        safe cut inside it encoded alone, the middle a difference of token indices (see
        :meth:`count_from`)."""
        if b - a < 64:
            return self._edge(a, b)
        return self.count_from(a, self.tokens_before(a), self._safe(a), b)[0]

    def counts(self, points: Sequence[int]) -> list[int]:
        """Exact token counts of ``text[points[k]:points[k + 1]]`` for each ``k``: consecutive slices.

        The same decomposition as :meth:`count` (edges encoded alone, the middle a difference of
        token indices), with each point's safety looked at once and the token indices of all
        middles found in one ``searchsorted``: a few microseconds of Python per slice, for a
        splitter that measures every paragraph of a document. ``points`` must be ascending.
        """
        import numpy as np

        n = len(points) - 1
        if n <= 0:
            return []
        text, safe, edge, limit = self.text, self._safe, self._edge, self.EDGE_CHARS
        firsts, lasts, extra = [0] * n, [0] * n, [0] * n
        b_safe = safe(points[0])
        for k in range(n):
            a, b = points[k], points[k + 1]
            a_safe, b_safe = b_safe, safe(b)
            firsts[k] = lasts[k] = a
            if b - a <= 16:
                extra[k] = edge(a, b)
                continue
            if a_safe:
                first = a
            elif safe(a + 1):  # (b - a > 16: a + 2 < b)
                first = a + 1
            elif safe(a + 2):  # after a separator's "\n\n", usually
                first = a + 2
            else:
                match = SAFE_CUT.search(text, a, min(b, a + limit))
                first = cut_at(match) if match else b
                if first >= b:
                    extra[k] = self._tokenizer.count(text[a:b])
                    continue
            last = b if b_safe else self._last_cut(first, b)
            if last is None:
                extra[k] = edge(a, first) + self._tokenizer.count(text[first:b])
                continue
            firsts[k], lasts[k] = first, last
            extra[k] = edge(a, first) + edge(last, b)
        found = self.ends.searchsorted(np.asarray(firsts + lasts, dtype=self.ends.dtype), "right")
        return (found[n:] - found[:n] + np.asarray(extra, dtype=np.int64)).tolist()

    def _edge(self, a: int, b: int) -> int:
        """Tokens of ``text[a:b]`` encoded alone; short texts (``"\\n\\n"``, ``" "``, ...) are
        remembered for this text, as the same few recur at most edges."""
        if b - a > 16:
            return self._tokenizer.count(self.text[a:b])
        if b <= a:
            return 0
        piece = self.text[a:b]
        found = self._memo.get(piece)
        if found is None:
            found = self._memo[piece] = self._tokenizer.count(piece)
        return found

    def safe_cut(self, p: int) -> bool:
        """Whether ``p`` is an end of the text, a :data:`~transforms.tokenizers.cuts.SAFE_CUT` point of it, or the end of
        an ASCII letter or digit run followed by another ASCII character (see :func:`~transforms.tokenizers.cuts.alnum_cut`):
        where cl100k_base's tokenization cannot change. Between two such token starts a slice's
        tokens are the whole encoding's, and their count the difference of the token indices."""
        text = self.text
        if p <= 0 or p >= len(text):
            return True
        c, d = text[p], text[p - 1]
        return (c == " " and not d.isspace()) or (d == "\n" and not c.isspace()) or alnum_cut(d, c)

    _safe = safe_cut

    def safe_token_start(self, p: int) -> bool:
        """Whether ``p``, a code-point offset where a token of the whole encoding starts (the
        caller knows it does; its first byte starts a code point), is a safe cut:
        :meth:`safe_cut`, or a cut inside a pre-token by :func:`~transforms.tokenizers.cuts.token_start_cut`. Between two
        such offsets a slice's tokens are the whole encoding's."""
        text = self.text
        if p <= 0 or p >= len(text):
            return True
        c, d = text[p], text[p - 1]
        return (c == " " and not d.isspace()) or (d == "\n" and not c.isspace()) or token_start_cut(text, p)

    def _last_cut(self, lo: int, b: int) -> int | None:
        """A safe cut in ``(lo, b)``, as late as is quick to find, or ``None``.

        Before a run of ASCII punctuation that ends the slice (``word.`` then ``\n\n``: the
        punctuation joins the line breaks in the whole text's encoding, so ``b`` is no cut), the
        run's start is one when a letter or digit precedes it; else the last space or line cut.
        """
        text = self.text
        q, stop = b, max(lo, b - 16)
        while q > stop and text[q - 1] in ASCII_PUNCTUATION:
            q -= 1
        if lo < q < b and alnum_cut(text[q - 1], text[q]):
            return q
        return last_safe_cut_near(text, lo, b - 1)
