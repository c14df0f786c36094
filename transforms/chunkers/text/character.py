"""``CharacterTextSplitter``: split on one literal separator, then merge (LangChain's semantics)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from transforms.chunkers.base import Piece
from transforms.chunkers.text.merging import MergingSplitter
from transforms.documents import Document
from transforms.tokenizers import Tokenizer

__all__ = ["CharacterTextSplitter"]


class CharacterTextSplitter(MergingSplitter):
    """Split on one literal separator only, then merge pieces up to ``chunk_size``.

    Never descends to a smaller separator: a piece longer than ``chunk_size`` becomes one chunk
    as it is (and the job's validation rejects it if it exceeds the token budget). Right when the
    source's own structure guarantees short pieces at one boundary.

    Args:
        chunk_size: Maximum chunk length, in code points or in tokens (see ``length``).
        chunk_overlap: Maximum length carried from the end of one chunk into the next, same unit.
        separator: The literal string to split on; ``""`` cuts anywhere safe (between code
            points, or between tokens for ``length="tokens"``).
        length: ``"characters"`` (code points) or ``"tokens"`` (of ``tokenizer``).
        tokenizer: The tokenizer that measures ``length="tokens"``.

    Raises:
        ValueError: ``chunk_size <= 0``, ``chunk_overlap < 0`` or ``>= chunk_size``, a
            non-string separator, an unknown ``length``, or ``length="tokens"`` without a tokenizer.
    """

    def __init__(
        self,
        *,
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
        separator: str = "\n\n",
        length: str = "characters",
        tokenizer: Tokenizer | None = None,
    ) -> None:
        super().__init__(chunk_size=chunk_size, chunk_overlap=chunk_overlap, length=length, tokenizer=tokenizer)
        if not isinstance(separator, str):
            raise ValueError(f"separator must be a string, got {separator!r}")
        self.separator = separator

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "separator": self.separator,
            "length": self.length,
        }

    def split(self, document: Document) -> Iterator[Piece]:
        """Yield merged runs of separator-delimited pieces as verbatim slices."""
        text = document.content
        sep = self.separator
        count = self._counter(text)
        if sep:
            bounds, pos = [], 0
            while (hit := text.find(sep, pos)) != -1:
                bounds.append((pos, hit))
                pos = hit + len(sep)
            bounds.append((pos, len(text)))
            pieces = [(s, e, count(s, e)) for s, e in bounds if s < e]
        else:
            pieces = self._atoms(text, 0, len(text), count)
        gap = self._measure(sep) if sep else 0
        for start, end in self._merge(text, pieces, gap, cut=not sep, count=count):
            yield Piece(text=text[start:end], start_offset=start, end_offset=end)
