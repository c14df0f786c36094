"""Token counts of slices of one text, from a single encoding when the tokenizer allows.

Positions are code points of the normalized text; counts are tokens of the budget tokenizer.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from transforms.structure.packing import limits
from transforms.structure.packing.chunk import heading_prefix
from transforms.structure.packing.lines import Lines
from transforms.structure.tree import LINE_BREAK
from transforms.tokenizers import Tokenizer

__all__ = ["TokenCounter"]


class TokenCounter:
    """Token counts of slices of one text, from a single encoding when the tokenizer allows.

    A tokenizer with ``token_ends`` (tiktoken's cl100k_base, UTF-8 bytes, a BERT-style WordPiece
    tokenizer) is *additive*: the
    text is encoded once, and a slice between two stable positions (see
    :class:`~transforms.structure.packing.lines.Lines`) has exactly as many tokens as the whole
    encoding has inside it, so :meth:`span` is a difference of two running totals. A long text is
    encoded a part of about ``limits.PART_CHARS`` code points at a time, each part as the packer
    reaches it, and dropped once it is behind every chunk still to come out
    (:meth:`forget_before`). Any other tokenizer counts every slice whole.

    Args:
        text: The normalized text.
        tokenizer: The budget tokenizer.
        lines: The text's line starts (where parts may be cut).
        token_ends: ``tokenizer.token_ends(text)`` when the caller already has them: used for a
            text encoded in one part instead of encoding it again (ignored otherwise).
    """

    def __init__(self, text: str, tokenizer: Tokenizer, lines: Lines, token_ends: Any = None) -> None:
        self.text = text
        self.tokenizer = tokenizer
        self.lines = lines
        ends_of: Callable[[str], Any] | None = getattr(tokenizer, "token_ends", None)
        self.additive = ends_of is not None
        self._prefix_cache: dict[tuple[str, ...], int] = {}
        self._context_cache: dict[tuple[int, int], int] = {}
        # The most code points that start in one token, if the tokenizer says (see ``exceeds``).
        self._token_chars: int | None = getattr(tokenizer, "max_token_chars", None) if self.additive else None
        #: The most code points that start in one token (``at_least``'s divisor), or ``None``.
        self.token_chars = self._token_chars
        # Any tokenizer's whole count of a text of n code points, when it gives ``max_token_chars``
        # (every code point starts in a token of at most that many: OpenAI BPE, UTF-8 bytes).
        self._whole_token_chars: int | None = getattr(tokenizer, "max_token_chars", None)
        self.encoded_again = 0  # parts encoded a second time after they were dropped (tests)
        #: The whole text's token ends when it is encoded in one part (then ``tokens_before`` is
        #: one bisection of them), else ``None``.
        self.single: Sequence[int] | None = None
        if ends_of is not None:
            # A long text is encoded a part at a time, cut at stable line starts (pre-token
            # boundaries, so each part's token ends, moved by its start, are the whole encoding's
            # own): the ends are never joined into one array, which would hold them twice. Parts
            # are encoded as the packer reaches them and dropped behind it (``forget_before``).
            self._ends_of = ends_of
            # (A static method: a generator holding ``self`` would be a reference cycle.)
            self._cuts = self._part_ends(text, lines, getattr(tokenizer, "part_cut", None))
            self._part_starts: list[int] = []
            self._part_tokens: list[int] = []  # tokens before each part
            self._parts: list[Sequence[int] | None] = []
            self._forgotten = 0  # parts before this one are dropped
            self._reached, self._tokens = 0, 0  # where the encoded parts end; their tokens
            self._given = token_ends  # the whole text's ends, if the caller has them
            self._next_part()
            self._given = None
            self.single = self._parts[0] if self._reached == len(text) and len(self._parts) == 1 else None

    def _next_part(self) -> None:
        """Encode the next part (a text's first part may be all of it)."""
        start = self._reached
        end = next(self._cuts)
        ends = self._encode(start, end)
        self._part_starts.append(start)
        self._part_tokens.append(self._tokens)
        self._parts.append(ends)
        self._reached, self._tokens = end, self._tokens + len(ends)

    def _encode(self, start: int, end: int) -> Sequence[int]:
        """The token ends of ``text[start:end]`` (a part), moved by ``start``: code points."""
        text = self.text
        if self._given is not None and (start, end) == (0, len(text)):
            ends = self._given  # (the whole text's, already computed by the caller)
        else:
            ends = self._ends_of(text[start:end] if (start, end) != (0, len(text)) else text)
        if start:
            ends += start
        # A list bisects fastest, but holds a Python int per token (about 36 bytes); a long
        # text's ends stay in their array (4 bytes a token), bisected through a memoryview.
        return ends.tolist() if len(ends) <= limits.LIST_TOKENS else memoryview(ends)

    def forget_before(self, position: int) -> None:
        """Drop the token ends of parts that end at or before ``position``: no count asked from
        now on starts before it."""
        if self.additive and self.single is None:
            parts, starts = self._parts, self._part_starts
            k = self._forgotten
            while k < len(parts) - 1 and starts[k + 1] <= position:
                parts[k] = None
                k += 1
            self._forgotten = k

    @staticmethod
    def _part_ends(text: str, lines: Lines, part_cut: Callable[[str, int], int | None] | None) -> Iterator[int]:
        """Where the parts of ``text`` end, then the end of the text: after every
        ``limits.PART_CHARS`` code points, the first stable line start within as many more, else
        the tokenizer's first cut with no change to the encoding (``part_cut``: in a long line),
        else the first stable line start further on."""
        position, n = 0, len(text)
        while position + limits.PART_CHARS < n:
            lo = position + limits.PART_CHARS
            hi = min(lo + limits.PART_CHARS, n)
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
        if self.single is not None:
            return bisect_right(self.single, position)
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
        single = self.single
        if single is not None:  # (tokens_before's first case, without two calls)
            return bisect_right(single, end) - bisect_right(single, start)
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

    def least_whole(self, chars: int) -> int:
        """A lower bound on :meth:`exact` of any text of ``chars`` code points that needs no
        encoding (0 if the tokenizer gives no ``max_token_chars``): its tokens hold every code
        point, at most ``max_token_chars`` starting in each."""
        return chars // self._whole_token_chars if self._whole_token_chars else 0

    def context(self, span: tuple[int, int]) -> int:
        """``span(*span)`` for a repeated header or fence, remembered: asked again for every part
        while the packer is far past it (its token ends may be dropped by then)."""
        cache = self._context_cache
        count = cache.get(span)
        if count is None:
            if len(cache) >= limits.TITLES_MEMO:
                cache.clear()  # (a document of many split tables: only the latest are asked again)
            count = cache[span] = self.span(*span)
        return count

    def exact(self, text: str) -> int:
        """Tokens of ``text``, counted whole."""
        return self.tokenizer.count(text)

    def prefix(self, titles: tuple[str, ...]) -> int:
        """Tokens of ``heading_prefix(titles)`` (of ``""`` for no titles), remembered (the latest
        ``limits.TITLES_MEMO`` paths)."""
        cache = self._prefix_cache
        count = cache.get(titles)
        if count is None:
            if len(cache) >= limits.TITLES_MEMO:
                cache.clear()
            # No titles: what the tokenizer counts for an empty text (0, or the special tokens and
            # prompt a model's tokenizer adds to every text, ``hf-model:``), so that a chunk's
            # count is this plus its span's tokens either way.
            count = cache[titles] = self.tokenizer.count(heading_prefix(titles) if titles else "")
        return count
