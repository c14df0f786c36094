"""The tokenizer protocol every budget tokenizer follows, and the error of a spec that cannot load."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Tokenizer", "TokenizerError", "recount_tokenizer"]


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


def recount_tokenizer(tokenizer: Tokenizer) -> Tokenizer:
    """The tokenizer that recounts chunks in validation: ``tokenizer.independent()`` where the
    tokenizer offers one (the same vocabulary and identity on an engine of another
    implementation: a fault of the engine the chunker counted with is not confirmed by itself),
    else ``tokenizer``."""
    independent = getattr(tokenizer, "independent", None)
    return independent() if independent is not None else tokenizer
