"""Line starts of a text, which of them are safe cuts, and tiles of blocks between them.

Positions are code points of the normalized text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from transforms.structure.packing import limits
from transforms.structure.tree import LINE_BREAK, LineStarts, Node

__all__ = ["Lines", "Tile"]

#: A block and the interval ``[start, end)`` it fills: the unit chunks are cut between. ``None``
#: for text before the first block that is not whitespace.
Tile = tuple[Node | None, int, int]

# Optional spaces, then a non-space character, on the same line: what makes a line start stable.
# Python's \s is str.isspace(), a superset of the tokenizer pattern's \s, so a line that starts
# with e.g. U+001C is not taken as stable (the safe side).
_CONTENT_AHEAD = re.compile(r"[^\S\r\n]*\S")


class Lines(LineStarts):
    """Line starts of a text, which of them are safe cuts, and tiles of blocks between them.

    A *stable* position is 0, the end, or a line start whose line has a character that Python
    calls non-space (a superset of the tokenizer pattern's ``\\s``, so this errs on the safe
    side). Chunks are cut only there, except inside prose that has to be split. Stability is
    decided on demand and remembered (the latest ``limits.STABLE_MEMO`` answers: every row of a
    huge table is asked about once): most line starts are never asked about.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._end = len(text)
        self._stable: dict[int, bool] = {0: True, self._end: True}

    def is_stable(self, position: int) -> bool:
        """Whether ``position`` (a code point) is a safe cut (see the class docstring)."""
        known = self._stable.get(position)
        if known is None:
            text = self.text
            known = (
                0 < position < self._end
                and text[position - 1] in "\r\n"
                and not (text[position - 1] == "\r" and text[position] == "\n")
                # (a line that starts with its text needs no pattern: most lines)
                and (not text[position].isspace() or _CONTENT_AHEAD.match(text, position) is not None)
            )
            if len(self._stable) >= limits.STABLE_MEMO:
                # Every row of a huge table is asked about once: remember only the latest ones.
                self._stable = {0: True, self._end: True}
            self._stable[position] = known
        return known

    def stable_after(self, start: int, end: int) -> Iterator[int]:
        """Stable positions strictly inside ``(start, end)``, in order, found as they are taken
        (a long code block's lines are never all listed)."""
        is_stable = self.is_stable
        for m in LINE_BREAK.finditer(self.text, start, end):
            p = m.end()
            if p < end and is_stable(p):
                yield p

    def tiles(self, children: Iterable[Node], lo: int, hi: int) -> list[Tile]:
        """:meth:`iter_tiles` as a list (for children already held: a section's, the root's)."""
        return list(self.iter_tiles(children, lo, hi))

    def iter_tiles(self, children: Iterable[Node], lo: int, hi: int) -> Iterator[Tile]:
        """Cut ``[lo, hi)`` at the line starts of ``children``: ``(node, start, end)`` in order.

        The first tile starts at ``lo``; a child whose line starts at or before the previous cut
        joins the tile before it; text before the first child's line is a ``None`` tile unless it
        is whitespace (then the first child's tile starts at ``lo``). The tiles cover ``[lo, hi)``
        without gaps or overlaps, and every cut between two of them is stable.

        ``children`` is read once, in order, as a stream: a tile's end is the next tile's start,
        so one tile is held back and nothing else (a block's children may be a
        :class:`~transforms.structure.tree.StreamedChildren` too long to hold).
        """
        text = self.text
        node: Node | None = None
        at_last = -1  # where the held-back tile starts (-1: none yet)
        for child in children:
            at = child.start
            if at and text[at - 1] != "\n":
                at = self.line_start(at)
            if at_last < 0 and (at <= lo or not text[lo:at].strip()):
                node, at_last = child, lo
                continue
            known = self._stable.get(at)  # (is_stable's memo first: a call less per block)
            if not (known if known is not None else self.is_stable(at)):
                # Its first line holds only spaces Python sees as such (e.g. U+00A0) that the
                # parser read as text: cut at its first line with other text instead.
                at = next(self.stable_after(at, child.end), hi)
            if at <= (at_last if at_last >= 0 else lo) or at >= hi:
                continue
            if at_last < 0:
                node, at_last = None, lo
            yield node, at_last, at
            node, at_last = child, at
        if at_last < 0:
            yield None, lo, hi
        else:
            yield node, at_last, hi
