"""What the model-backed chunkers share: option checks, token-budget splitting, model failures.

Beam-free. A group longer than ``max_tokens`` tokens of the injected tokenizer is split by the
recursive separator rules of :class:`~transforms.chunkers.text.RecursiveCharacterTextSplitter`; a
:class:`~transforms.models.ModelError` becomes :class:`~transforms.chunkers.base.ChunkingError`
``model_error``, or a local split marked with :data:`FALLBACK_KEY` when the chunker allows it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from transforms.chunkers.base import Chunker, ChunkingError, Piece
from transforms.chunkers.text import DEFAULT_SEPARATORS, RecursiveCharacterTextSplitter
from transforms.models import ModelError
from transforms.tokenizers import Tokenizer

__all__ = [
    "FALLBACK_KEY",
    "INSTALL_HINT",
    "ModelChunker",
    "flag_option",
    "int_option",
    "optional_int_option",
]

FORMATS = frozenset({"markdown", "text"})
#: Metadata key of a chunk made by local splitting after a transient model failure.
FALLBACK_KEY = "model_fallback"
INSTALL_HINT = "install the 'semantic' extra: pip install 'rechunk[semantic]'"


def optional_int_option(name: str, value: Any, minimum: int) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum} or null, got {value!r}")
    return value


def int_option(name: str, value: Any, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def flag_option(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


class ModelChunker(Chunker):
    """Token-budget splitting and model-failure handling shared by the model-backed chunkers."""

    accepted_content_formats = FORMATS
    # cuts follow the embeddings (a local model runs on sentence-transformers and torch) and,
    # for LangchainSemanticChunker, LangChain's splitter
    fingerprint_libraries = ("langchain-experimental", "sentence-transformers", "torch")
    #: Parameters that take a model; in a configuration file they name one under ``models:``.
    model_parameters: ClassVar[tuple[str, ...]] = ()

    def _init_budget(self, max_tokens: Any, tokenizer: Tokenizer | None) -> None:
        self.max_tokens = optional_int_option("max_tokens", max_tokens, 1)
        if self.max_tokens is not None and tokenizer is None:
            raise ValueError("max_tokens needs a tokenizer, got None")
        self.tokenizer = tokenizer if self.max_tokens is not None else None
        self._budget_splitter = None
        if self.max_tokens is not None:
            self._budget_splitter = RecursiveCharacterTextSplitter(
                chunk_size=self.max_tokens,
                chunk_overlap=0,
                length="tokens",
                tokenizer=tokenizer,
            )

    @classmethod
    def budget_parameter(cls, params: Mapping[str, Any]) -> str | None:
        """``max_tokens``: the job fills it with its own."""
        return "max_tokens"

    def _fit(self, text: str, start: int, end: int, count=None) -> list[tuple[int, int]]:
        """``[start, end)`` itself when it fits ``max_tokens``, else its recursive split (stripped parts).

        ``count(a, b)``, the exact token count of ``text[a:b]`` (the budget splitter's counter of
        ``text``), is made here when not given; pass one to reuse it over a document.
        """
        if self._budget_splitter is None:
            return [(start, end)]
        if count is None:
            count = self._budget_splitter._counter(text)
        if count(start, end) <= self.max_tokens:
            return [(start, end)]
        return self._budget_splitter._split(text, start, end, DEFAULT_SEPARATORS, count)

    def _pieces(self, text: str, groups: Sequence[tuple[int, int]], metadata: Mapping[str, Any]) -> Iterator[Piece]:
        # One counter per document: it encodes the text once and counts any slice exactly.
        count = self._budget_splitter._counter(text) if self._budget_splitter is not None else None
        for start, end in groups:
            for s, e in self._fit(text, start, end, count):
                yield Piece(
                    text=text[s:e],
                    start_offset=s,
                    end_offset=e,
                    metadata=dict(metadata),
                )

    def _local_split(self, text: str) -> list[tuple[int, int]]:
        """The fallback: the recursive rules over the whole text, by ``max_tokens`` when set, else
        by :class:`RecursiveCharacterTextSplitter`'s default 1000 characters."""
        if self._budget_splitter is not None:
            splitter = self._budget_splitter
        else:
            splitter = RecursiveCharacterTextSplitter(chunk_overlap=0)
        return splitter._split(text, 0, len(text), DEFAULT_SEPARATORS, splitter._counter(text))

    def _model_failed(self, err: ModelError) -> None:
        raise ChunkingError("model_error", str(err)) from err

    def _fallback_metadata(self, err: ModelError) -> dict[str, Any]:
        return {FALLBACK_KEY: "transient_model_error"}
