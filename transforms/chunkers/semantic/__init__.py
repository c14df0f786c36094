"""Model-backed chunkers: embedding-distance sentence cuts, LangChain's SemanticChunker, chat grouping.

Beam-free. Names, parameters and defaults follow ``EmbeddingSemanticChunker``,
``LangchainSemanticChunker`` and ``SemanticChunker`` of the reference API. The model is injected (an
:class:`~transforms.models.Embedder` or :class:`~transforms.models.ChatModel`); in a configuration
file a chunker names one of the ``models:`` (see ``pipelines.config``). A chunker's ``config()``
holds the model's nonsecret ``identity``, never a credential.

The job's token budget holds for all three: when ``max_tokens`` is set (the job sets it), a
group longer than that many tokens of the injected tokenizer is split further by the recursive
separator rules of :class:`~transforms.chunkers.text.RecursiveCharacterTextSplitter` (paragraphs,
lines, words, token boundaries) instead of being dead-lettered for size.

Failures: a :class:`~transforms.models.ModelError` becomes :class:`ChunkingError` ``model_error``
(the document goes to the dead letter), except a *transient* one (connection, timeout, HTTP 429
or 5xx after the client's retries) when ``fallback_on_transient_error`` is true: the document is
then split locally and every chunk's metadata says so (``model_fallback``). An invalid answer of a
model (wrong count of vectors, a vector that is not all finite numbers or not of the others'
dimension, a chat reply that is not the asked-for JSON, boundaries out of range or out of order)
is a non-transient ``model_error``: it is never trusted and never falls back silently.

Modules: :mod:`~transforms.chunkers.semantic.model_chunker` (the budget splitting and failure
handling they share), :mod:`~transforms.chunkers.semantic.breakpoints` (thresholds, distances and
checked vectors), :mod:`~transforms.chunkers.semantic.embedding`,
:mod:`~transforms.chunkers.semantic.langchain_adapter`, :mod:`~transforms.chunkers.semantic.chat`
and :mod:`~transforms.chunkers.semantic.boundaries` (the chat answer's validation).
"""

from transforms.chunkers.semantic.boundaries import parse_boundaries
from transforms.chunkers.semantic.breakpoints import (
    BREAKPOINT_DEFAULTS,
    breakpoint_threshold,
    checked_vectors,
)
from transforms.chunkers.semantic.chat import SemanticChunker
from transforms.chunkers.semantic.embedding import EmbeddingSemanticChunker
from transforms.chunkers.semantic.langchain_adapter import LangchainSemanticChunker
from transforms.chunkers.semantic.model_chunker import FALLBACK_KEY

__all__ = [
    "BREAKPOINT_DEFAULTS",
    "FALLBACK_KEY",
    "EmbeddingSemanticChunker",
    "LangchainSemanticChunker",
    "SemanticChunker",
    "breakpoint_threshold",
    "checked_vectors",
    "parse_boundaries",
]
