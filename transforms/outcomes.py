"""What chunking one document gives: chunk rows, dead-letter rows and counter increments, in order.

Beam-free. :class:`DocumentChunking` routes a document to its chunker, chunks it and validates
each chunk as soon as the chunker builds it (``transforms.validation.DocumentValidator``). It
decides two things the output depends on:

- **Hold or stream** (:class:`HeldOutputs`): a document's rows are held back until its last
  chunk is validated while they stay under :data:`MAX_HELD_CHARS` characters, so that an error
  at a later chunk still rejects the whole document with nothing written; past it they stream,
  and the rows already emitted stay written if the document is rejected later.
- **Which reason rejects the whole document**: a routing error (stage ``route``); a chunker
  error (:func:`chunker_failure`: its ``ChunkingError`` reason, else ``chunker_error``, stage
  ``chunk``), which also wins over a validation failure at an earlier chunk (the chunks left are
  drawn to find it); validation itself failing (:func:`validation_failure`, stage
  ``validate``); no chunk at all (``empty_document``).

:meth:`DocumentChunking.outcomes` yields, in the order they are to be emitted, chunk rows
(``dict``, ``CHUNK_SCHEMA``), dead-letter rows (:class:`~transforms.documents.DeadLetter`) and
last one :class:`DocumentSummary` (counter increments, the manifest row, progress). The Beam layer
(``transforms.beam.chunk``) maps them to tagged outputs and Beam counters.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from transforms.chunkers.base import Chunker, ChunkingError
from transforms.chunkers.router import ChunkerRouter
from transforms.chunkers.structure import StructureAwareChunker
from transforms.documents import Chunk, DeadLetter, Document
from transforms.incremental import manifest_row
from transforms.tokenizers import Tokenizer, recount_tokenizer
from transforms.validation import DocumentValidator

__all__ = [
    "MAX_HELD_CHARS",
    "STRUCTURE_COUNTERS",
    "ChunkOutcome",
    "DocumentChunking",
    "DocumentSummary",
    "Failure",
    "HeldOutputs",
    "chunker_failure",
    "validation_failure",
    "writable_row",
]

#: A document's output rows are held back until its last chunk is validated while they stay under
#: this many characters (of all their strings), so that an error at a later chunk still rejects
#: the whole document with nothing written. Past it (a document of about 1.5 M characters or
#: more) they stream to the writers as they are validated: a document's chunks are never all held.
MAX_HELD_CHARS = 4 * 1024 * 1024

#: Counters kept from each document's structure validation (``ChunkValidation`` fields), each
#: counted as ``structure.<name>``.
STRUCTURE_COUNTERS = (
    "merged_chunks",
    "split_chunks",
    "oversized_chunks",
    "small_chunks",
    "excluded_characters",
)

#: A dead-letter detail quotes at most this many characters of an unexpected error's message.
ERROR_DETAIL_CHARS = 300

_INT32_MAX = 2**31 - 1
_INT32_COLUMNS = ("chunk_index", "token_count", "page_no")


def writable_row(chunk: Chunk) -> dict[str, Any]:
    """The chunk's Parquet row, checked against the Arrow types of ``CHUNK_SCHEMA``.

    Raises:
        ValueError: An int32 column is out of range (e.g. a page number from a corrupt document).
    """
    row = chunk.to_row()
    for column in _INT32_COLUMNS:
        value = row[column]
        if value is not None and not 0 <= value <= _INT32_MAX:
            raise ValueError(f"{column} {value} does not fit int32")
    return row


@dataclass(frozen=True)
class Failure:
    """Why a whole document is rejected: its dead-letter row's stage, reason and detail."""

    stage: str
    reason: str
    detail: str


def _error_text(err: Exception) -> str:
    return f"{type(err).__name__}: {' '.join(str(err).split())[:ERROR_DETAIL_CHARS]}"


def chunker_failure(err: Exception) -> Failure:
    """The rejection of a document whose chunker raised ``err``.

    A ``ChunkingError`` gives its own reason and detail (stage ``route`` for
    ``unsupported_content_format``, else ``chunk``); any other error (a bug, or an input the
    chunker cannot take: it never fails the job) is ``chunker_error`` with the error's type and
    message (at most :data:`ERROR_DETAIL_CHARS` characters of it).
    """
    if isinstance(err, ChunkingError):
        return Failure("route" if err.reason == "unsupported_content_format" else "chunk", err.reason, err.detail)
    return Failure("chunk", "chunker_error", _error_text(err))


def validation_failure(err: Exception) -> Failure:
    """The rejection of a document whose validation raised ``err`` (the tokenizer or a chunk's
    data failed): ``chunker_error`` at stage ``validate``."""
    return Failure("validate", "chunker_error", f"validation failed: {_error_text(err)}")


#: One output of a document's chunking: a chunk row (``CHUNK_SCHEMA`` dict) or a dead-letter row.
ChunkOutput = dict[str, Any] | DeadLetter


def _output_chars(output: ChunkOutput) -> int:
    """Characters of an output's strings (a dead-letter row: of its payload)."""
    if isinstance(output, DeadLetter):
        return len(output.payload or "")
    # (A list, not a generator: a chunk row's dozen values are summed in one call.)
    return sum([len(v) for v in output.values() if isinstance(v, str)])


class HeldOutputs:
    """One document's outputs not yet emitted: held while under ``max_chars``, streamed after.

    :meth:`add` holds an output and says whether the outputs are to be emitted now
    (:meth:`drain`): once the held outputs pass ``max_chars`` characters, every output is emitted
    as it comes, to the end of the document.

    Args:
        max_chars: Characters (of the outputs' strings, :func:`_output_chars`) held at most.

    Attributes:
        accepted: Chunk rows added. rejected: Dead-letter rows added.
        emitted_accepted: Chunk rows drained. emitted_rejected: Dead-letter rows drained.
    """

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._outputs: list[ChunkOutput] = []
        self._chars = 0
        self._streaming = False
        self.accepted = self.rejected = 0
        self.emitted_accepted = self.emitted_rejected = 0

    def add(self, output: ChunkOutput) -> bool:
        """Hold ``output``; ``True`` when the held outputs are to be emitted now."""
        if isinstance(output, DeadLetter):
            self.rejected += 1
        else:
            self.accepted += 1
        self._chars += _output_chars(output)
        self._outputs.append(output)
        if self._chars > self._max_chars:
            self._streaming = True
        return self._streaming

    def drain(self) -> Iterator[ChunkOutput]:
        """The held outputs in the order they were added; none is held once they are all yielded."""
        outputs, self._outputs, self._chars = self._outputs, [], 0
        for output in outputs:
            if isinstance(output, DeadLetter):
                self.emitted_rejected += 1
            else:
                self.emitted_accepted += 1
            yield output


@dataclass(frozen=True)
class DocumentSummary:
    """The last outcome of a document: what to count, and what to add to the manifest.

    Attributes:
        counters: ``(counter name, increment)`` pairs, in order; an increment may be 0 (the
            counter is reported all the same) and a name may come twice.
        manifest: The document's manifest row (``MANIFEST_SCHEMA``) when every chunk was
            accepted, else ``None``.
        progress_chunks: The chunks to count in the progress log for a document that was
            chunked (its chunks accepted, maybe none); ``None`` for a rejected document.
    """

    counters: tuple[tuple[str, int], ...]
    manifest: dict[str, Any] | None = None
    progress_chunks: int | None = None


#: What :meth:`DocumentChunking.outcomes` yields.
ChunkOutcome = dict[str, Any] | DeadLetter | DocumentSummary


class DocumentChunking:
    """Route, chunk and validate documents, a chunk at a time, as outcomes to emit.

    Args:
        router: The chunker router (``transforms.chunkers.registry.build_router``); its
            ``models`` (if any) are the models its chunkers share.
        tokenizer: The budget tokenizer. Every chunk's ``embedding_text`` is recounted by
            :func:`~transforms.tokenizers.recount_tokenizer` of it (the same vocabulary on an
            engine of another implementation, where there is one) or, with ``recount`` set to
            ``"same-engine"``, by ``tokenizer`` itself.
        max_tokens: The hard budget for ``embedding_text``, in tokens of ``tokenizer``.
        recount: ``"independent"`` or ``"same-engine"`` (the configuration's ``recount:``).
        store: The configured vector store's type (``"milvus"``, ``"pgvector"``) or ``None``: a
            chunk that store cannot hold is rejected as ``exceeds_store_limit``.
    """

    def __init__(
        self,
        router: ChunkerRouter,
        *,
        tokenizer: Tokenizer,
        max_tokens: int,
        store: str | None = None,
        recount: str = "independent",
    ) -> None:
        self._router = router
        self._store = store
        self._tokenizer = tokenizer
        self._recount = tokenizer if recount == "same-engine" else recount_tokenizer(tokenizer)
        self._max_tokens = max_tokens
        self._models = list(router.models.values())
        self._usage_seen = (0, 0)
        # Structure chunkers' own limits, by configuration hash (what each chunk names).
        self._limits = {
            chunker.config_hash: {
                "max_overlap_tokens": chunker.max_overlap_tokens,
                "min_preferred_tokens": chunker.min_preferred_tokens,
            }
            for chunker in router.chunkers.values()
            if isinstance(chunker, StructureAwareChunker)
        }

    def outcomes(self, document: Document, tokenizer_identity: str) -> Iterator[ChunkOutcome]:
        """The document's chunk rows and dead-letter rows in emission order, then its summary.

        Chunk rows carry ``token_count`` recounted. Rows are yielded as :class:`HeldOutputs`
        decides (all after the last chunk for a document under :data:`MAX_HELD_CHARS`). A
        rejected document gives one dead-letter row (payload its content; after any rows
        already streamed) and a summary without a manifest row.

        Args:
            document: An admitted document.
            tokenizer_identity: The job's tokenizer identity (the side input).
        """
        try:
            _, chunker = self._router.select(document)
        except ChunkingError as err:
            yield from _rejected(document, tokenizer_identity, Failure("route", err.reason, err.detail), None)
            return
        try:
            chunks, source = chunker.stream_with_source(document, tokenizer_identity=self._tokenizer.identity)
        except Exception as err:
            yield from _rejected(document, tokenizer_identity, chunker_failure(err), chunker.name)
            return
        validator = DocumentValidator(
            document,
            tokenizer=self._recount,
            tokenizer_identity=tokenizer_identity,
            max_tokens=self._max_tokens,
            source=None if source is document.content else source,
            structure_limits=self._limits.get(chunker.config_hash),
            store=self._store,
        )
        run = _DocumentRun(document, tokenizer_identity, chunker, validator, self._max_tokens)
        yield from run.outputs(chunks)
        yield from run.end()

    def model_usage(self) -> list[tuple[str, int]]:
        """``("model.calls", n)`` and ``("model.cache_hits", n)``: what the router's models did
        since the last call (HTTP requests or model runs, and answers served from a cache); only
        counts that grew."""
        if not self._models:
            return []
        now = (
            sum(getattr(m, "calls", 0) for m in self._models),
            sum(getattr(m, "cache_hits", 0) for m in self._models),
        )
        grown = [
            (name, after - before)
            for name, before, after in zip(("model.calls", "model.cache_hits"), self._usage_seen, now)
            if after > before
        ]
        self._usage_seen = now
        return grown

    def close(self) -> None:
        """Release what the router's chunkers and models hold (:meth:`ChunkerRouter.close`)."""
        self._router.close()


def _rejected(
    document: Document,
    tokenizer_identity: str,
    failure: Failure,
    chunker: str | None,
    counters: Iterable[tuple[str, int]] = (),
) -> Iterator[ChunkOutcome]:
    """The dead-letter row rejecting the whole document, then its summary."""
    yield DeadLetter(
        document.id,
        failure.stage,
        failure.reason,
        failure.detail,
        document.content,
        tokenizer_identity,
        chunker=chunker,
    )
    yield DocumentSummary((*counters, ("documents_dead_lettered", 1)))


class _DocumentRun:
    """One document's chunks through validation, once its chunker is chosen and has started."""

    def __init__(
        self,
        document: Document,
        tokenizer_identity: str,
        chunker: Chunker,
        validator: DocumentValidator,
        max_tokens: int,
    ) -> None:
        self._document = document
        self._identity = tokenizer_identity
        self._chunker = chunker
        self._validator = validator
        self._max_tokens = max_tokens
        self._held = HeldOutputs(MAX_HELD_CHARS)
        self._first: Chunk | None = None
        self._fallback = False  # a chunk says a model failed and the chunker fell back
        self._failure: Failure | None = None  # rejecting the whole document

    def outputs(self, chunks: Iterable[Chunk]) -> Iterator[ChunkOutput]:
        """Validate the chunks in order; yield the rows :class:`HeldOutputs` lets go. Stops at the
        first failure (chunking or validation), which then rejects the document in :meth:`end`."""
        iterator = iter(chunks)
        while (chunk := self._next(iterator)) is not None:
            output = self._verdict(chunk, iterator)
            del chunk  # not held while the rows are emitted and the next chunk is built
            if output is None:
                break
            if self._held.add(output):
                output = None
                yield from self._held.drain()
            output = None

    def _next(self, iterator: Iterator[Chunk]) -> Chunk | None:
        try:
            return next(iterator)
        except StopIteration:
            return None
        except Exception as err:
            self._failure = chunker_failure(err)
            return None

    def _verdict(self, chunk: Chunk, rest: Iterator[Chunk]) -> ChunkOutput | None:
        """The chunk's row or dead-letter row; ``None`` when validation itself failed."""
        if self._first is None:
            self._first = chunk
        self._fallback = self._fallback or "model_fallback" in chunk.metadata
        try:
            accepted, rejected = self._validator.check(chunk)
            if accepted is not None:
                return writable_row(accepted)
            return rejected
        except Exception as err:  # the tokenizer or the chunk's data failed: never fail the job
            self._failure = validation_failure(err)
        # As when chunking came first: a chunker error at a later chunk decides the reason.
        try:
            for later in rest:
                self._fallback = self._fallback or "model_fallback" in later.metadata
        except Exception as chunker_err:
            self._failure = chunker_failure(chunker_err)
        return None

    def end(self) -> Iterator[ChunkOutcome]:
        """The rows still held and the document-level rows, then the summary; or, when the
        document is rejected, its dead-letter row and summary (rows already streamed stay)."""
        counters: list[tuple[str, int]] = []
        failure = self._failure
        if failure is None and self._first is None:
            failure = Failure("chunk", "empty_document", f"{self._chunker.name} found no text to chunk")
        document_rows: list[DeadLetter] = []
        structure = None
        if failure is None:
            if self._fallback:
                counters.append(("model.fallbacks", 1))
            try:
                document_rows, structure = self._validator.finish()
            except Exception as err:
                failure = validation_failure(err)
        if failure is not None:
            if self._fallback and failure.stage == "validate":
                counters.append(("model.fallbacks", 1))
            counters += [
                ("chunks_written", self._held.emitted_accepted),
                ("chunks_rejected", self._held.emitted_rejected),
            ]
            yield from _rejected(self._document, self._identity, failure, self._chunker.name, counters)
            return
        yield from self._held.drain()
        yield from document_rows
        if structure is not None:
            counters += [(f"structure.{name}", getattr(structure, name)) for name in STRUCTURE_COUNTERS]
        yield self._summary(counters, rejected=self._held.rejected + len(document_rows))

    def _summary(self, counters: list[tuple[str, int]], *, rejected: int) -> DocumentSummary:
        """The summary of a document that was chunked (maybe with none of its chunks accepted)."""
        accepted = self._held.accepted
        counters += [("chunks_written", accepted), ("chunks_rejected", rejected)]
        if not accepted:  # none of its chunks passed: the document counts once as dead-lettered
            return DocumentSummary((*counters, ("documents_dead_lettered", 1)), progress_chunks=0)
        first = self._first
        assert first is not None  # (a chunk was accepted)
        counters += [("documents_chunked", 1), (f"chunks_by_chunker.{first.chunker}", accepted)]
        if rejected:
            return DocumentSummary((*counters, ("documents_partially_rejected", 1)), progress_chunks=accepted)
        manifest = manifest_row(
            self._document,
            chunker=first.chunker,
            chunker_config_hash=first.chunker_config_hash,
            tokenizer=self._identity,
            max_tokens=self._max_tokens,
            chunk_count=accepted,
            document_hash=first.document_hash,
            libraries=self._chunker.fingerprint_libraries,
        )
        return DocumentSummary(tuple(counters), manifest=manifest, progress_chunks=accepted)
