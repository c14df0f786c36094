"""``LangchainSemanticChunker``: LangChain Experimental's ``SemanticChunker`` with our Embedder.

Beam-free (extra ``semantic``). LangChain groups the sentences; each chunk is looked up in the
source to get offsets where it is a verbatim slice.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from transforms.chunkers.base import Piece
from transforms.chunkers.semantic.breakpoints import checked_vectors
from transforms.chunkers.semantic.embedding import EmbeddingBreakpointChunker
from transforms.chunkers.semantic.model_chunker import INSTALL_HINT
from transforms.documents import Document
from transforms.models import Embedder, ModelError

__all__ = ["LangchainEmbeddings", "LangchainSemanticChunker", "align"]


def align(text: str, chunk: str, cursor: int) -> tuple[int, int] | None:
    """The source interval from ``cursor`` (after whitespace) whose non-whitespace characters are
    ``chunk``'s, in order; ``None`` when the source there does not read as ``chunk``."""
    i, n = cursor, len(text)
    while i < n and text[i].isspace():
        i += 1
    start = i
    for ch in chunk:
        if ch.isspace():
            continue
        while i < n and text[i].isspace():
            i += 1
        if i >= n or text[i] != ch:
            return None
        i += 1
    return start, i


class LangchainEmbeddings:
    """Our :class:`~transforms.models.Embedder` behind LangChain's ``Embeddings`` interface."""

    def __init__(self, embedder: Embedder, batch_size: int) -> None:
        self.embedder = embedder
        self.batch_size = batch_size

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            batch = texts[i : i + self.batch_size]
            out.extend(checked_vectors(self.embedder.embed(batch), len(batch), len(out[0]) if out else None))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class LangchainSemanticChunker(EmbeddingBreakpointChunker):
    """LangChain Experimental's ``SemanticChunker`` itself, embedding with our Embedder.

    A thin wrapper (extra ``semantic``): sentence grouping, thresholds and chunk assembly are
    LangChain's, so the text of each group is exactly what ``SemanticChunker.split_text`` returns.
    LangChain rejoins the sentences of a group with single spaces, so a chunk is not a verbatim
    slice where the source had other whitespace between them (use
    :class:`EmbeddingSemanticChunker` for exact slices). Offsets: each chunk is looked up in the
    source from the end of the previous one (``str.find``); when found it is a verbatim slice and
    gets ``start_offset``/``end_offset``, otherwise both are null (and the job's validation checks
    no offsets for it, as for any chunk without them). A group over ``max_tokens`` is split by the
    recursive rules (its parts keep offsets only when the group had them).

    Args:
        embeddings, buffer_size, breakpoint_threshold_type, breakpoint_threshold_amount,
            number_of_chunks, sentence_split_regex, min_chunk_size, add_start_index, batch_size,
            fallback_on_transient_error, max_tokens, tokenizer: As :class:`EmbeddingSemanticChunker`
            (they are passed to LangChain's ``SemanticChunker`` as they are; ``number_of_chunks``
            keeps LangChain's own meaning there).

    Raises:
        ValueError: As :class:`EmbeddingSemanticChunker`, or langchain-experimental is missing.
    """

    _splitter: Any = None

    def _check_backend(self) -> None:
        import importlib.util

        if importlib.util.find_spec("langchain_experimental") is None:
            raise ValueError(f"LangchainSemanticChunker needs langchain-experimental; {INSTALL_HINT}")

    def close(self) -> None:
        """Drop LangChain's splitter (built again on use) and close the embedder (see
        :meth:`~transforms.chunkers.base.Chunker.close`)."""
        self._splitter = None
        super().close()

    def _langchain(self):
        if self._splitter is None:
            from langchain_experimental.text_splitter import (
                SemanticChunker as LangChainSemanticChunker,
            )

            self._splitter = LangChainSemanticChunker(
                LangchainEmbeddings(self.embeddings, self.batch_size),
                buffer_size=self.buffer_size,
                breakpoint_threshold_type=self.breakpoint_threshold_type,
                breakpoint_threshold_amount=self.breakpoint_threshold_amount,
                number_of_chunks=self.number_of_chunks,
                sentence_split_regex=self.sentence_split_regex,
                min_chunk_size=self.min_chunk_size,
            )
        return self._splitter

    def split(self, document: Document) -> Iterator[Piece]:
        """Yield LangChain's chunks of ``document.content``, with offsets where they are verbatim.

        Raises:
            ChunkingError: ``model_error`` (see the module docstring).
        """
        text = document.content
        try:
            texts = self._langchain().split_text(text)
        except ModelError as err:
            if not (err.transient and self.fallback_on_transient_error):
                self._model_failed(err)
            yield from self._pieces(text, self._local_split(text), self._fallback_metadata(err))
            return
        cursor = 0
        count = self._budget_splitter._counter(text) if self._budget_splitter is not None else None
        for chunk in texts:
            found = align(text, chunk, cursor)
            metadata: dict[str, Any] = {}
            if found is not None:
                cursor = found[1]
            parts: list[tuple[str, int | None, int | None]]
            if found is not None and text[found[0] : found[1]] == chunk:
                parts = [(text[s:e], s, e) for s, e in self._fit(text, *found, count)]
            else:
                parts = [(chunk[s:e], None, None) for s, e in self._fit(chunk, 0, len(chunk))]
            for part, s, e in parts:
                if self.add_start_index and s is not None:
                    metadata = {"start_index": s}
                yield Piece(text=part, start_offset=s, end_offset=e, metadata=metadata)
