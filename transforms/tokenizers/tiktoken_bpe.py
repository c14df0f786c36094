"""OpenAI BPE encodings (``cl100k_base``, ``o200k_base``): counts, token offsets and cut points, offline.

Beam-free. :class:`BpeTokenizer` counts any offline encoding exactly, on an engine of
:mod:`transforms.tokenizers.engines` (bpe-openai, or tiktoken itself), and derives code-point
offsets from per-token tables instead of decoding. :class:`TiktokenTokenizer` adds, for
``cl100k_base``, whose pattern's safe cuts :mod:`transforms.tokenizers.cuts` proves, the encoding
of long texts in bounded segments (:mod:`transforms.tokenizers.segments`) and exact counts of
slices from one encoding (``token_ends``, ``slice_counter``). Text is counted as ordinary text: a
literal ``<|endoftext|>`` in a document is just characters.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Sequence
from functools import cached_property
from itertools import accumulate
from typing import Any

from transforms.tokenizers import segments
from transforms.tokenizers.base import TokenizerError
from transforms.tokenizers.cuts import SAFE_CUT, cut_at
from transforms.tokenizers.engines import BpeEngine, independent_engine, load_engine
from transforms.tokenizers.slices import SliceCounter
from transforms.tokenizers.tiktoken_ranks import ENCODINGS, load_checked_ranks

__all__ = ["CUT_RULE_ENCODINGS", "BpeTokenizer", "TiktokenTokenizer"]

#: UTF-8 continuation bytes (``10xxxxxx``), deleted from a token's bytes to count the code points starting in it.
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
#: Encodings whose safe cuts :mod:`transforms.tokenizers.cuts` proves from their pattern: only
#: these get :class:`TiktokenTokenizer`'s segments and slice counts.
CUT_RULE_ENCODINGS = frozenset({"cl100k_base"})


def _without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate code point replaced by U+FFFD (same length)."""
    return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")
#: Texts shorter than this (code points) have their token ends summed in Python, not numpy.
_SHORT_CHARS = 256


class BpeTokenizer:
    """Exact ordinary-text counts for an offline OpenAI encoding, on the fastest exact engine.

    Every count is one whole encoding of the text (no cut rules are assumed), so a chunker
    measures each slice on its own; :class:`TiktokenTokenizer` counts slices of ``cl100k_base``
    from one encoding instead. Memory: one encoding of the text at a time (``boundaries`` holds
    its ids, 4 bytes a token, and offsets).

    Args:
        encoding: ``cl100k_base`` or ``o200k_base`` (:data:`~transforms.tokenizers.tiktoken_ranks.ENCODINGS`).
        engine: ``auto`` (bpe-openai when installed, else tiktoken), ``bpe-openai`` or
            ``tiktoken`` (see :mod:`transforms.tokenizers.engines`). Every engine gives the same
            counts, so the identity does not name it.

    Attributes:
        identity: ``tiktoken:ENCODING:DIGEST8`` (the first 8 hex digits of the ranks file's sha256).
        engine: The engine's name.
        max_token_chars: The most code points that start inside one token (cl100k_base: 128).

    Raises:
        TokenizerError: The encoding is unknown, its ranks file is not installed or its sha256
            is not the published one, or the engine is unknown, missing or disagrees with tiktoken.
    """

    def __init__(self, encoding: str = "cl100k_base", *, engine: str = "auto") -> None:
        import tiktoken

        spec, digest, ranks = load_checked_ranks(encoding)
        self.encoding_name = encoding
        self.identity = f"tiktoken:{encoding}:{digest[:8]}"
        self._encoding = tiktoken.Encoding(
            name=encoding,
            pat_str=spec["pat_str"],
            mergeable_ranks=ranks,
            special_tokens=spec["special_tokens"],
        )
        self._engine: BpeEngine = load_engine(engine, encoding, spec, self._encoding)
        self.engine = self._engine.name
        # Per token id: how many code points start inside its bytes, and whether its first byte
        # starts a code point. Offsets then come from running sums, never from decoding.
        size = max(ranks.values()) + 1
        self._starts_in_token = [0] * size
        self._begins_code_point = [True] * size
        for token_bytes, rank in ranks.items():
            # code points starting in the token: its bytes that are not continuation bytes (10xxxxxx)
            self._starts_in_token[rank] = len(token_bytes.translate(None, _CONTINUATION_BYTES))
            self._begins_code_point[rank] = token_bytes[0] & 0xC0 != 0x80
        #: The most code points that start inside one token (cl100k_base: 128). Consecutive
        #: entries of :meth:`token_ends` differ by at most this, so any ``text[s:e]`` holds at
        #: least ``(e - s) // max_token_chars`` of its token ends: a lower bound on a count that
        #: needs no encoding (``transforms.structure.packing`` uses it).
        self.max_token_chars = max(self._starts_in_token)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the engine (a compiled object), which is built again on load by name."""
        state = dict(self.__dict__)
        del state["_engine"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._engine = load_engine(self.engine, self.encoding_name, ENCODINGS[self.encoding_name], self._encoding)

    def independent(self) -> BpeTokenizer:
        """This tokenizer on an engine of another implementation (tiktoken for bpe-openai,
        bpe-openai for tiktoken when installed, else the same engine), sharing its tables: the
        validation recount uses it, so that no count is checked by the code that made it."""
        twin = copy.copy(self)
        twin._engine = independent_engine(self._engine, self._encoding)
        twin.engine = twin._engine.name
        return twin

    @cached_property
    def _starts_array(self):
        """``_starts_in_token`` as a numpy ``int32`` array (made on first use)."""
        import numpy as np

        return np.asarray(self._starts_in_token, dtype=np.int32)

    @cached_property
    def _begins_array(self):
        """``_begins_code_point`` as a numpy ``bool`` array (made on first use)."""
        import numpy as np

        return np.asarray(self._begins_code_point, dtype=np.bool_)

    @property
    def encoding(self):
        """The encoding's ``tiktoken.Encoding`` (the reference engine's)."""
        return self._encoding

    def encode(self, text: str) -> list[int]:
        """Return the token ids of ``text`` as ordinary text (special-token spellings included)."""
        try:
            return self._engine.encode(text)
        except UnicodeEncodeError:  # lone surrogates: as _ids does
            return self._engine.encode(_without_surrogates(text))

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text`` encoded as ordinary text.

        A lone surrogate (possible in a Python string, never in Parquet) counts as U+FFFD, one
        code point each, as in :meth:`token_offsets`.
        """
        try:
            return self._engine.count(text)
        except UnicodeEncodeError:
            return self._engine.count(_without_surrogates(text))

    def _ids(self, text: str):
        """Token ids of ``text`` (one engine call) as a numpy ``uint32`` array."""
        try:
            return self._engine.encode_array(text)
        except UnicodeEncodeError:
            # Lone surrogates: each becomes U+FFFD, so code points stay where they are (tiktoken's
            # own fallback would join a high and a low surrogate into one character).
            return self._engine.encode_array(_without_surrogates(text))

    def token_offsets(self, tokens: Sequence[int]) -> list[int | None]:
        """Return, for each token of an encoding, the code-point offset where it starts.

        ``None`` where the token starts inside a multi-byte code point (no cut is possible there).
        The list has ``len(tokens) + 1`` entries; the last is the text's length in code points.
        """
        starts = self._starts_in_token
        running = [0, *accumulate(starts[t] for t in tokens)]
        begins = self._begins_code_point
        offsets: list[int | None] = [running[i] if begins[t] else None for i, t in enumerate(tokens)]
        offsets.append(running[-1])
        return offsets

    def boundaries(self, text: str) -> list[int]:
        """Return the code-point offsets where a token of ``text``'s encoding starts, plus the end."""
        if not text:
            return [0]
        import numpy as np

        ids = self._ids(text).astype(np.intp)
        ends = self._starts_array.take(ids).cumsum()
        starts = np.concatenate(([0], ends[:-1]))[self._begins_array.take(ids)]
        return [*starts.tolist(), int(ends[-1])]


class TiktokenTokenizer(BpeTokenizer):
    """``cl100k_base`` counted exactly, with slices counted from one encoding of a text.

    Besides :class:`BpeTokenizer`: a text longer than
    :data:`~transforms.tokenizers.segments.DIRECT_CHARS` is encoded in bounded segments cut where
    the encoding cannot change (and long runs of one character class in windows), so an engine
    call never holds more than a segment; and :meth:`token_ends`, :meth:`slice_counter` and
    :meth:`part_cut` let chunkers count any slice from one encoding of the document. These rest on
    cl100k_base's pattern (:mod:`transforms.tokenizers.cuts`); other encodings take
    :class:`BpeTokenizer`.

    Args:
        encoding: ``cl100k_base`` (:data:`CUT_RULE_ENCODINGS`).
        engine: As :class:`BpeTokenizer`.

    Raises:
        TokenizerError: As :class:`BpeTokenizer`, or an encoding without proven cut rules.
    """

    def __init__(self, encoding: str = "cl100k_base", *, engine: str = "auto") -> None:
        if encoding in ENCODINGS and encoding not in CUT_RULE_ENCODINGS:
            raise TokenizerError(f"cut rules are proven for {sorted(CUT_RULE_ENCODINGS)} only, not {encoding!r}")
        super().__init__(encoding, engine=engine)

    def encode(self, text: str) -> list[int]:
        """Return the token ids of ``text`` as ordinary text (special-token spellings included)."""
        if len(text) < segments.DIRECT_CHARS:
            return super().encode(text)
        return [token for ids in self._encode_segments(text) for token in ids.tolist()]

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text`` encoded as ordinary text.

        A lone surrogate (possible in a Python string, never in Parquet) counts as U+FFFD, one
        code point each, as in :meth:`token_ends`. A text longer than
        :data:`~transforms.tokenizers.segments.DIRECT_CHARS` is encoded in segments, with the same count.
        """
        if len(text) < segments.DIRECT_CHARS:
            try:
                return self._engine.count(text)
            except UnicodeEncodeError:  # lone surrogates: as _ids does
                return len(self._ids(text))
        return sum(len(ids) for ids in self._encode_segments(text))

    def _encode_segments(self, text: str) -> Iterator[Any]:
        """Token ids of ``text`` in consecutive numpy ``uint32`` arrays whose concatenation is the
        whole encoding, no call to tiktoken longer than a segment (see
        :func:`transforms.tokenizers.segments.encode_segments`)."""
        return segments.encode_segments(text, self._ids, self._starts_array, self._begins_array)

    def token_ends(self, text: str):
        """Return, as a numpy integer array, the code-point offset where each token of ``text`` ends.

        A token that ends inside a multi-byte code point counts that code point as ended, so the
        array is non-decreasing and its last entry is ``len(text)``. The number of tokens of
        ``text[s:e]`` is then ``searchsorted(ends, e, "right") - searchsorted(ends, s, "right")``
        exactly whenever ``s`` and ``e`` are pre-token boundaries of cl100k_base's pattern, which
        every line start followed by a non-whitespace character on its line is (a pre-token
        never runs from a line break into the next line's text, and trailing whitespace matches
        the same span alone as in context). ``transforms.structure.packing`` relies on this, and
        ``tests/test_structure_properties.py`` checks it against whole recounts.

        The array is ``int32`` (4 bytes a token) for texts under 2**31 code points, else ``int64``;
        a long text is encoded in segments (:data:`~transforms.tokenizers.segments.SEGMENT_CHARS`), never whole at once.
        """
        import numpy as np

        dtype = np.int32 if len(text) < 2**31 else np.int64

        def ends_of(ids):
            # The gathered starts are summed in place: one array, not two.
            ends = self._starts_array.take(ids) if dtype is np.int32 else self._starts_array.take(ids).astype(dtype)
            return np.cumsum(ends, out=ends)

        if len(text) < _SHORT_CHARS:
            # A short text: numpy's per-call cost (about 6 µs a cumsum) outweighs the loop.
            try:
                ids = self._engine.encode(text)
            except UnicodeEncodeError:  # lone surrogates: as _ids does
                return ends_of(self._ids(text))
            starts = self._starts_in_token
            return np.fromiter(accumulate([starts[t] for t in ids]), dtype=dtype, count=len(ids))
        if len(text) < segments.DIRECT_CHARS:
            return ends_of(self._ids(text))
        # As in slice_counter: the segments' ends are written into one array sized for the most
        # tokens the text can have (one per UTF-8 byte), of which only the pages written become
        # resident; joining per-segment arrays instead held the ends twice at once.
        ends = np.empty(len(text) * (1 if text.isascii() else 4), dtype=dtype)
        n = offset = 0
        for ids in self._encode_segments(text):
            if len(ids):
                part = ends[n : n + len(ids)]
                np.cumsum(self._starts_array.take(ids), dtype=dtype, out=part)
                part += offset
                offset = int(part[-1])
                n += len(ids)
        return ends[:n]

    def part_cut(self, text: str, position: int) -> int:
        """The first offset at or after ``position`` where ``text`` can be cut with no change to
        its encoding: :meth:`token_ends` of the two sides, the second moved by the cut, are
        those of the whole text. A :data:`~transforms.tokenizers.cuts.SAFE_CUT` point (the rule :meth:`_encode_segments`
        relies on), or ``len(text)`` when there is none."""
        match = SAFE_CUT.search(text, max(position - 1, 0))
        while match is not None and cut_at(match) < position:
            match = SAFE_CUT.search(text, match.end())
        return cut_at(match) if match is not None else len(text)

    def boundaries(self, text: str) -> list[int]:
        """Return the code-point offsets where a token of ``text``'s encoding starts, plus the end."""
        return self.slice_counter(text).boundaries().tolist() if text else [0]

    def slice_counter(self, text: str) -> SliceCounter:
        """Encode ``text`` once; then count any slice of it exactly without encoding it whole.

        See :class:`SliceCounter`. Memory: 5 bytes per token of ``text`` (a 50 MB document of
        English, about 12 M tokens: 60 MB), besides the text.
        """
        import numpy as np

        dtype = np.int32 if len(text) < 2**31 else np.int64
        ascii_only = text.isascii()  # then every token starts a code point: no begins array
        starts, begins_of = self._starts_array, self._begins_array
        if len(text) < segments.DIRECT_CHARS:
            index = self._ids(text).astype(np.intp)  # (numpy converts uint32 ids once per gather)
            ends = starts.take(index).astype(dtype, copy=False)
            ends.cumsum(out=ends)
            return SliceCounter(self, text, ends, None if ascii_only else begins_of.take(index))
        # Segments are written into arrays sized for the most tokens the text can have (one per
        # UTF-8 byte): only the pages written become resident, and no second copy is made.
        bound = len(text) * (1 if ascii_only else 4)
        ends = np.empty(bound, dtype=dtype)
        begins = None if ascii_only else np.empty(bound, dtype=np.bool_)
        n = offset = 0
        for ids in self._encode_segments(text):
            if len(ids):
                index = ids.astype(np.intp)
                part = ends[n : n + len(ids)]
                if dtype is np.int32:  # the table's own type: gathered straight into place
                    starts.take(index, out=part)
                else:
                    part[:] = starts.take(index)
                part.cumsum(out=part)
                part += offset
                offset = int(part[-1])
                if begins is not None:
                    begins_of.take(index, out=begins[n : n + len(ids)])
                n += len(ids)
        return SliceCounter(self, text, ends[:n], None if begins is None else begins[:n])
