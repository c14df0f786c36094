"""``EmbeddingSemanticChunker``: cut between sentences where embeddings of neighbours are far apart.

Beam-free. The statistics are LangChain Experimental's ``SemanticChunker``
(``langchain_experimental/text_splitter.py``); the chunks are verbatim slices with offsets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from transforms.chunkers.base import Piece
from transforms.chunkers.semantic.breakpoints import (
    BREAKPOINT_DEFAULTS,
    THRESHOLD_TYPES,
    breakpoint_threshold,
    checked_vectors,
    cosine_distance,
)
from transforms.chunkers.semantic.model_chunker import (
    ModelChunker,
    flag_option,
    int_option,
    optional_int_option,
)
from transforms.documents import Document
from transforms.models import Embedder, ModelError
from transforms.tokenizers import Tokenizer

__all__ = ["EmbeddingBreakpointChunker", "EmbeddingSemanticChunker"]


class EmbeddingBreakpointChunker(ModelChunker):
    """The options, their checks and :meth:`to_dict` of the chunkers that cut between sentences
    where their embeddings are far apart: :class:`EmbeddingSemanticChunker` and
    :class:`~transforms.chunkers.semantic.langchain_adapter.LangchainSemanticChunker`.

    Args and Raises: as :class:`EmbeddingSemanticChunker`.
    """

    model_parameters = ("embeddings",)

    def __init__(
        self,
        *,
        embeddings: Embedder,
        buffer_size: int = 1,
        breakpoint_threshold_type: str = "percentile",
        breakpoint_threshold_amount: float | None = None,
        number_of_chunks: int | None = None,
        sentence_split_regex: str = r"(?<=[.?!])\s+",
        min_chunk_size: int | None = None,
        add_start_index: bool = False,
        batch_size: int = 64,
        fallback_on_transient_error: bool = False,
        max_tokens: int | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if not isinstance(embeddings, Embedder):
            raise ValueError(f"embeddings must be an Embedder (identity, embed), got {embeddings!r}")
        self.buffer_size = int_option("buffer_size", buffer_size, 0)
        _check_threshold(breakpoint_threshold_type, breakpoint_threshold_amount)
        self.number_of_chunks = optional_int_option("number_of_chunks", number_of_chunks, 1)
        self._sentence_end = _sentence_end_pattern(sentence_split_regex)
        self.min_chunk_size = optional_int_option("min_chunk_size", min_chunk_size, 1)
        self.add_start_index = flag_option("add_start_index", add_start_index)
        self.batch_size = int_option("batch_size", batch_size, 1)
        self.fallback_on_transient_error = flag_option("fallback_on_transient_error", fallback_on_transient_error)
        self.embeddings = embeddings
        self.breakpoint_threshold_type = breakpoint_threshold_type
        self.breakpoint_threshold_amount = (
            BREAKPOINT_DEFAULTS[breakpoint_threshold_type]
            if breakpoint_threshold_amount is None
            else breakpoint_threshold_amount
        )
        self.sentence_split_regex = sentence_split_regex
        self._init_budget(max_tokens, tokenizer)
        self._check_backend()

    def to_dict(self) -> dict[str, Any]:
        return {
            "embeddings": self.embeddings.identity,
            "buffer_size": self.buffer_size,
            "breakpoint_threshold_type": self.breakpoint_threshold_type,
            "breakpoint_threshold_amount": self.breakpoint_threshold_amount,
            "number_of_chunks": self.number_of_chunks,
            "sentence_split_regex": self.sentence_split_regex,
            "min_chunk_size": self.min_chunk_size,
            "add_start_index": self.add_start_index,
            "batch_size": self.batch_size,
            "fallback_on_transient_error": self.fallback_on_transient_error,
            "max_tokens": self.max_tokens,
        }

    def _check_backend(self) -> None:
        """Raise ``ValueError`` when a library the cuts need is missing (none by default)."""


class EmbeddingSemanticChunker(EmbeddingBreakpointChunker):
    """Cut between sentences where neighbouring sentence groups are far apart in embedding space.

    The statistics are LangChain Experimental's ``SemanticChunker``
    (``langchain_experimental/text_splitter.py``, after Greg Kamradt's notebook): the text is cut
    into sentences by ``sentence_split_regex``; each sentence is embedded together with
    ``buffer_size`` sentences on either side (joined by one space, as LangChain does); the cosine
    distance between consecutive groups is compared with a threshold computed by
    ``breakpoint_threshold_type`` (see :func:`breakpoint_threshold`), and every distance above it
    is a cut. So with the same embedder the cuts are LangChain's.

    The departures, as the reference API promises them: chunks are verbatim slices with
    code-point offsets that keep all whitespace (a chunk runs from the start of its first sentence
    to the start of the next chunk, so the chunks concatenate to the document, unless a group
    needed budget splitting); ``number_of_chunks`` takes the ``number_of_chunks - 1`` largest
    distances exactly (earlier offset first on ties) instead of LangChain's interpolated
    percentile; a whitespace-only "sentence" (e.g. after the final full stop of a text that ends
    with a line break) belongs to the sentence before it; ``min_chunk_size`` is in source characters (a group shorter than it runs on to the
    next cut, as in LangChain, so it may reduce the number of chunks); and a group longer than
    ``max_tokens`` is split by the recursive rules (see the module docstring).

    Args:
        embeddings: The :class:`~transforms.models.Embedder`.
        buffer_size: Sentences on either side embedded with each sentence (default 1).
        breakpoint_threshold_type: ``percentile`` (default), ``standard_deviation``,
            ``interquartile`` or ``gradient``.
        breakpoint_threshold_amount: The statistic's parameter; ``None`` takes LangChain's default
            (95, 3, 1.5, 95).
        number_of_chunks: Ask for this many chunks instead of a threshold.
        sentence_split_regex: Where sentences end (default ``(?<=[.?!])\\s+``); the match stays
            with the sentence before it. Capture groups are not treated as sentences. A pattern
            that matches the empty string between any two characters (``\\s*``) is refused; an
            empty match guarded by a lookbehind (``(?<=[。！？])``) is fine.
        min_chunk_size: Minimum chunk length in characters, or ``None``.
        add_start_index: Also put the chunk's ``start_index`` (its start offset) in its metadata.
        batch_size: Texts per ``embed`` call.
        fallback_on_transient_error: On a transient model failure, split the document with the
            recursive rules instead (``model_fallback`` in each chunk's metadata); otherwise the
            document is dead-lettered with ``model_error``.
        max_tokens: Token budget of a chunk (the job's ``max_tokens``), or ``None`` for none.
        tokenizer: The budget tokenizer (injected).

    Raises:
        ValueError: A parameter is out of range (the message names it and the value), the regex
            does not compile or matches everywhere, or ``embeddings`` is not an Embedder.
    """

    def sentences(self, text: str) -> list[tuple[int, int]]:
        """Sentence intervals ``[start, end)``: the pieces ``re.split(sentence_split_regex, text)`` gives,
        except that a whitespace-only piece is joined to the one before it (LangChain embeds it),
        or to the one after it when it is the first (e.g. a text starting with a match).

        The separator between sentence ``i`` and ``i + 1`` is ``text[end_i:start_{i+1}]``.
        """
        spans, pos = [], 0
        for match in self._sentence_end.finditer(text):
            spans.append((pos, match.start()))
            pos = match.end()
        spans.append((pos, len(text)))
        # A whitespace-only "sentence" (the text ends with a match, or two matches meet) joins the
        # one before it: embedded alone it would look like the strongest topic change of all.
        out = [spans[0]]
        for start, end in spans[1:]:
            if not text[start:end].strip():
                out[-1] = (out[-1][0], end)
            elif not text[slice(*out[-1])].strip():
                out[-1] = (
                    out[-1][0],
                    end,
                )  # a whitespace-only first "sentence" joins the next one
            else:
                out.append((start, end))
        return out

    def distances(self, text: str, sentences: Sequence[tuple[int, int]]) -> list[float]:
        """Cosine distances between consecutive buffered sentence groups (LangChain's
        ``combine_sentences`` and ``calculate_cosine_distances``), embedded ``batch_size`` at a time.

        Raises:
            ModelError: From the embedder, or an answer :func:`checked_vectors` refuses.
        """
        words = [text[s:e] for s, e in sentences]
        n, b = len(words), self.buffer_size
        combined = [" ".join(words[max(0, i - b) : i + 1 + b]) for i in range(n)]
        vectors: list[list[float]] = []
        for i in range(0, n, self.batch_size):
            batch = combined[i : i + self.batch_size]
            vectors.extend(
                checked_vectors(
                    self.embeddings.embed(batch),
                    len(batch),
                    len(vectors[0]) if vectors else None,
                )
            )
        return [cosine_distance(vectors[i], vectors[i + 1]) for i in range(n - 1)]

    def breakpoints(self, distances: Sequence[float]) -> list[int]:
        """Indices ``i`` such that the text is cut between sentence ``i`` and ``i + 1``, ascending."""
        if self.number_of_chunks is not None:
            strongest = sorted(range(len(distances)), key=lambda i: (-distances[i], i))
            return sorted(strongest[: self.number_of_chunks - 1])
        threshold, array = breakpoint_threshold(
            distances, self.breakpoint_threshold_type, self.breakpoint_threshold_amount
        )
        return [i for i, x in enumerate(array) if x > threshold]

    def cuts(self, text: str) -> list[tuple[int, int]]:
        """The semantic groups as intervals ``[start, end)`` that tile ``text`` (before budget splitting).

        Raises:
            ModelError: From the embedder.
        """
        sentences = self.sentences(text)
        n = len(sentences)
        if n == 1:
            return [(0, len(text))]
        if self.breakpoint_threshold_type == "gradient" and n == 2 and self.number_of_chunks is None:
            breaks = [0]  # LangChain returns the two sentences (np.gradient needs 2 distances)
        else:
            breaks = self.breakpoints(self.distances(text, sentences))
        groups, first = [], 0
        for i in breaks:
            # As LangChain: a group shorter than min_chunk_size runs on to the next cut.
            if self.min_chunk_size is not None and sentences[i][1] - sentences[first][0] < self.min_chunk_size:
                continue
            groups.append(i)
            first = i + 1
        starts = [0] + [sentences[i + 1][0] for i in groups]
        return list(zip(starts, starts[1:] + [len(text)]))

    def split(self, document: Document) -> Iterator[Piece]:
        """Yield the semantic groups of ``document.content`` as verbatim slices with offsets.

        Raises:
            ChunkingError: ``model_error`` (see the module docstring).
        """
        text = document.content
        metadata: dict[str, Any] = {}
        try:
            groups = self.cuts(text)
        except ModelError as err:
            if not (err.transient and self.fallback_on_transient_error):
                self._model_failed(err)
            groups, metadata = self._local_split(text), self._fallback_metadata(err)
        for piece in self._pieces(text, groups, metadata):
            if self.add_start_index:
                piece = Piece(
                    text=piece.text,
                    start_offset=piece.start_offset,
                    end_offset=piece.end_offset,
                    metadata={**piece.metadata, "start_index": piece.start_offset},
                )
            yield piece


def _check_threshold(threshold_type: Any, amount: Any) -> None:
    """Check ``breakpoint_threshold_type`` and ``breakpoint_threshold_amount`` (a finite number or
    ``None``; a percentile in ``[0, 100]`` for ``percentile`` and ``gradient``).

    Raises:
        ValueError: Naming the bad value.
    """
    if threshold_type not in THRESHOLD_TYPES:
        raise ValueError(f"breakpoint_threshold_type must be one of {THRESHOLD_TYPES}, got {threshold_type!r}")
    if amount is not None and (
        isinstance(amount, bool) or not isinstance(amount, (int, float)) or not math.isfinite(amount)
    ):
        raise ValueError(f"breakpoint_threshold_amount must be a number or null, got {amount!r}")
    if threshold_type in ("percentile", "gradient") and amount is not None and not (0 <= amount <= 100):
        raise ValueError(f"breakpoint_threshold_amount must be a percentile in [0, 100], got {amount!r}")


def _sentence_end_pattern(sentence_split_regex: Any) -> re.Pattern[str]:
    """Compile ``sentence_split_regex``, refusing one that matches the empty string between any
    two characters (``\\s*``: every character would be a sentence, embedded on its own).

    Raises:
        ValueError: Not a string, does not compile, or matches everywhere.
    """
    if not isinstance(sentence_split_regex, str):
        raise ValueError(f"sentence_split_regex must be a string, got {sentence_split_regex!r}")
    try:
        pattern = re.compile(sentence_split_regex)
    except re.error as err:
        raise ValueError(f"sentence_split_regex {sentence_split_regex!r} does not compile: {err}") from None
    empty = pattern.match("aa", 1)
    if empty is not None and empty.end() == 1:
        raise ValueError(
            f"sentence_split_regex {sentence_split_regex!r} matches the empty string between "
            "any two characters (every character would be a sentence); guard it, e.g. "
            "with a lookbehind such as (?<=[.?!])"
        )
    return pattern
