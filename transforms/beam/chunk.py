"""Admission and chunking as Beam transforms: :class:`AdmitDocuments`, :class:`ChunkDocuments`.

The rules are Beam-free: ``transforms.admission`` turns a row into a document or a dead-letter
row, ``transforms.outcomes`` chunks and validates a document into the outcomes to emit. The
DoFns here only map those to tagged outputs and Beam counters (``transforms.beam.outputs``).
Heavy objects (tokenizers, chunkers and their models) are built in ``DoFn.setup()`` from plain
specs and released in ``teardown()``; the tokenizer identity arrives as a singleton side input
and every worker checks its own tokenizer against it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import apache_beam as beam
from apache_beam.pvalue import AsDict, AsSingleton, TaggedOutput
from apache_beam.transforms.combiners import CountCombineFn

from transforms.admission import id_as_text, row_to_document
from transforms.beam.coders import typed_main_output, typed_output
from transforms.beam.outputs import DEAD_LETTER, MANIFEST, BundleCounts, tagged_dead_letter
from transforms.chunkers.registry import build_router
from transforms.documents import DeadLetter, Document
from transforms.outcomes import ChunkOutcome, DocumentChunking, DocumentSummary
from transforms.progress import ProgressLog, shared_progress
from transforms.tokenizers import Tokenizer, load_tokenizer

__all__ = ["AdmitDocuments", "ChunkDocuments", "shared_tokenizer"]


@functools.lru_cache(maxsize=4)
def shared_tokenizer(spec: str) -> Tokenizer:
    """One tokenizer per spec per worker process, shared by the DoFns that need it (so no DoFn
    closes it: it lives as long as the process)."""
    return load_tokenizer(spec)


_READ = (("documents_read", 1),)
_DEAD_LETTERED = (("documents_dead_lettered", 1),)


class _AdmitDoFn(beam.DoFn):
    def __init__(
        self,
        max_document_chars: int | None,
        progress_seconds: float = 0,
        documents_total: int | None = None,
        noted: bool = False,
    ) -> None:
        self._max_document_chars = max_document_chars
        self._progress_args = (progress_seconds, documents_total)
        self._progress: ProgressLog | None = None
        self._counts = BundleCounts()
        self._noted = noted

    def setup(self) -> None:
        self._progress = shared_progress(*self._progress_args)

    def start_bundle(self) -> None:
        self._counts = BundleCounts()  # (nothing of a failed bundle's is carried into its retry)

    def finish_bundle(self) -> None:
        self._counts.flush()

    def process(self, row, duplicates, tokenizer_identity):
        self._counts.add(_READ)
        note = None
        if self._noted:
            row, note = row
        result = row_to_document(row, duplicates, tokenizer_identity, self._max_document_chars)
        if note is not None and isinstance(result, Document):
            result = dataclasses.replace(result, previous=note)
        if isinstance(result, DeadLetter):
            self._counts.add(_DEAD_LETTERED)
            if self._progress is not None:  # a document done (the others are counted where they finish)
                self._progress.add(documents=1)
            yield tagged_dead_letter(result)
        else:
            yield result


class AdmitDocuments(beam.PTransform):
    """Turn rows into :class:`Document` records; reject what can be known before chunking.

    The rules are ``transforms.admission.row_to_document``'s. Rejected (stage ``read``):
    ``invalid_document_id``, ``missing_document_id``, ``duplicate_document_id`` (every row of an
    id that occurs more than once, found by a keyed count over ids only), ``invalid_content``,
    ``null_content``, ``invalid_metadata`` (not a JSON object, deeper than
    ``transforms.admission.MAX_METADATA_DEPTH``, or over ``MAX_METADATA_BYTES`` of JSON),
    ``empty_document``, ``document_too_large`` (content longer than ``max_document_chars``
    code points); (stage ``route``) ``unsupported_content_format``. Integer ids are written
    in decimal. Columns other than the contract's four go into metadata as plain JSON (timestamps
    and decimals as text, NaN and infinities as null), and the ``metadata`` object's keys override
    them.

    Output: ``documents`` (Document) and ``dead_letter`` (DeadLetter).

    Args:
        tokenizer_identity: Singleton PCollection of the job's tokenizer identity (for dead-letter rows).
        ids: The same rows' ids alone (``{"id": value}`` dicts, e.g. from ``ReadDocumentIds``),
            counted for duplicates. Counting them from ``rows`` instead would make a runner hold
            every whole row until the count is done (memory that grows with the corpus).
        max_document_chars: Longer content (in code points) is rejected; ``None`` for no limit.
        progress_seconds, documents_total: Rejected documents count in the progress lines
            (``transforms.progress``).
        noted: The rows are ``(row, note)`` pairs (``ReadDocumentsAndIds`` with ``row_notes``):
            an admitted row's note, when not ``None``, becomes its document's ``previous``.
    """

    def __init__(
        self,
        tokenizer_identity,
        *,
        ids=None,
        max_document_chars: int | None = None,
        progress_seconds: float = 0,
        documents_total: int | None = None,
        noted: bool = False,
    ) -> None:
        super().__init__()
        self._identity = tokenizer_identity
        self._ids = ids
        self._max_document_chars = max_document_chars
        self._progress_args = (progress_seconds, documents_total)
        self._noted = noted

    def expand(self, rows):
        duplicates = (
            (rows if self._ids is None else self._ids)
            # Each id paired with one here (Count.PerElement's own pairing step, fused into this one).
            | "Document ids" >> beam.FlatMap(lambda row: [(i, 1)] if (i := id_as_text(row.get("id"))[0]) else [])
            | "Count ids" >> beam.CombinePerKey(CountCombineFn())
            | "Duplicate ids" >> beam.Filter(lambda kv: kv[1] > 1)
        )
        admitted = rows | "Admit" >> beam.ParDo(
            _AdmitDoFn(self._max_document_chars, *self._progress_args, noted=self._noted),
            AsDict(duplicates),
            AsSingleton(self._identity),
        ).with_outputs(DEAD_LETTER, main="documents")
        return typed_output(typed_main_output(admitted, "documents", Document), DEAD_LETTER, DeadLetter)


class _ChunkDoFn(beam.DoFn):
    """Route, chunk and validate one document, a chunk at a time (see :class:`ChunkDocuments`).

    ``setup()`` builds the router (its chunkers and models, once per worker) around the shared
    tokenizer; ``teardown()`` closes the models and drops them.
    """

    def __init__(
        self, spec: Mapping[str, Any], progress_seconds: float = 0, documents_total: int | None = None
    ) -> None:
        self._spec = dict(spec)
        self._progress_args = (progress_seconds, documents_total)
        self._chunking: DocumentChunking | None = None
        self._tokenizer: Tokenizer | None = None
        self._progress: ProgressLog | None = None
        self._counts = BundleCounts()

    def setup(self) -> None:
        self._progress = shared_progress(*self._progress_args)
        self._tokenizer = shared_tokenizer(self._spec["tokenizer"])
        # Models (``models:``) are built here too: once per worker, shared by the chunkers.
        router = build_router(self._spec, tokenizer=self._tokenizer)
        store = (self._spec.get("vector_store") or {}).get("type")
        self._chunking = DocumentChunking(
            router,
            tokenizer=self._tokenizer,
            max_tokens=self._spec["max_tokens"],
            store=store,
            recount=self._spec.get("recount", "independent"),
        )

    def teardown(self) -> None:
        if self._chunking is not None:
            self._chunking.close()
        self._chunking = self._tokenizer = self._progress = None

    def process(self, document: Document, tokenizer_identity: str):
        chunking, progress = self._chunking, self._progress
        assert chunking is not None and progress is not None, "process() before setup()"
        outcome: ChunkOutcome | None = None
        try:
            for outcome in chunking.outcomes(document, tokenizer_identity):
                if isinstance(outcome, DeadLetter):
                    yield tagged_dead_letter(outcome)
                elif isinstance(outcome, DocumentSummary):
                    self._counts.add(outcome.counters)
                    if document.previous_run == "new" and ("documents_chunked", 1) in outcome.counters:
                        self._counts.add([("incremental.documents_new", 1)])
                    if outcome.progress_chunks is not None:
                        progress.add(documents=1, chunks=outcome.progress_chunks)
                    if outcome.manifest is not None:
                        yield TaggedOutput(MANIFEST, outcome.manifest)
                else:
                    yield outcome
                outcome = None  # (a row is not held while the next chunk is built)
        finally:
            self._counts.add(chunking.model_usage())

    def start_bundle(self) -> None:
        self._counts = BundleCounts()  # (nothing of a failed bundle's is carried into its retry)

    def finish_bundle(self) -> None:
        self._counts.flush()


class ChunkDocuments(beam.PTransform):
    """Route each document to its chunker, chunk it and validate its chunks as they are made.

    A chunk is recounted and checked (``transforms.validation.DocumentValidator``) as soon as
    the chunker builds it, and its row goes on to the writer: a document's chunks are never all
    held at once (beyond ``transforms.outcomes.MAX_HELD_CHARS`` of rows, held so that an error
    at a later chunk rejects the whole document with nothing written). The outcomes are
    ``transforms.outcomes.DocumentChunking``'s.

    Input: :class:`Document`. Output: main ``chunks`` (a chunk row dict, ``CHUNK_SCHEMA``, with
    ``token_count`` recounted), ``documents`` (a manifest row, ``MANIFEST_SCHEMA``, for each
    document whose chunks were all accepted) and ``dead_letter``:
    - the whole document (payload its content): ``no_route``, ``unsupported_content_format``,
      ``invalid_docling_json``, ``empty_document``, ``chunker_error`` (the chunker failed, or
      validation itself did), and for structure chunks ``incomplete_coverage`` (its chunks are
      written all the same);
    - one chunk (payload its text): ``token_budget_exceeded``, ``empty_chunk``,
      ``offset_mismatch``, ``tokenizer_mismatch``, and for structure chunks
      ``embedding_text_mismatch``, ``overlap_exceeded``. See ``transforms.validation``.

    Args:
        spec: The resolved configuration (``pipelines.config.resolve_config``); plain data: its
            ``tokenizer`` spec (each worker loads it in ``setup()``), ``max_tokens`` (the hard
            budget for ``embedding_text``) and chunkers.
        tokenizer_identity: Singleton PCollection of the job's tokenizer identity.
        progress_seconds: Log documents done, the rate and the time left at this interval
            (``transforms.progress``); 0 never.
        documents_total: The job's documents to read, for the progress lines; ``None`` when unknown.

    There is no Reshuffle of documents before chunking: work spreads over workers by ranges of the
    input (the read reshuffles ranges of row groups and of rows, see ``ReadParquetRows``). On
    docs.parquet with two ``multi_processing`` workers both did the same CPU time without one
    (16.7 and 16.2 s), and a reshuffle made the runner hold every document (peak 1,025 MiB
    against 675; in ``in_memory`` mode memory grew with the corpus).
    """

    def __init__(
        self,
        spec: Mapping[str, Any],
        tokenizer_identity,
        *,
        progress_seconds: float = 0,
        documents_total: int | None = None,
    ) -> None:
        super().__init__()
        self._spec = spec
        self._identity = tokenizer_identity
        self._progress_args = (progress_seconds, documents_total)

    def expand(self, documents):
        outputs = documents | "Chunk and validate" >> beam.ParDo(
            _ChunkDoFn(self._spec, *self._progress_args), AsSingleton(self._identity)
        ).with_outputs(DEAD_LETTER, MANIFEST, main="chunks")
        return typed_output(outputs, DEAD_LETTER, DeadLetter)
