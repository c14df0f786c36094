"""``CharacterTextSplitter``: split on one separator, then merge (LangChain's semantics)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from transforms.chunkers.base import Piece
from transforms.chunkers.text.merging import MergingSplitter
from transforms.chunkers.text.separators import RegexClock, check_pattern
from transforms.chunkers.text.spans import Count
from transforms.tokenizers import Tokenizer

__all__ = ["CharacterTextSplitter"]


def _holds_text(separator: str) -> bool:
    """Whether a separator (or a match of one) holds more than whitespace: such a separator is
    kept, at the start of the piece after it, instead of being dropped between two chunks."""
    return bool(separator) and not separator.isspace()


class CharacterTextSplitter(MergingSplitter):
    """Split on one separator only, then merge pieces up to ``chunk_size``.

    Chunks are verbatim slices of the text: a separator between two pieces of a chunk stays in
    it as it is in the text, and one that holds more than whitespace (``---``, a heading line a
    regular expression matched) starts the chunk after a cut, so no text is dropped (LangChain joins the pieces with the separator instead, which with a
    regular expression writes the pattern itself into the chunk). Never descends to a smaller separator: a piece longer than ``chunk_size`` becomes one chunk
    as it is (and the job's validation rejects it if it exceeds the token budget). Right when the
    source's own structure guarantees short pieces at one boundary.

    Args:
        chunk_size: Maximum chunk length, in code points or in tokens (see ``length``).
        chunk_overlap: Maximum length carried from the end of one chunk into the next, same unit.
        separator: The string to split on; ``""`` cuts anywhere safe (between code points, or
            between tokens for ``length="tokens"``).
        length: ``"characters"`` (code points) or ``"tokens"`` (of ``tokenizer``).
        tokenizer: The tokenizer that measures ``length="tokens"``.
        is_separator_regex: ``separator`` is a regular expression (``re`` syntax; lookarounds
            such as ``(?<=\\. )`` match no characters), as LangChain's option of that name; the
            pieces are the text between its matches (:mod:`~transforms.chunkers.text.separators`).

    Raises:
        ValueError: ``chunk_size <= 0``, ``chunk_overlap < 0`` or ``>= chunk_size``, a
            non-string separator, an unknown ``length``, ``length="tokens"`` without a tokenizer,
            or a regular expression that ``re`` refuses, that matches the empty string or that
            backtracks catastrophically.
    """

    def __init__(
        self,
        *,
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
        separator: str = "\n\n",
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
        if not isinstance(separator, str):
            raise ValueError(f"separator must be a string, got {separator!r}")
        self.separator = separator
        self._pattern = check_pattern(separator, "separator") if is_separator_regex and separator else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "separator": self.separator,
            "length": self.length,
            # Only when set, so literal configurations keep their config_hash.
            **({"is_separator_regex": True} if self.is_separator_regex else {}),
        }

    def split_text(self, text: str) -> Iterator[Piece]:
        """Yield merged runs of separator-delimited pieces of ``text`` as verbatim slices.

        Raises:
            ChunkingError: ``chunker_error`` when the separator's regular expression runs out
                of time on the text.
        """
        sep = self.separator
        count = self._counter(text)
        if self._pattern is not None:
            pieces, gaps = self._regex_pieces(text, count)
            for start, end in self._merge(text, pieces, gaps, cut=False, count=count):
                yield Piece(text=text[start:end], start_offset=start, end_offset=end)
            return
        kept = _holds_text(sep)
        if sep:
            bounds, pos, search = [], 0, 0
            while (hit := text.find(sep, search)) != -1:
                bounds.append((pos, hit))
                search = hit + len(sep)
                pos = hit if kept else search
            bounds.append((pos, len(text)))
            pieces = [(s, e, count(s, e)) for s, e in bounds if s < e]
        else:
            pieces = self._atoms(text, 0, len(text), count)
        gap = self._measure(sep) if sep and not kept else 0
        for start, end in self._merge(text, pieces, gap, cut=not sep, count=count):
            yield Piece(text=text[start:end], start_offset=start, end_offset=end)

    def _regex_pieces(self, text: str, count: Count) -> tuple[list[tuple[int, int, int]], list[int]]:
        """The non-empty stretches between the separator's matches, and per piece the length of
        what lies between it and the piece before (``0`` for the first). A match that holds more
        than whitespace starts the piece after it (it is text, never dropped)."""
        bounds, pos = [], 0
        for a, b in zip(*RegexClock().matches(self._pattern, text), strict=True):
            bounds.append((pos, a))
            pos = max(pos, a if _holds_text(text[a:b]) else b)
        bounds.append((pos, len(text)))
        pieces = [(s, e, count(s, e)) for s, e in bounds if s < e]
        gaps = [0] + [count(prev[1], nxt[0]) if nxt[0] > prev[1] else 0 for prev, nxt in itertools.pairwise(pieces)]
        return pieces, gaps
