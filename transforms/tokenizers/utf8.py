"""One token per UTF-8 byte: an explicit byte budget, not an estimate of any model's tokens."""

from __future__ import annotations

__all__ = ["Utf8ByteTokenizer"]


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
