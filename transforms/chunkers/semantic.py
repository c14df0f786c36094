"""Model-backed chunkers: embedding-distance sentence cuts, LangChain's SemanticChunker, chat grouping.

Beam-free. Names, parameters and defaults follow ``EmbeddingSemanticChunker``,
``LangchainSemanticChunker`` and ``SemanticChunker`` of the reference API
(``../shared/reference/000_ba91892c155fdc1f.txt``). The model is injected (an
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
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from transforms.chunkers.base import Chunker, ChunkingError, Piece
from transforms.chunkers.text import DEFAULT_SEPARATORS, RecursiveCharacterTextSplitter
from transforms.documents import Document
from transforms.models import ChatModel, Embedder, ModelError
from transforms.tokenizers import Tokenizer

__all__ = [
    "BREAKPOINT_DEFAULTS",
    "EmbeddingSemanticChunker",
    "LangchainSemanticChunker",
    "SemanticChunker",
    "breakpoint_threshold",
    "checked_vectors",
]

_FORMATS = frozenset({"markdown", "text"})
_THRESHOLD_TYPES = ("percentile", "standard_deviation", "interquartile", "gradient")
#: LangChain Experimental's defaults for ``breakpoint_threshold_amount``.
BREAKPOINT_DEFAULTS: Mapping[str, float] = {
    "percentile": 95,
    "standard_deviation": 3,
    "interquartile": 1.5,
    "gradient": 95,
}
#: Metadata key of a chunk made by local splitting after a transient model failure.
FALLBACK_KEY = "model_fallback"
_INSTALL_HINT = "install the 'semantic' extra: pip install 'rechunk[semantic]'"


def _int_or_none(name: str, value: Any, minimum: int) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum} or null, got {value!r}")
    return value


def _int(name: str, value: Any, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def breakpoint_threshold(distances: Sequence[float], threshold_type: str, amount: float) -> tuple[float, list[float]]:
    """LangChain Experimental's ``SemanticChunker._calculate_breakpoint_threshold``.

    Source: ``langchain_experimental/text_splitter.py`` (langchain-experimental 0.4), reproduced
    with the same numpy calls so the thresholds are bit-identical:

    * ``percentile``: ``np.percentile(distances, amount)``;
    * ``standard_deviation``: ``mean + amount * std`` (population standard deviation);
    * ``interquartile``: ``mean + amount * (q3 - q1)`` with ``q1, q3 = np.percentile(distances, [25, 75])``;
    * ``gradient``: ``np.percentile(g, amount)`` over ``g = np.gradient(distances)``, and ``g``
      is what is compared with the threshold.

    Returns:
        ``(threshold, array)``: a breakpoint is every index ``i`` with ``array[i] > threshold``.
    """
    import numpy as np

    if threshold_type == "percentile":
        return float(np.percentile(distances, amount)), list(distances)
    if threshold_type == "standard_deviation":
        return float(np.mean(distances) + amount * np.std(distances)), list(distances)
    if threshold_type == "interquartile":
        q1, q3 = np.percentile(distances, [25, 75])
        return float(np.mean(distances) + amount * (q3 - q1)), list(distances)
    if threshold_type == "gradient":
        gradient = np.gradient(distances, range(0, len(distances)))
        return float(np.percentile(gradient, amount)), [float(g) for g in gradient]
    raise ValueError(f"breakpoint_threshold_type must be one of {_THRESHOLD_TYPES}, got {threshold_type!r}")


def _cosine_distance(a: Sequence[float], b: Sequence[float]) -> float:
    """``1 - cos(a, b)``; a zero vector has similarity 0 (as LangChain's ``cosine_similarity``).

    Vectors whose squares overflow or underflow a float are scaled to a largest component of 1
    first (the cosine does not change), so the distance is finite for every finite input.
    """
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if not (math.isfinite(dot) and math.isfinite(norm)) or (not norm and any(a) and any(b)):
        scale_a, scale_b = max(abs(x) for x in a), max(abs(y) for y in b)
        a, b = [x / scale_a for x in a], [y / scale_b for y in b]
        dot = sum(x * y for x, y in zip(a, b))
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - (dot / norm if norm else 0.0)


def checked_vectors(got: Any, count: int, dimensions: int | None = None) -> list[list[float]]:
    """An embedder's answer for ``count`` texts as float lists, or ModelError: never trusted unchecked.

    Accepts any sequence of ``count`` non-empty sequences of finite real numbers (bools are not
    numbers), all of one dimension (``dimensions`` when given, e.g. from an earlier batch).

    Raises:
        ModelError: (not transient) Anything else: a wrong count, a missing vector, a string, NaN,
            infinity, mixed dimensions.
    """
    import numbers

    try:
        vectors = [list(v) for v in got]
    except TypeError:
        raise ModelError(
            f"embedder answered {type(got).__name__} instead of {count} vectors", transient=False
        ) from None
    if len(vectors) != count:
        raise ModelError(f"embedder answered {len(vectors)} vectors for {count} texts", transient=False)
    for vector in vectors:
        if not vector or not all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in vector):
            raise ModelError("embedder answered a vector that is empty or not all numbers", transient=False)
        try:
            finite = all(math.isfinite(x) for x in vector)
        except OverflowError:  # an int beyond float range
            finite = False
        if not finite:
            raise ModelError("embedder answered a vector with NaN or infinite values", transient=False)
    dims = sorted({len(v) for v in vectors} | ({dimensions} if dimensions is not None else set()))
    if len(dims) > 1:
        raise ModelError(f"embedder answered vectors of dimensions {dims}", transient=False)
    return [[float(x) for x in v] for v in vectors]


class _ModelChunker(Chunker):
    """Token-budget splitting and model-failure handling shared by the model-backed chunkers."""

    accepted_content_formats = _FORMATS
    # cuts follow the embeddings (a local model runs on sentence-transformers and torch) and,
    # for LangchainSemanticChunker, LangChain's splitter
    fingerprint_libraries = ("langchain-experimental", "sentence-transformers", "torch")
    #: Parameters that take a model; in a configuration file they name one under ``models:``.
    model_parameters: ClassVar[tuple[str, ...]] = ()

    def _init_budget(self, max_tokens: Any, tokenizer: Tokenizer | None) -> None:
        self.max_tokens = _int_or_none("max_tokens", max_tokens, 1)
        if self.max_tokens is not None and tokenizer is None:
            raise ValueError("max_tokens needs a tokenizer, got None")
        self.tokenizer = tokenizer if self.max_tokens is not None else None
        self._budget_splitter = None
        if self.max_tokens is not None:
            self._budget_splitter = RecursiveCharacterTextSplitter(
                chunk_size=self.max_tokens, chunk_overlap=0, length="tokens", tokenizer=tokenizer
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
                yield Piece(text=text[s:e], start_offset=s, end_offset=e, metadata=dict(metadata))

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


class EmbeddingSemanticChunker(_ModelChunker):
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
        self.buffer_size = _int("buffer_size", buffer_size, 0)
        if breakpoint_threshold_type not in _THRESHOLD_TYPES:
            raise ValueError(
                f"breakpoint_threshold_type must be one of {_THRESHOLD_TYPES}, got {breakpoint_threshold_type!r}"
            )
        if breakpoint_threshold_amount is not None and (
            isinstance(breakpoint_threshold_amount, bool)
            or not isinstance(breakpoint_threshold_amount, (int, float))
            or not math.isfinite(breakpoint_threshold_amount)
        ):
            raise ValueError(
                f"breakpoint_threshold_amount must be a number or null, got {breakpoint_threshold_amount!r}"
            )
        if (
            breakpoint_threshold_type in ("percentile", "gradient")
            and breakpoint_threshold_amount is not None
            and not (0 <= breakpoint_threshold_amount <= 100)
        ):
            raise ValueError(
                f"breakpoint_threshold_amount must be a percentile in [0, 100], got {breakpoint_threshold_amount!r}"
            )
        self.number_of_chunks = _int_or_none("number_of_chunks", number_of_chunks, 1)
        if not isinstance(sentence_split_regex, str):
            raise ValueError(f"sentence_split_regex must be a string, got {sentence_split_regex!r}")
        try:
            self._sentence_end = re.compile(sentence_split_regex)
        except re.error as err:
            raise ValueError(f"sentence_split_regex {sentence_split_regex!r} does not compile: {err}") from None
        empty = self._sentence_end.match("aa", 1)
        if empty is not None and empty.end() == 1:
            # e.g. r"\s*" for r"\s+": every character would be a sentence, embedded on its own.
            raise ValueError(
                f"sentence_split_regex {sentence_split_regex!r} matches the empty string between "
                "any two characters (every character would be a sentence); guard it, e.g. "
                "with a lookbehind such as (?<=[.?!])"
            )
        self.min_chunk_size = _int_or_none("min_chunk_size", min_chunk_size, 1)
        self.add_start_index = _flag("add_start_index", add_start_index)
        self.batch_size = _int("batch_size", batch_size, 1)
        self.fallback_on_transient_error = _flag("fallback_on_transient_error", fallback_on_transient_error)
        self.embeddings = embeddings
        self.breakpoint_threshold_type = breakpoint_threshold_type
        self.breakpoint_threshold_amount = (
            BREAKPOINT_DEFAULTS[breakpoint_threshold_type]
            if breakpoint_threshold_amount is None
            else breakpoint_threshold_amount
        )
        self.sentence_split_regex = sentence_split_regex
        self._init_budget(max_tokens, tokenizer)

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
                out[-1] = (out[-1][0], end)  # a whitespace-only first "sentence" joins the next one
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
                checked_vectors(self.embeddings.embed(batch), len(batch), len(vectors[0]) if vectors else None)
            )
        return [_cosine_distance(vectors[i], vectors[i + 1]) for i in range(n - 1)]

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


def _align(text: str, chunk: str, cursor: int) -> tuple[int, int] | None:
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


class _LangchainEmbeddings:
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


class LangchainSemanticChunker(_ModelChunker):
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
        # The same checks as EmbeddingSemanticChunker, through one of them.
        self._settings = EmbeddingSemanticChunker(
            embeddings=embeddings,
            buffer_size=buffer_size,
            breakpoint_threshold_type=breakpoint_threshold_type,
            breakpoint_threshold_amount=breakpoint_threshold_amount,
            number_of_chunks=number_of_chunks,
            sentence_split_regex=sentence_split_regex,
            min_chunk_size=min_chunk_size,
            add_start_index=add_start_index,
            batch_size=batch_size,
            fallback_on_transient_error=fallback_on_transient_error,
            max_tokens=max_tokens,
            tokenizer=tokenizer,
        )
        import importlib.util

        if importlib.util.find_spec("langchain_experimental") is None:
            raise ValueError(f"LangchainSemanticChunker needs langchain-experimental; {_INSTALL_HINT}")
        self.embeddings = embeddings
        self.fallback_on_transient_error = fallback_on_transient_error
        self.add_start_index = add_start_index
        self._init_budget(max_tokens, tokenizer)
        self._splitter = None

    def to_dict(self) -> dict[str, Any]:
        return self._settings.to_dict()

    def _langchain(self):
        if self._splitter is None:
            from langchain_experimental.text_splitter import SemanticChunker as LangChainSemanticChunker

            s = self._settings
            self._splitter = LangChainSemanticChunker(
                _LangchainEmbeddings(self.embeddings, s.batch_size),
                buffer_size=s.buffer_size,
                breakpoint_threshold_type=s.breakpoint_threshold_type,
                breakpoint_threshold_amount=s.breakpoint_threshold_amount,
                number_of_chunks=s.number_of_chunks,
                sentence_split_regex=s.sentence_split_regex,
                min_chunk_size=s.min_chunk_size,
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
            found = _align(text, chunk, cursor)
            metadata: dict[str, Any] = {}
            if found is not None:
                cursor = found[1]
            if found is not None and text[found[0] : found[1]] == chunk:
                parts = [(text[s:e], s, e) for s, e in self._fit(text, *found, count)]
            else:
                parts = [(chunk[s:e], None, None) for s, e in self._fit(chunk, 0, len(chunk))]
            for part, s, e in parts:
                if self.add_start_index and s is not None:
                    metadata = {"start_index": s}
                yield Piece(text=part, start_offset=s, end_offset=e, metadata=metadata)


_BLOCK_BREAK = re.compile(r"\n[ \t]*\n")

_SYSTEM_PROMPT = (
    "You split documents into chunks for retrieval. You are given numbered text blocks in reading "
    "order. Group consecutive blocks that belong to the same topic. Answer with JSON only, of the form "
    '{"boundaries": [i, ...]}: the numbers of the blocks that start a new chunk, ascending, '
    "never 0 (block 0 always starts the first chunk). Do not repeat or change the text."
)


#: Positions of ``{`` in a chat answer's prose tried as the start of its JSON object.
_MAX_OBJECT_STARTS = 100
_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n?(.*?)```", re.S)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key is repeated")  # {"boundaries": [1], "boundaries": [2]} is ambiguous
    return dict(pairs)


def _json_candidates(body: str) -> list[Any]:
    """What in a chat answer reads as the JSON asked for: the whole answer, else each fenced
    block, else each JSON object starting at a ``{`` in the prose (parsed strictly: no repeated
    keys)."""
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)

    def parse(text: str) -> list[Any]:
        try:
            return [decoder.decode(text.strip())]
        except (ValueError, RecursionError):
            return []

    whole = parse(body)
    if whole:
        return whole
    fenced = [value for block in _FENCE.findall(body) for value in parse(block)]
    if fenced:
        return fenced
    found = []
    for match in list(re.finditer(r"\{", body))[:_MAX_OBJECT_STARTS]:
        try:
            value, _ = decoder.raw_decode(body, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and "boundaries" in value:
            found.append(value)
    return found


def parse_boundaries(answer: str, count: int) -> list[int]:
    """Validate a chat answer ``{"boundaries": [...]}`` for ``count`` numbered items.

    Accepts the JSON alone, or else inside Markdown code fences, or else as a JSON object within
    prose; in each case exactly one (with no repeated key) must be found. Every boundary must be
    an integer in ``[1, count - 1]`` and the list strictly ascending.

    Raises:
        ModelError: (not transient) The answer is not that JSON (none, several, a repeated key,
            nested too deeply to parse), or a boundary is out of range or out of order.
    """
    if not isinstance(answer, str):
        raise ModelError(f"chat answer is {type(answer).__name__}, not text", transient=False)
    candidates = _json_candidates(answer.strip().lstrip("\ufeff"))
    if not candidates:
        raise ModelError("chat answer is not JSON (or repeats a key)", transient=False)
    if len(candidates) > 1:
        raise ModelError(f"chat answer holds {len(candidates)} JSON values, not one", transient=False)
    data = candidates[0]
    boundaries = data.get("boundaries") if isinstance(data, dict) else None
    if not isinstance(boundaries, list) or not all(isinstance(b, int) and not isinstance(b, bool) for b in boundaries):
        raise ModelError('chat answer has no "boundaries" list of integers', transient=False)
    if any(not 1 <= b < count for b in boundaries):
        raise ModelError(f"chat answer has a boundary out of range 1..{count - 1}: {boundaries[:20]}", transient=False)
    if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
        raise ModelError(f"chat answer's boundaries are not ascending: {boundaries[:20]}", transient=False)
    return boundaries


class SemanticChunker(_ModelChunker):
    """Ask a chat model to group text blocks by topic; chunks are the source text, never the model's.

    The document is cut into blocks at blank lines (each block stripped of surrounding
    whitespace); a block longer than ``chunk_size`` characters is divided by the recursive
    separator rules into parts of at most ``chunk_size`` characters first. The blocks go to the
    model numbered, in consecutive windows of at most ``max_input_chars`` characters of numbered
    block text (the block numbers and separators count, so many tiny blocks cannot make a prompt
    larger than that); it answers which blocks start a new chunk (``{"boundaries": [...]}``, validated by
    :func:`parse_boundaries`: integers in range, ascending). A chunk is the verbatim slice from the
    start of its first block to the end of its last (whitespace inside kept); a window's first
    block always starts a chunk. Because chunks are sliced from the source by block numbers, the
    model cannot rewrite text. A chunk over ``max_tokens`` is split by the recursive rules.

    With ``fallback_on_transient_error``, a transient failure makes the whole document be grouped
    locally instead: consecutive blocks up to ``chunk_size`` characters, at the original block
    boundaries (``model_fallback`` in each chunk's metadata). Invalid answers and other failures
    dead-letter the document with ``model_error``.

    Args:
        llm: The :class:`~transforms.models.ChatModel`.
        chunk_size: Target chunk length in characters (not a hard limit; default 1000).
        max_input_chars: Numbered block text sent per model call, in characters (default 12000;
            >= ``chunk_size``).
        fallback_on_transient_error: See above (default false).
        max_tokens: Token budget of a chunk (the job's ``max_tokens``), or ``None``.
        tokenizer: The budget tokenizer (injected).

    Raises:
        ValueError: A parameter is out of range, or ``llm`` is not a ChatModel.
    """

    model_parameters = ("llm",)

    def __init__(
        self,
        *,
        llm: ChatModel,
        chunk_size: int = 1000,
        max_input_chars: int = 12000,
        fallback_on_transient_error: bool = False,
        max_tokens: int | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if not isinstance(llm, ChatModel):
            raise ValueError(f"llm must be a ChatModel (identity, complete), got {llm!r}")
        self.llm = llm
        self.chunk_size = _int("chunk_size", chunk_size, 1)
        self.max_input_chars = _int("max_input_chars", max_input_chars, 1)
        if self.max_input_chars < self.chunk_size:
            raise ValueError(f"max_input_chars must be >= chunk_size ({chunk_size}), got {max_input_chars}")
        self.fallback_on_transient_error = _flag("fallback_on_transient_error", fallback_on_transient_error)
        self._init_budget(max_tokens, tokenizer)
        self._block_splitter = RecursiveCharacterTextSplitter(chunk_size=self.chunk_size, chunk_overlap=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "llm": self.llm.identity,
            "chunk_size": self.chunk_size,
            "max_input_chars": self.max_input_chars,
            "fallback_on_transient_error": self.fallback_on_transient_error,
            "max_tokens": self.max_tokens,
        }

    def blocks(self, text: str) -> list[tuple[int, int]]:
        """Stripped, non-empty block intervals, each at most ``chunk_size`` characters."""
        out: list[tuple[int, int]] = []
        pos = 0
        for start, end in [(m.start(), m.end()) for m in _BLOCK_BREAK.finditer(text)] + [(len(text), len(text))]:
            s, e = pos, start
            while s < e and text[s].isspace():
                s += 1
            while e > s and text[e - 1].isspace():
                e -= 1
            if s < e:
                out.extend(
                    [(s, e)]
                    if e - s <= self.chunk_size
                    else self._block_splitter._split(
                        text, s, e, DEFAULT_SEPARATORS, self._block_splitter._counter(text)
                    )
                )
            pos = end
        return out

    def windows(self, blocks: Sequence[tuple[int, int]]) -> list[list[int]]:
        """Consecutive block numbers per model call, each window's numbered text (as sent: labels
        and separators included) at most ``max_input_chars`` characters (or one block)."""
        out: list[list[int]] = []
        size = 0
        for i, (s, e) in enumerate(blocks):
            # "[n]\n" + block, with "\n\n" between blocks: tiny blocks cannot blow up the prompt.
            cost = len(f"[{len(out[-1])}]\n") + 2 + (e - s) if out else 0
            if out and size + cost <= self.max_input_chars:
                out[-1].append(i)
                size += cost
            else:
                out.append([i])
                size = len("[0]\n") + (e - s)
        return out

    def _ask(self, text: str, blocks: Sequence[tuple[int, int]], window: list[int]) -> list[int]:
        numbered = "\n\n".join(f"[{n}]\n{text[blocks[i][0] : blocks[i][1]]}" for n, i in enumerate(window))
        user = f"Target chunk size: about {self.chunk_size} characters.\nBlocks 0 to {len(window) - 1}:\n\n{numbered}"
        answer = self.llm.complete([{"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": user}])
        return [window[b] for b in parse_boundaries(answer, len(window))]

    def _local_starts(self, blocks: Sequence[tuple[int, int]]) -> list[int]:
        starts, first = [0], 0
        for i in range(1, len(blocks)):
            if blocks[i][1] - blocks[first][0] > self.chunk_size:
                starts.append(i)
                first = i
        return starts

    def split(self, document: Document) -> Iterator[Piece]:
        """Yield the model's groups of blocks as verbatim slices with offsets.

        Raises:
            ChunkingError: ``model_error`` (see the class docstring).
        """
        text = document.content
        blocks = self.blocks(text)
        if not blocks:
            return
        metadata: dict[str, Any] = {}
        try:
            starts = []
            for window in self.windows(blocks):
                starts.append(window[0])
                if len(window) > 1:
                    starts.extend(self._ask(text, blocks, window))
        except ModelError as err:
            if not (err.transient and self.fallback_on_transient_error):
                self._model_failed(err)
            starts, metadata = self._local_starts(blocks), self._fallback_metadata(err)
        ends = [s - 1 for s in starts[1:]] + [len(blocks) - 1]
        groups = [(blocks[a][0], blocks[b][1]) for a, b in zip(starts, ends)]
        yield from self._pieces(text, groups, metadata)
