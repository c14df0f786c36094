"""Bounded-memory cl100k_base encoding of long texts: safe-cut segments and windowed long runs.

Beam-free. tiktoken is given at most :data:`SEGMENT_CHARS` code points per call: a longer text is
cut at :data:`~transforms.tokenizers.cuts.SAFE_CUT` points, where its tokenization cannot change,
so the segments' encodings joined are the whole text's encoding token for token. A run of one
character class of :data:`LONG_RUN_CHARS` or more is one pre-token, on which tiktoken's merge
loop is quadratic; such a run is encoded in overlapping windows joined where two windows agree
(rust-gems ``bpe``, "Corollary III"). ``tests/test_tokenizers.py`` checks every path against
whole encodings.

The functions take the encoder as three pieces: ``ids(text)`` (one tiktoken call, the token ids
as a numpy ``uint32`` array) and, per token id, the number of code points that start in it
(``starts``, numpy ``int32``) and whether its first byte starts a code point (``begins``, numpy
``bool``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

from transforms.tokenizers.cuts import SAFE_CUT, cut_at, last_safe_cut

__all__ = [
    "DIRECT_CHARS",
    "LONG_RUN",
    "LONG_RUN_CHARS",
    "RUN_OVERLAP_CHARS",
    "RUN_WINDOW_CHARS",
    "SEGMENT_CHARS",
    "encode_segments",
    "long_run_pattern",
    "may_hold_long_run",
    "run_zones",
]

#: Token ids of one tiktoken call, as a numpy ``uint32`` array.
IdsOf = Callable[[str], Any]

#: Longest text (in code points) given to tiktoken in one call. A longer text is encoded in
#: segments cut at :data:`~transforms.tokenizers.cuts.SAFE_CUT` points, where cl100k_base's
#: tokenization cannot change, so the result is the whole text's encoding token for token, and
#: each call's memory is bounded.
SEGMENT_CHARS = 1 << 16
#: A run of one character class at least this long (code points) is one pre-token, on which
#: tiktoken's merge loop takes quadratic time (64 K letters: 1.4 s; 200 K of ``é``: 40 s; 1 M:
#: minutes). The classes (see :func:`long_run_pattern`): letters of any script, symbols and
#: punctuation, horizontal whitespace, line breaks. Such a run is encoded in overlapping windows.
LONG_RUN_CHARS = 1024
#: Window and overlap, in code points, for long runs; joined where both windows have the same
#: token at the same place (see :func:`encode_segments`).
RUN_WINDOW_CHARS = 512
RUN_OVERLAP_CHARS = 128
#: Texts shorter than this are given to tiktoken whole, without looking for long runs (a single
#: pre-token of this length costs about 5 ms).
DIRECT_CHARS = 4096
# Code points at each end of a long run never used for a join (a piece may start one or two
# characters before or after a run: a leading space, a contraction, a trailing space).
_RUN_MARGIN = 8


def long_run_pattern(length: int):
    """Runs of at least ``length`` code points of one cl100k_base pre-token class.

    The classes follow the encoding's pattern (``regex`` syntax, as tiktoken's own): letters
    (``\\p{L}++``: one piece), symbols and punctuation (``[^\\s\\p{L}\\p{N}]++``: one piece),
    and whitespace (cut into at most three pieces, see :func:`run_zones`). Digits are grouped
    by three and never form a long piece.
    """
    import regex

    return regex.compile(r"\p{L}{%d,}|[^\s\p{L}\p{N}]{%d,}|\s{%d,}" % ((length,) * 3))


def run_zones(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The stretches of ``text[start:end]`` that lie inside one long pre-token, minus margins.

    A letter or symbol run is one piece. A whitespace run is at most three: its leading line
    breaks (a punctuation piece before it takes them, ``[\\r\\n]*``), then everything up to its
    last line break (``\\s*[\\r\\n]``: the greedy ``\\s*`` gives back only what the line break
    needs), then the spaces after it (``\\s+(?!\\S)``, the last one maybe joining the next
    piece). Each part of at least :data:`LONG_RUN_CHARS` code points is a zone; a zone keeps
    :data:`_RUN_MARGIN` code points away from its part's ends.
    """
    zones = []
    for m in LONG_RUN.finditer(text, start, end):
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


LONG_RUN = long_run_pattern(LONG_RUN_CHARS)


def may_hold_long_run(text: str) -> bool:
    """Whether ``text`` holds a :data:`LONG_RUN_CHARS` run of one class (never wrong when it says no).

    The classes are those of :data:`LONG_RUN`. The text is read as UTF-8 bytes, 64 K code points
    at a time (pieces overlapping by a run's length: bounded memory). Each class has a byte table
    (``bytes.translate``): its ASCII bytes, and every byte of a non-ASCII code point (which may
    be a letter, a symbol or a space), map to 1. A run of the class is then at least
    ``LONG_RUN_CHARS`` consecutive 1 bytes; and every 16th code point of the piece holds
    ``LONG_RUN_CHARS // 16`` consecutive code points of the run, which are at least as many
    consecutive 1 bytes. So that sample (a sixteenth of the piece to encode) is looked at first
    (real text almost never has such a streak), and only where it has one is the whole piece
    encoded and searched (``bytes.find``). Text of a script written without ASCII spaces or
    punctuation (1,024 code points of it) passes this check;
    :func:`encode_segments` then finds no run in it and encodes it whole.
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
    """The byte tables of :func:`may_hold_long_run`: letters, symbols, whitespace."""
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


def encode_segments(text: str, ids: IdsOf, starts: Any, begins: Any) -> Iterator[Any]:
    """Token ids of ``text`` in consecutive arrays whose concatenation is the whole encoding.

    Segments of at most :data:`SEGMENT_CHARS` code points end at safe cuts. Where there is none
    that close, the segment runs to the next one. A segment that may hold a long run of one
    character class (:data:`LONG_RUN_CHARS`) goes to :func:`_long_stretch`, which encodes such
    runs in windows.

    Args:
        text: The text to encode.
        ids: One tiktoken call (see the module docstring).
        starts: Per token id, the code points that start in it.
        begins: Per token id, whether its first byte starts a code point.

    Yields:
        numpy ``uint32`` arrays of token ids, in text order.
    """
    n, start = len(text), 0
    while start < n:
        end = n if n - start <= SEGMENT_CHARS else last_safe_cut(text, start, start + SEGMENT_CHARS)
        if end is None:  # nothing safe within reach: up to the next safe cut
            match = SAFE_CUT.search(text, start + SEGMENT_CHARS)
            end = cut_at(match) if match else n
        segment = text if end - start == n else text[start:end] if end - start <= SEGMENT_CHARS else None
        if segment is None or may_hold_long_run(segment):
            yield from _long_stretch(text, start, end, ids, starts, begins)
        else:
            yield ids(segment)
        start = end


def _long_stretch(text: str, start: int, end: int, ids: IdsOf, starts: Any, begins: Any) -> Iterator[Any]:
    """Token ids of ``text[start:end]`` (which starts and ends at safe cuts, or the text's ends).

    Outside long runs the text is encoded as it is. A long run is one pre-token, so its windows
    are joined as byte-pair encodings are: if the encodings of two overlapping windows have the
    same token at the same place, the encoding of the whole is the first's tokens up to it, then
    the second's from it on (a token sequence is BPE's output if both of its overlapping parts
    are; rust-gems ``bpe``, "Corollary III"). The next window starts at a token start of the
    current one, where the two almost always agree; when they do not, a wider overlap is tried
    (:func:`_join_windows`), and as a last resort the rest is encoded whole (exact, slow).
    """
    zones = run_zones(text, start, end)
    if not zones:
        yield ids(text[start:end])
        return
    zone_starts = [z[0] for z in zones]

    def window_end(at: int) -> int:
        k = bisect_right(zone_starts, at) - 1
        if k >= 0 and at + RUN_WINDOW_CHARS <= zones[k][1]:
            return at + RUN_WINDOW_CHARS  # still inside the run
        k += 1  # the next run's first window, or the end
        return zones[k][0] + RUN_WINDOW_CHARS if k < len(zones) else end

    cur_start, cur_end = start, window_end(start)
    cur = ids(text[cur_start:cur_end])
    while cur_end < end:
        zone_start = zones[bisect_right(zone_starts, cur_end) - 1][0]
        joined = _join_windows(text, cur, cur_start, cur_end, zone_start, window_end, ids, starts, begins)
        if joined is None:  # never seen; exact but slow
            yield ids(text[cur_start:end])
            return
        i, j, at, next_end, following = joined
        yield cur[:i]
        cur, cur_start, cur_end = following[j:], at, next_end
    yield cur


def _join_windows(
    text: str,
    cur: Any,
    cur_start: int,
    cur_end: int,
    zone_start: int,
    window_end: Callable[[int], int],
    ids: IdsOf,
    starts: Any,
    begins: Any,
) -> tuple[int, int, int, int, Any] | None:
    """Encode the window after ``cur`` (the ids of ``text[cur_start:cur_end]``) and find where
    the two agree: ``(i, j, at, next_end, following)`` with ``cur[i] == following[j]`` both
    starting at code point ``at``, ``following`` the ids of the window ending at ``next_end``;
    ``None`` when no overlap tried (:data:`RUN_OVERLAP_CHARS`, then twice that) has one.
    """
    import numpy as np

    # Only tokens that start a code point can be joined at: their indices, and the code points
    # from each one's start to cur_end (those starting at or after it).
    points = starts[cur]
    mine = np.flatnonzero(begins[cur])
    to_end = (int(points.sum()) - (np.cumsum(points) - points))[mine]
    for overlap in (RUN_OVERLAP_CHARS, 2 * RUN_OVERLAP_CHARS):
        reach = min(cur_end - zone_start, cur_end - cur_start)
        aligned = to_end[(to_end >= overlap) & (to_end <= reach)]
        next_start = cur_end - (int(aligned.min()) if len(aligned) else min(overlap, reach))
        next_end = window_end(next_start)
        following = ids(text[next_start:next_end])
        next_points = starts[following]
        offsets = next_start + np.cumsum(next_points) - next_points
        theirs = np.flatnonzero(begins[following] & (offsets < cur_end))
        # Start positions of code-point-starting tokens strictly increase: unique.
        shared, a, b = np.intersect1d(cur_end - to_end, offsets[theirs], assume_unique=True, return_indices=True)
        i, j = mine[a], theirs[b]
        same = np.flatnonzero(cur[i] == following[j])
        if len(same):
            return int(i[same[0]]), int(j[same[0]]), int(shared[same[0]]), next_end, following
    return None
