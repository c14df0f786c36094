"""Where prose too long for the budget is cut: sentence ends, line starts, word starts, tokens.

Positions are code points of the normalized text; counts are tokens of the budget tokenizer,
always of a whole string (a part cut inside a line is never counted from the document's
encoding, which may differ by a token or two there).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from transforms.structure.packing.counting import TokenCounter
from transforms.structure.tree import LINE_BREAK
from transforms.tokenizers import Tokenizer

__all__ = ["MIN_PART_SHARE", "CutCandidates", "ProseCutter"]

# A sentence ends at . ! ? or an ellipsis, with closing quotes or brackets, before whitespace; or
# at a full-width 。！？ or a half-width ｡ with closing quotes or brackets (」』）】), where no
# whitespace follows in Chinese and Japanese text.
_SENTENCE_END = re.compile(
    r"[.!?\u2026][\"'\u201d\u2019)\]]*\s+|[\u3002\uff01\uff1f\uff61][\"'\u201d\u2019)\]\u300d\u300f\uff09\u3011]*\s*"
)
_WORD_START = re.compile(r"\s+")
# Tokens by which a count from the whole-document encoding may differ from a whole recount of a
# slice cut inside a line (measured: -3 to +2); estimates further off than this are trusted.
_ESTIMATE_SLACK = 16
#: The least share of what a part aims at that a cut at a coarse level (a sentence end, a line
#: start, a word start) must give it; and the least share of it the rest after a cut must keep.
MIN_PART_SHARE = 0.5


class CutCandidates:
    """Ascending cut positions inside ``(start, end)``, taken from an iterator only as needed."""

    __slots__ = ("_done", "_end", "_items", "_positions", "_start")

    def __init__(self, positions: Iterator[int], start: int, end: int) -> None:
        self._positions = positions
        self._start, self._end = start, end
        self._items: list[int] = []
        self._done = False

    def through(self, position: int, reach: int) -> list[int]:
        """A sorted list holding every candidate in ``(position, reach)`` (and maybe others).

        Calls must not go back: candidates at or before ``position`` may be forgotten.
        """
        items = self._items
        stale = bisect_right(items, position)
        if stale > 1024 and stale > len(items) // 2:
            del items[:stale]
        while not self._done and (not items or items[-1] < reach):
            p = next(self._positions, None)
            if p is None:
                self._done = True
            elif self._start < p < self._end:
                items.append(p)
        return items


class ProseCutter:
    """Finds the longest part of prose that fits, from a position, for one text.

    Args:
        text: The normalized text.
        counter: Its token counter.
        tokenizer: The budget tokenizer (its ``boundaries`` are the last level of cuts).
        target_tokens: A part aims at this many tokens of embedding text.
        max_tokens: No part passes this many tokens of embedding text.
    """

    def __init__(
        self, text: str, counter: TokenCounter, tokenizer: Tokenizer, target_tokens: int, max_tokens: int
    ) -> None:
        self.text = text
        self.counter = counter
        self.tokenizer = tokenizer
        self.target_tokens = target_tokens
        self.max_tokens = max_tokens

    def candidates(self, start: int, end: int, *, code: bool = False) -> list[CutCandidates]:
        """Cut positions inside ``(start, end)``: sentence starts, line starts, word starts (for
        ``code``, a line of a code block: line starts and word starts only).

        Each level is found lazily, as far as the parts need it, so a long paragraph never has
        all its word starts in memory at once.
        """
        text = self.text
        patterns = (LINE_BREAK, _WORD_START) if code else (_SENTENCE_END, LINE_BREAK, _WORD_START)
        return [
            CutCandidates((m.end() for m in pattern.finditer(text, start, end)), start, end) for pattern in patterns
        ]

    def longest_part(self, head: str, position: int, end: int, levels: list[CutCandidates]) -> tuple[int, int]:
        """Where the part of ``[position, end)`` that follows ``head`` ends, by level; with the
        exact count of ``head + text[position:cut]``.

        The rest of the tile, when it fits ``max_tokens``. Otherwise each level's candidates in
        turn (then the tokenizer's token boundaries) are searched, by exact counts, for the
        largest part within ``target_tokens``; a level's cut is taken only when the part's own
        text holds at least :data:`MIN_PART_SHARE` of what it aims at (else a sentence end a few
        tokens in would make a sliver: the next level, with more candidates, cuts nearer the
        aim), and never so near the end that the rest would be under that share. When the rest
        after a full part would be that small, the part aims at half the rest instead: the last
        two parts share it. Returns ``(position, 0)`` only when ``head`` alone leaves no room
        for a single token.
        """
        text, counter = self.text, self.counter
        limit = self.max_tokens
        rest: int | None = None  # tokens of text[position:end], when near the budget
        head_tokens = counter.exact(head)
        room = limit - head_tokens
        aim = min(self.target_tokens, limit) - head_tokens
        if aim < 1:
            aim = room
        least = int(aim * MIN_PART_SHARE)
        if counter.additive:
            counted_whole = not counter.exceeds(position, end, limit)  # the rest may fit: count it
        else:
            # Counted whole unless far too long to matter: a rest of at least room + least tokens
            # neither fits nor narrows the window below, and counting it at every part of a long
            # tile would cost time quadratic in the tile.
            counted_whole = counter.least_whole(len(head) + end - position) - head_tokens < room + least
        if counted_whole:
            whole = counter.exact(head + text[position:end])
            if whole <= limit:
                return end, whole
            if not counter.additive:
                rest = whole - head_tokens
        if rest is None and counter.additive and not counter.exceeds(position, end, aim + least):
            rest = counter.span(position, end)  # (mid-line ends: off by a token or two)
        goal, low, high = aim, least, room
        if rest is not None:
            if rest < aim + least:
                # The last two parts share what is left: neither is a sliver.
                goal, low, high = (rest + 1) // 2, max(rest - room, rest // 4), min(room, rest - rest // 4)
            else:
                high = min(room, rest - least)
        window = (head_tokens + goal, head_tokens + low, head_tokens + high)
        # No part can hold more code points than this (a token is rarely longer than a few dozen):
        # the candidates looked at stay near the part, so a long paragraph costs linear time.
        reach = min(end, position + 64 * limit + 1024)
        for candidates in levels:
            level = candidates.through(position, reach)
            best = self._pick(head, position, level, bisect_right(level, position), bisect_left(level, reach), window)
            if best is not None:
                return best
        # Token boundaries of a window that holds at least the budget.
        window_end = min(end, position + 8 * limit + 64)
        boundaries = [position + b for b in self.tokenizer.boundaries(text[position:window_end])]
        boundaries = [b for b in boundaries if position < b < end]
        best = self._pick(head, position, boundaries, 0, len(boundaries), window)
        if best is None:
            # (Token boundaries are dense: only a rest whose counts jump past the window.)
            best = self._pick(head, position, boundaries, 0, len(boundaries), (limit, 0, limit))
        if best is not None:
            return best
        return position, 0

    def _pick(
        self, head: str, position: int, candidates: list[int], first: int, stop: int, window: tuple[int, int, int]
    ) -> tuple[int, int] | None:
        """The cut of ``candidates[first:stop]`` for the part after ``head``, or ``None``.

        ``window`` is ``(goal, low, high)`` in tokens of ``head + text[position:cut]``: the
        largest candidate within ``goal`` when it holds at least ``low``, else the first one past
        ``goal`` when it is within ``high``.
        """
        goal, low, high = window
        found = self._bisect(head, position, candidates, first, stop, goal)
        if found is not None and found[1] >= low:
            return found[0], found[1]
        after = found[2] + 1 if found is not None else first
        if after >= stop:
            return None
        counter = self.counter
        if counter.additive and (
            counter.exact(head) + counter.tokens_before(candidates[after]) - counter.tokens_before(position)
            > high + _ESTIMATE_SLACK
        ):  # (already far over by the encoding: not counted whole)
            return None
        count = counter.exact(head + self.text[position : candidates[after]])
        if low <= count <= high:
            return candidates[after], count
        return None

    def single_step(self, position: int) -> tuple[int, int]:
        """The shortest part from ``position``: one token of the tokenizer (or one code point),
        with its count. For a character of more tokens than the budget: that part is over the
        budget, and validation dead-letters it with its text."""
        text = self.text
        steps = [b for b in self.tokenizer.boundaries(text[position : position + 16]) if b > 0]
        cut = position + (steps[0] if steps else 1)
        return cut, self.counter.exact(text[position:cut])

    def trimmed_end(self, head: str, position: int, cut: int, end: int, count: int) -> tuple[int, int]:
        """Where the part ``[position, cut)`` of the tile ending at ``end`` ends, and its count.

        A part cut inside the tile ends at its last non-space character (the whitespace it leaves
        out lies between two chunks; the next part starts at ``cut``), unless that part, counted
        whole after ``head``, would pass ``max_tokens``.
        """
        part_end = cut
        if cut < end:
            text = self.text
            part_end = len(text[position:cut].rstrip()) + position
            if part_end == position:
                part_end = cut
            elif part_end != cut:
                stripped = self.counter.exact(head + text[position:part_end])
                if stripped <= self.max_tokens:
                    count = stripped
                else:
                    part_end = cut
        return part_end, count

    def _estimated_best(self, head: str, position: int, candidates: list[int], first: int, stop: int, goal: int) -> int:
        """Index of the last of ``candidates[first:stop]`` whose count from the document's
        encoding is at most ``goal`` (``first - 1`` if none): a guess, off by a token or two."""
        counter = self.counter
        head_tokens, base = counter.exact(head), counter.tokens_before(position)
        lo, hi, guess = first, stop - 1, first - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if head_tokens + counter.tokens_before(candidates[mid]) - base <= goal:
                guess, lo = mid, mid + 1
            else:
                hi = mid - 1
        return guess

    def _bisect(
        self, head: str, position: int, candidates: list[int], first: int, stop: int, goal: int
    ) -> tuple[int, int, int] | None:
        """Largest of ``candidates[first:stop]`` whose part counts at most ``goal``, as ``(cut,
        count, index)``, or ``None``.

        Every answer is an exact count of the whole ``head + text[position:cut]``. With an
        additive tokenizer the whole-document encoding first proposes a candidate (its counts
        are off by a token or two mid-line), so usually one or two exact counts decide.
        """
        text, counter = self.text, self.counter
        if first >= stop:
            return None

        def exact(i: int) -> int:
            return counter.exact(head + text[position : candidates[i]])

        lo, hi = first, stop - 1
        if counter.additive:
            guess = self._estimated_best(head, position, candidates, first, stop, goal)
            for i in range(guess, max(guess - 3, first - 1), -1):
                count = exact(i)
                if count <= goal:
                    return candidates[i], count, i
            lo, hi = first, max(guess - 3, first - 1)
        best: tuple[int, int, int] | None = None
        while lo <= hi:
            mid = (lo + hi) // 2
            count = exact(mid)
            if count <= goal:
                best, lo = (candidates[mid], count, mid), mid + 1
            else:
                hi = mid - 1
        return best
