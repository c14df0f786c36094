"""A document's token ends from encodings of its words, each distinct word encoded once.

Beam-free. For a Hugging Face tokenizer whose encoding does not change at a set of cuts (the
safe cuts of :mod:`~transforms.tokenizers.wordpiece` or the space cuts of
:mod:`~transforms.tokenizers.pretokens`), the whole text's tokens are the tokens of its *words*
(the pieces between consecutive cuts) encoded alone, one after the other. Natural text repeats
its words, so :class:`WordEncoder` encodes each distinct word once (``encode_batch``), remembers
it across documents, and lays the words' token ends out with numpy: about a third of the time of
one ``encode`` of the document, which spends most of it tracking offsets character by character.
``tests/transforms/tokenizers/test_one_encoding.py`` checks the ends against the whole encoding.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

__all__ = ["WordEncoder", "every_word"]

#: Distinct words remembered per tokenizer (a few hundred bytes each: about 10 MB when full);
#: the memory is emptied when it is full.
WORDS_MEMO = 1 << 15
#: About how many code points of words are encoded in one text (see ``_encode_words``).
GROUP_CHARS = 1 << 18
#: Words longer than this (code points) are encoded without being remembered.
MEMO_CHARS = 64


#: A lone surrogate (counted as U+FFFD; the library refuses it).
SURROGATE = re.compile("[\ud800-\udfff]")

#: Unicode White_Space characters that the ``tokenizers`` normalizers keep as whitespace (no
#: control characters: ``BertNormalizer`` drops U+000B, U+000C and U+0085).
WHITESPACE = "\t\n\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: The characters of :data:`WHITESPACE`, one by one.
WHITESPACE_CHARS = "\t\n\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


class WordEncoder:
    """Token ends of texts cut into words, from one encoding of each distinct word.

    A text is cut before every character of ``cut_chars`` that follows a character which is not
    whitespace (Python's ``str.isspace``) and which ``allowed`` accepts, and, with ``after``,
    after every character of ``cut_chars`` that precedes one which is not whitespace: the
    caller's proof says its encoding cannot change at those cuts. With ``after`` and no
    ``allowed`` (every cut next to a cut character is good), the text is cut after every run of
    cut characters instead: a word and the run after it.

    Args:
        encode_batch: The library's ``encode_batch`` of words, own tokens only (no special
            tokens, no post-processor that moves offsets).
        allowed: Whether a character that is not whitespace may end a word (precede a cut), or
            ``None`` when every one may.
        cut_chars: A regex character class body (``" "``, :data:`WHITESPACE`).
        after: Cut after ``cut_chars`` too.
    """

    def __init__(
        self,
        encode_batch: Callable[[list[str]], Any],
        allowed: Callable[[str], bool] | None,
        cut_chars: str = " ",
        after: bool = False,
        joinable: Callable[[str], bool] | None = None,
        joiner: str = "",
    ) -> None:
        self._encode_batch = encode_batch
        self._allowed = allowed
        self._cut = cut_chars
        self._after = after
        self._joinable = joinable
        self._joiner = joiner
        self._memo: dict[str, tuple[list[int], list[int]]] = {}
        self._lengths: dict[str, int] = {}  # tokens per remembered word, for count()
        self._known: set[str] = set()  # characters that may end a word, or are whitespace
        self._patterns: dict[str, re.Pattern[str]] = {}

    def clear(self) -> None:
        """Forget the remembered words."""
        self._memo.clear()
        self._lengths.clear()

    def _split(self, text: str) -> list[str]:
        """``text`` cut into words (see the class docstring)."""
        if self._allowed is None and self._after:
            # Every cut next to a cut character is good: a word and the run of cut characters
            # after it (one match per word, and a last empty one).
            runs = self._patterns.get("")
            if runs is None:
                runs = self._patterns[""] = re.compile("[^" + self._cut + "]*[" + self._cut + "]*")
            return runs.findall(text)
        banned = ""
        if self._allowed is not None:
            allowed, known = self._allowed, self._known
            unknown = set(text) - known
            if unknown:
                banned = "".join(sorted(c for c in unknown if not c.isspace() and not allowed(c)))
                known.update(c for c in unknown if c.isspace() or allowed(c))
        pattern = self._patterns.get(banned)
        if pattern is None:
            if len(self._patterns) > 64:
                self._patterns.clear()
            source = r"(?<=[^\s" + "".join(re.escape(c) for c in banned) + r"])(?=[" + self._cut + "])"
            if self._after:
                source += r"|(?<=[" + self._cut + r"])(?=\S)"
            pattern = self._patterns[banned] = re.compile(source)
        return pattern.split(text)

    def ends(self, text: str, spans: Sequence[tuple[int, int]] = ()):
        """``(starts, ends)`` of ``text``'s tokens: numpy ``int64`` code-point offsets.

        ``spans`` (sorted ``(start, end)``) are added tokens' texts, widened as the caller's
        cut rule says: no cut is made inside one of them or at its ends.
        """
        import numpy as np

        words = self._split(text)
        if spans and len(words) > 1:
            words = _join_at(words, spans)
        memo = self._memo
        todo = [w for w in dict.fromkeys(words) if w not in memo]
        local: dict[str, tuple[list[int], list[int]]] = {}
        if todo:
            if len(memo) + len(todo) > WORDS_MEMO:
                memo.clear()
                todo = list(dict.fromkeys(words))
            self._encode_words(todo, local)
            for word, value in local.items():
                if len(word) <= MEMO_CHARS:
                    memo[word] = value
        index: dict[str, int] = {}
        ids = [index.setdefault(w, len(index)) for w in words]
        found = [local.get(w) or memo.get(w) for w in index]
        missing = [w for w, value in zip(index, found, strict=True) if value is None]
        if missing:  # (emptied by another thread meanwhile)
            self._encode_words(missing, local)
        table = [local[w] if value is None else value for w, value in zip(index, found, strict=True)]
        starts_table = [st for st, _ in table]
        ends_table = [en for _, en in table]
        counts = np.fromiter(map(len, ends_table), dtype=np.int64, count=len(table))
        total_unique = int(counts.sum())
        flat_starts = np.fromiter(chain.from_iterable(starts_table), dtype=np.int64, count=total_unique)
        flat_ends = np.fromiter(chain.from_iterable(ends_table), dtype=np.int64, count=total_unique)
        first = np.zeros(len(table), dtype=np.int64)
        np.cumsum(counts[:-1], out=first[1:])
        word_ids = np.asarray(ids, dtype=np.int64)
        per_word = counts[word_ids]
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        word_starts = np.zeros(len(words), dtype=np.int64)
        np.cumsum(lengths[:-1], out=word_starts[1:])
        total = int(per_word.sum())
        occurrence_first = np.zeros(len(words), dtype=np.int64)
        np.cumsum(per_word[:-1], out=occurrence_first[1:])
        within = np.arange(total, dtype=np.int64) - np.repeat(occurrence_first, per_word)
        source = np.repeat(first[word_ids], per_word) + within
        shift = np.repeat(word_starts, per_word)
        return flat_starts[source] + shift, flat_ends[source] + shift

    def count(self, text: str, spans: Sequence[tuple[int, int]] = ()) -> int | None:
        """Tokens of ``text``: the sum of its words' (``spans`` as in :meth:`ends`), or ``None``
        when a word was emptied from the memory meanwhile by another thread."""
        words = self._split(text)
        if spans and len(words) > 1:
            words = _join_at(words, spans)
        lengths = self._lengths
        todo = [w for w in dict.fromkeys(words) if w not in lengths]
        if todo:
            if len(lengths) + len(todo) > WORDS_MEMO:
                lengths.clear()
            local: dict[str, tuple[list[int], list[int]]] = {}
            self._encode_words(todo, local)
            for word, value in local.items():
                lengths[word] = len(value[1])
        try:
            total: int | None = sum(map(lengths.__getitem__, words))
        except KeyError:  # (emptied by another thread meanwhile)
            total = None
        for word in todo:
            if len(word) > MEMO_CHARS:
                lengths.pop(word, None)
        return total

    def _encode_words(self, todo: list[str], out: dict[str, tuple[list[int], list[int]]]) -> None:
        """Put the ``(starts, ends)`` of each word of ``todo`` encoded alone into ``out``.

        The words ``joinable`` accepts are encoded in one text, joined by ``joiner``: the caller
        says the encoding cannot change where they meet, so each token belongs to the word its
        end falls in (one call instead of one per word; the library spends microseconds per
        call). The rest, and all when that text has a token with no text (which word would own
        it?), are encoded one by one.
        """

        if "" in todo:  # (the end of a text: no tokens)
            out[""] = ([], [])
            todo = [w for w in todo if w]
        joinable = self._joinable
        if joinable is None:
            together, alone = [], todo
        elif joinable is every_word:
            together, alone = todo, []
        else:
            together = [w for w in todo if joinable(w)]
            alone = [w for w in todo if not joinable(w)]
        # In groups of about GROUP_CHARS code points: the library's encoding of a long text holds
        # far more than its offsets (ids, token strings, masks), so a huge document's new words
        # are not given to it at once.
        group: list[str] = []
        size = 0
        for word in together:
            group.append(word)
            size += len(word)
            if size >= GROUP_CHARS:
                alone += self._encode_joined(group, out)
                group, size = [], 0
        if group:
            alone += self._encode_joined(group, out)
        if alone:
            for word, encoding in zip(alone, self._encode_batch(alone), strict=True):
                offsets = encoding.offsets
                out[word] = ([s for s, _ in offsets], [e for _, e in offsets])

    def _encode_joined(self, together: list[str], out: dict[str, tuple[list[int], list[int]]]) -> list[str]:
        """Encode ``together`` in one text joined by ``joiner``, put each word's ``(starts,
        ends)`` into ``out``; return the words left to encode alone (all of them when the text
        has a token with no text)."""
        import numpy as np

        joiner = self._joiner
        lengths = np.fromiter(map(len, together), dtype=np.int64, count=len(together))
        word_starts = np.zeros(len(together), dtype=np.int64)
        np.cumsum(lengths[:-1] + len(joiner), out=word_starts[1:])
        encoding = self._encode_batch([joiner.join(together)])[0]
        pairs = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
        starts, ends = pairs[:, 0], pairs[:, 1]
        if np.any(starts == ends):
            return together
        owner = np.searchsorted(word_starts + lengths, ends, "left")
        base = word_starts[np.minimum(owner, len(together) - 1)]
        rel_starts, rel_ends = (starts - base).tolist(), (ends - base).tolist()
        bounds = np.searchsorted(owner, np.arange(len(together) + 1), "left").tolist()
        for word, a, b in zip(together, bounds, bounds[1:]):
            out[word] = (rel_starts[a:b], rel_ends[a:b])
        return []


def every_word(word: str) -> bool:
    """``joinable`` for a tokenizer whose ``joiner`` is a cut next to any word."""
    return True


def _join_at(words: list[str], spans: Sequence[tuple[int, int]]) -> list[str]:
    """``words`` with the cuts inside or at an end of a span undone (the words joined)."""
    bad = {p for s, e in spans for p in range(s, e + 1)}
    joined: list[str] = []
    position = 0
    for word in words:
        if joined and position in bad:
            joined[-1] += word
        else:
            joined.append(word)
        position += len(word)
    return joined
