"""BERT-style WordPiece tokenizers counted from one encoding per document.

Beam-free. A WordPiece tokenizer whose normalizer is ``BertNormalizer`` (or none) and whose
pre-tokenizer is ``BertPreTokenizer`` tokenizes every *word* on its own: the normalizer works a
character at a time (control characters dropped, whitespace made a space, CJK characters padded
with spaces, lower case, accents stripped), the pre-tokenizer splits at whitespace and puts every
punctuation character in a piece of its own, and WordPiece turns each piece into tokens
(greedy longest match, ``[UNK]`` for a word it cannot spell or longer than
``max_input_chars_per_word``) without looking at its neighbours (Devlin et al., BERT, 2019;
the ``tokenizers`` library's ``BertNormalizer``, ``BertPreTokenizer`` and ``WordPiece``).

So a *separator* character -- one that the normalizer and pre-tokenizer turn into pieces of its
own, apart from both neighbours (whitespace, punctuation, CJK) -- ends every word, whatever is
around it; which characters are separators is asked of the tokenizer's own normalizer and
pre-tokenizer (:meth:`WordPieceTokenizer.is_separator`). A *safe cut* is an offset next to a
separator that is not inside an added token (``[SEP]`` written in a document is one token):
there the tokens of the text before and after it are the whole text's tokens, and the tokens of
a slice between two safe cuts are those of the whole encoding between them.
:class:`WordPieceSlices` counts any slice as its edges up to the first and from the last safe cut
inside it, encoded alone (a few characters), plus a difference of token indices of the whole
encoding; ``tests/transforms/test_model_tokenizers.py`` checks it against whole encodes.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from transforms.tokenizers.huggingface import HuggingFaceTokenizer
from transforms.tokenizers.slices import SliceCounter
from transforms.tokenizers.words import SURROGATE

__all__ = ["SEGMENT_CHARS", "WordPieceSlices", "WordPieceTokenizer", "is_word_local"]

#: Longest text (code points) given to the library in one call; a longer one is encoded in
#: segments cut at safe cuts, whose token ends joined are the whole encoding's.
SEGMENT_CHARS = 1 << 16


def is_word_local(tokenizer: HuggingFaceTokenizer) -> bool:
    """Whether ``tokenizer`` tokenizes words on their own (see the module docstring), so that
    :class:`WordPieceTokenizer` counts it exactly from one encoding per document.

    Yes for a ``WordPiece`` model with ``BertPreTokenizer``, ``BertNormalizer`` or no normalizer,
    added tokens matched as written (not normalized, no ``lstrip``/``rstrip``/``single_word``, no
    whitespace in them), a post-processor that adds the same special tokens to every text, and a
    prompt (``hf-model:``) that is empty or ends with a separator and with no beginning of an
    added token. Anything else is counted by whole encodes.
    """
    config = json.loads(tokenizer._json)
    model = config.get("model") or {}
    pre = config.get("pre_tokenizer") or {}
    normalizer = config.get("normalizer")
    post = config.get("post_processor")
    if model.get("type") != "WordPiece" or pre.get("type") != "BertPreTokenizer":
        return False
    if normalizer is not None and normalizer.get("type") != "BertNormalizer":
        return False
    if post is not None and post.get("type") not in ("TemplateProcessing", "BertProcessing"):
        return False
    contents = []
    for added in config.get("added_tokens") or []:
        content = added.get("content", "")
        if added.get("normalized") or added.get("lstrip") or added.get("rstrip") or added.get("single_word"):
            return False
        if not content or any(c.isspace() for c in content):
            return False
        contents.append(content)
    probe = WordPieceTokenizer.of(tokenizer, contents, check=False)
    prompt = tokenizer.prompt
    if prompt:
        if not probe.is_separator(prompt[-1]):
            return False
        if any(prompt.endswith(c[:k]) for c in contents for k in range(1, len(c))):
            return False
    return True


class WordPieceTokenizer(HuggingFaceTokenizer):
    """A word-local :class:`HuggingFaceTokenizer` (see :func:`is_word_local`) that also counts
    slices of a document from one encoding of it.

    Counts are those of :class:`HuggingFaceTokenizer`; ``count`` adds the tokens of a text's words
    (:meth:`count`; tests check it against whole encodes). What the chunkers use besides:

    * :meth:`slice_counter` -- a :class:`WordPieceSlices` for the plain-text splitters;
    * :meth:`token_ends` and :meth:`part_cut` -- for the structure packer, which adds the token
      ends between two line starts (a line break is a separator) to the count of the chunk's
      heading prefix, or of ``""`` (:attr:`constant`) when there is none.

    Attributes:
        constant: Tokens of ``count("")``: the special tokens plus the prompt's own tokens. A
            text's count is this plus its own tokens (the prompt ends with a separator).
    """

    _contents: list[str]
    _separators: dict[str, bool]
    _words: Any
    constant: int

    @classmethod
    def of(cls, plain: HuggingFaceTokenizer, contents: Sequence[str] | None = None, *, check: bool = True):
        """The :class:`WordPieceTokenizer` of an already loaded ``plain`` (no second read)."""
        self = cls.__new__(cls)
        self.__dict__.update(plain.__dict__)
        if contents is None:
            config = json.loads(plain._json)
            contents = [a.get("content", "") for a in config.get("added_tokens") or []]
        self._contents = [c for c in contents if c]
        self._separators = {}
        for code in range(128):
            self.is_separator(chr(code))
        self.constant = self.special_tokens + self.own_count(self.prompt)
        # Words cut before and after whitespace separators (every cut next to a separator is
        # safe) and encoded once each; without a post-processor, which adds no token to a text's
        # own encoding.
        self._words = None
        if self.is_separator(" ") and check:
            from tokenizers import Tokenizer as _HFTokenizer

            from transforms.tokenizers.words import WHITESPACE_CHARS, WordEncoder, every_word

            config = json.loads(plain._json)
            config["post_processor"] = None
            bare = _HFTokenizer.from_str(json.dumps(config))
            bare.no_truncation()
            bare.no_padding()
            cut = "".join(re.escape(c) for c in WHITESPACE_CHARS if self.is_separator(c))
            # Words met in a document for the first time are encoded together, joined by a
            # space: a separator with no token of its own, next to which every cut is safe.
            join = self.own_count(" ") == 0
            self._words = WordEncoder(
                lambda words: bare.encode_batch(words, add_special_tokens=False),
                None,
                cut,
                True,
                every_word if join else None,
                " ",
            )
        return self

    def count(self, text: str) -> int:
        """Return the tokens of ``text`` (as :meth:`HuggingFaceTokenizer.count`): a text of 64
        code points or more as :attr:`constant` plus the tokens of its words (cut next to
        whitespace separators, each distinct word encoded once and remembered), which are the
        tokens of its own encoding; a shorter one by a whole encode."""
        words = self._words
        if words is not None and len(text) >= 64:
            if SURROGATE.search(text):
                from transforms.tokenizers.huggingface import _without_surrogates

                text = _without_surrogates(text)
            own = words.count(text, self.added_spans(text))
            if own is not None:
                return self.constant + own
        return super().count(text)

    def is_separator(self, c: str) -> bool:
        """Whether the character ``c`` is a separator: the tokenizer's normalizer and
        pre-tokenizer give ``"a" + c + "a"`` a first piece ``"a"`` and a last piece ``"a"``
        (remembered per character). A lone surrogate is taken as U+FFFD, as in counts."""
        known = self._separators.get(c)
        if known is None:
            probe = "\ufffd" if "\ud800" <= c <= "\udfff" else c
            text = "a" + probe + "a"
            normalizer = self._tokenizer.normalizer
            if normalizer is not None:
                text = normalizer.normalize_str(text)
            pieces = [p for p, _ in self._tokenizer.pre_tokenizer.pre_tokenize_str(text)]
            known = self._separators[c] = len(pieces) >= 2 and pieces[0] == "a" and pieces[-1] == "a"
        return known

    def added_spans(self, text: str) -> list[tuple[int, int]]:
        """Where an added token's text (``[SEP]``, ...) occurs in ``text``: ``(start, end)`` code
        points, sorted by start (usually none)."""
        spans = []
        for content in self._contents:
            at = text.find(content)
            while at != -1:
                spans.append((at, at + len(content)))
                at = text.find(content, at + 1)
        spans.sort()
        return spans

    def safe_cut(self, text: str, p: int, spans: Sequence[tuple[int, int]] = ()) -> bool:
        """Whether ``p`` is an end of ``text`` or a safe cut: next to a separator, and not inside
        one of ``spans`` (:meth:`added_spans` of ``text``)."""
        if p <= 0 or p >= len(text):
            return True
        sep = self._separators
        before, after = text[p - 1], text[p]
        b = sep.get(before)
        if b is None:
            b = self.is_separator(before)
        if not b:
            a = sep.get(after)
            if a is None:
                a = self.is_separator(after)
            if not a:
                return False
        return not spans or not _inside(spans, p)

    def _segment_end(self, text: str, start: int, spans: Sequence[tuple[int, int]]) -> int:
        """Where the segment of ``text`` that starts at ``start`` ends: a safe cut at most
        :data:`SEGMENT_CHARS` code points on (the last space before that), else the first one
        after, else the end."""
        n = len(text)
        if n - start <= SEGMENT_CHARS:
            return n
        limit = start + SEGMENT_CHARS
        for find in (lambda: text.rfind(" ", start + 1, limit), lambda: text.find(" ", limit)):
            at = find()
            while at > start and not self.safe_cut(text, at, spans):
                at = text.rfind(" ", start + 1, at)
            if at > start:
                return at
        return n

    def token_ends(self, text: str, spans: Sequence[tuple[int, int]] | None = None):
        """Return, as a numpy ``int32`` (``int64`` past 2**31 code points) array, the code-point
        offset where each token of ``text``'s own encoding ends (no prompt, no special tokens).

        Between two safe cuts ``s < e`` (every line start is one: a line break is a separator),
        ``text[s:e]`` has ``searchsorted(ends, e, "right") - searchsorted(ends, s, "right")`` own
        tokens. The text is encoded a word at a time, words cut next to whitespace separators, each distinct word
        once (:class:`~transforms.tokenizers.words.WordEncoder`): the same token ends as one
        encoding of the whole text (a space is a separator). Where it is not, a text longer than
        :data:`SEGMENT_CHARS` is encoded in segments cut at safe cuts.
        """
        import numpy as np

        dtype = np.int32 if len(text) < 2**31 else np.int64
        if spans is None:
            spans = self.added_spans(text)
        if self._words is not None:
            if SURROGATE.search(text):
                from transforms.tokenizers.huggingface import _without_surrogates

                text = _without_surrogates(text)
            return self._words.ends(text, spans)[1].astype(dtype)
        parts, start, n = [], 0, len(text)
        while start < n:
            end = self._segment_end(text, start, spans)
            offsets = self._encode(text[start:end] if (start, end) != (0, n) else text, False).offsets
            part = np.fromiter((e for _, e in offsets), dtype=dtype, count=len(offsets))
            if start:
                part += start
            parts.append(part)
            start = end
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    def part_cut(self, text: str, position: int) -> int:
        """The first safe cut at or after ``position`` (before a space), or ``len(text)``: the
        token ends of the two sides, the second moved by the cut, are those of the whole text."""
        at = text.find(" ", max(position, 0))
        spans = self.added_spans(text) if at != -1 else ()
        while at != -1 and not self.safe_cut(text, at, spans):
            at = text.find(" ", at + 1)
        return len(text) if at == -1 else at

    def slice_counter(self, text: str) -> WordPieceSlices:
        """Encode ``text`` once; then count any slice of it exactly (see :class:`WordPieceSlices`).

        Memory: 4 bytes per token of ``text``, besides the text."""
        spans = self.added_spans(text)
        return WordPieceSlices(self, text, self.token_ends(text, spans), spans)


def _inside(spans: Sequence[tuple[int, int]], p: int) -> bool:
    """Whether ``p`` is strictly inside one of ``spans`` (sorted by start)."""
    k = bisect_left(spans, (p, -1))
    return any(e > p for _, e in spans[:k])


class WordPieceSlices(SliceCounter):
    """Exact counts (``WordPieceTokenizer.count``) of any slice of one text, from one encoding.

    ``count(a, b)`` equals ``tokenizer.count(text[a:b])`` for every ``0 <= a <= b <= len(text)``:
    :attr:`WordPieceTokenizer.constant` plus the slice's own tokens, which are its edges up to the
    first and from the last safe cut inside it (see the module docstring) encoded alone, plus the
    difference of the whole encoding's token indices at those cuts. A slice with no safe cut
    within :data:`EDGE_CHARS` of its start is encoded whole.

    The reading methods are :class:`~transforms.tokenizers.SliceCounter`'s (``ends``,
    ``tokens_before``, ``tokens_from``, ``boundaries``; ``begins`` is ``None``: every token
    starts at a code point). ``safe_token_start`` is ``safe_cut`` when :attr:`constant` is 0,
    else never true: a window's count is then not a difference of token indices alone.
    """

    def __init__(self, tokenizer: WordPieceTokenizer, text: str, ends: Any, spans: Sequence[tuple[int, int]]) -> None:
        super().__init__(tokenizer, text, ends, None)  # type: ignore[arg-type]
        self._wp = tokenizer
        self._spans = spans
        self._constant = tokenizer.constant

    def safe_cut(self, p: int) -> bool:
        """Whether ``p`` is an end of the text or a safe cut of it."""
        return self._wp.safe_cut(self.text, p, self._spans)

    _safe = safe_cut

    def safe_token_start(self, p: int) -> bool:
        """:meth:`safe_cut` when no constant is added to counts, else ``False``."""
        return self._constant == 0 and self.safe_cut(p)

    def _edge(self, a: int, b: int) -> int:
        """Own tokens of ``text[a:b]`` encoded alone; short pieces remembered."""
        if b <= a:
            return 0
        if b - a > 16:
            return self._wp.own_count(self.text[a:b])
        piece = self.text[a:b]
        found = self._memo.get(piece)
        if found is None:
            found = self._memo[piece] = self._wp.own_count(piece)
        return found

    def _own(self, a: int, b: int, a_safe: bool | None = None, tokens_a: int | None = None) -> tuple[int, int | None]:
        """``(own tokens of text[a:b], tokens_before(last))`` with ``last`` the last safe cut
        used (``None`` when none was)."""
        if b - a <= 16:
            return self._edge(a, b), None
        safe, limit = self._safe, self.EDGE_CHARS
        first = None
        if a_safe if a_safe is not None else safe(a):
            first = a
        else:
            for p in range(a + 1, min(b, a + limit) + 1):
                if safe(p):
                    first = p
                    break
        if first is None:
            return self._wp.own_count(self.text[a:b]), None
        last = first
        if safe(b):
            last = b
        else:
            for p in range(b - 1, max(first, b - limit), -1):
                if safe(p):
                    last = p
                    break
        t_first = tokens_a if first == a and tokens_a is not None else self.tokens_before(first)
        t_last = self.tokens_before(last)
        return self._edge(a, first) + t_last - t_first + self._edge(last, b), t_last

    def count(self, a: int, b: int) -> int:
        """Exact ``tokenizer.count(text[a:b])``."""
        return self._constant + self._own(a, b)[0]

    def count_from(self, a: int, tokens_a: int, a_safe: bool, b: int) -> tuple[int, int]:
        """``(count(a, b), t)`` with ``t = tokens_before(p)`` for an offset ``a <= p <= b``."""
        own, t = self._own(a, b, a_safe, tokens_a)
        return self._constant + own, tokens_a if t is None else t

    def counts(self, points: Sequence[int]) -> list[int]:
        """``[count(points[k], points[k + 1]) for each k]``; ``points`` ascending."""
        own, constant = self._own, self._constant
        return [constant + own(points[k], points[k + 1])[0] for k in range(len(points) - 1)]
