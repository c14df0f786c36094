"""Incremental re-chunking (``--previous``) as Beam transforms: :class:`CompareWithPrevious`, :class:`ListDeleted`.

The keys and rows are Beam-free (``transforms.incremental``): a document whose key matches the
earlier run's manifest keeps its earlier chunks, copied as Arrow tables; the rest is chunked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io import fileio
from apache_beam.io.filesystem import FileMetadata
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import AsDict, AsSingleton, TaggedOutput

from transforms.beam.chunk import shared_tokenizer
from transforms.beam.coders import typed_main_output
from transforms.beam.outputs import counter
from transforms.chunkers.base import ChunkingError
from transforms.chunkers.registry import build_router
from transforms.chunkers.router import ChunkerRouter
from transforms.documents import CHUNK_SCHEMA, Document
from transforms.incremental import id_key, manifest_row, previous_files, stale_chunk_ids, unchanged_key
from transforms.integrity import (
    DamagedPreviousOutput,
    add_index_set_digests,
    digest_key,
    index_set_digest,
    kept_chunk_problem,
    kept_count_problem,
)
from transforms.progress import ProgressLog, shared_progress

__all__ = ["KEPT_CHUNKS", "KEPT_MANIFEST", "PREVIOUS_IDS", "CompareWithPrevious", "ListDeleted"]

#: Tags of :class:`CompareWithPrevious`'s outputs besides the documents to chunk.
KEPT_CHUNKS = "kept_chunks"
KEPT_MANIFEST = "kept_documents"
PREVIOUS_IDS = "previous_chunk_ids"
_KEPT_IDS = "kept_ids"
_KEPT_EXPECTED = "kept_expected"


class _SelectChangedDoFn(beam.DoFn):
    """Pass on the documents to chunk; for an unchanged one, emit its id and manifest row instead.

    ``setup()`` builds the router (to route documents as chunking will); ``teardown()`` closes
    the models it built and drops it.
    """

    def __init__(
        self, spec: Mapping[str, Any], progress_seconds: float = 0, documents_total: int | None = None
    ) -> None:
        self._progress_args = (progress_seconds, documents_total)
        self._spec = dict(spec)
        self._max_tokens = spec["max_tokens"]
        self._skipped = counter("documents_skipped_unchanged")
        self._chunked = counter("documents_chunked")
        self._changed = counter("incremental.documents_changed")
        self._router: ChunkerRouter | None = None
        self._progress: ProgressLog | None = None

    def setup(self) -> None:
        self._progress = shared_progress(*self._progress_args)
        self._router = build_router(self._spec, tokenizer=shared_tokenizer(self._spec["tokenizer"]))

    def teardown(self) -> None:
        if self._router is not None:
            self._router.close()
        self._router = self._progress = None

    def process(self, document: Document, tokenizer_identity: str, manifest: Mapping[int, int]):
        router, progress = self._router, self._progress
        assert router is not None and progress is not None, "process() before setup()"
        key_of_id = id_key(document.id)
        previous = manifest.get(key_of_id)
        if previous is None:  # counted as new once chunked (a dead-lettered one is not new)
            yield dataclasses.replace(document, previous_run="new")
            return
        key, chunk_count = previous >> 32, previous & 0xFFFFFFFF
        try:
            _, chunker = router.select(document)
        except ChunkingError:  # chunking will dead-letter it, with the reason
            self._changed.inc()
            yield document
            return
        row = manifest_row(
            document,
            chunker=chunker.name,
            chunker_config_hash=chunker.config_hash,
            tokenizer=tokenizer_identity,
            max_tokens=self._max_tokens,
            chunk_count=chunk_count,
            libraries=chunker.fingerprint_libraries,
        )
        if unchanged_key(row) != key:
            self._changed.inc()
            yield document
            return
        self._skipped.inc()
        self._chunked.inc()
        progress.add(documents=1, chunks=chunk_count)  # (chunks_written counts the rows copied)
        yield TaggedOutput(KEPT_MANIFEST, row)
        yield TaggedOutput(_KEPT_IDS, (key_of_id, digest_key(document.document_hash)))
        yield TaggedOutput(_KEPT_EXPECTED, (key_of_id, (document.id, chunk_count)))


class _KeptChunksDoFn(beam.DoFn):
    """Split a previous chunk table: rows of kept documents (a table, checked by
    :func:`~transforms.integrity.kept_chunk_problem`) and the ids of the others."""

    def process(self, table: pa.Table, kept_documents: Mapping[int, int]):
        # kept_documents: id_key -> digest_key of the document's hash, for every kept document
        ids = table.column("document_id").to_pylist()
        # (A row without a document id, which no rechunk run writes, belongs to no document: left out.)
        hashes = {}
        for document_id in set(ids):
            if document_id is not None:
                digest = kept_documents.get(id_key(document_id))
                if digest is not None:
                    hashes[document_id] = digest
        mask = pa.array([i in hashes for i in ids], pa.bool_())
        kept = table.filter(mask)
        if kept.num_rows:
            problem = kept_chunk_problem(kept, hashes)
            if problem is not None:
                raise DamagedPreviousOutput("chunks/", problem)
            counter("chunks_written").inc(kept.num_rows)
            for chunker, n in zip(*_value_counts(kept.column("chunker"))):
                counter(f"chunks_by_chunker.{chunker}").inc(n)
            yield kept.select(CHUNK_SCHEMA.names).cast(CHUNK_SCHEMA)
        if kept.num_rows < table.num_rows:
            rest = pc.and_(pc.invert(mask), pc.is_valid(table.column("document_id")))
            others = table.select(["document_id", "chunk_index", "chunk_id"]).filter(rest)
            for document_id, index, chunk_id in zip(*(c.to_pylist() for c in others.columns)):
                yield TaggedOutput(PREVIOUS_IDS, (document_id, (index, chunk_id)))


def _kept_rows_found(table) -> Iterator[tuple[int, tuple[str, int, int]]]:
    """Per kept document in one table of kept chunks (a pyarrow table): ``(id_key, (document_id,
    rows, digest))``, its rows' count and :func:`~transforms.integrity.index_set_digest` of their
    ``chunk_index`` values."""
    # (``table`` has no type hint: Beam would hold the kept-chunks ParDo's other outputs to it.)
    found: dict[str, list[int]] = {}
    for document_id, index in zip(table.column("document_id").to_pylist(), table.column("chunk_index").to_pylist()):
        found.setdefault(document_id, []).append(index)
    for document_id, indexes in found.items():
        yield id_key(document_id), (document_id, len(indexes), index_set_digest(indexes))


def _add_found(parts: Iterable[tuple[str, int, int]]) -> tuple[str, int, int]:
    """One kept document's rows counted in several tables, added up (a combiner: any order)."""
    document_id, rows, digest = "", 0, 0
    for part_id, part_rows, part_digest in parts:
        document_id, rows, digest = part_id, rows + part_rows, add_index_set_digests(digest, part_digest)
    return document_id, rows, digest


def _check_kept_counts(element) -> Iterator[None]:
    """Raise :class:`~transforms.integrity.DamagedPreviousOutput` when a kept document's rows in
    ``chunks/`` are not its manifest row's ``chunk_count`` chunks (none found included)."""
    _, groups = element
    for document_id, chunk_count in groups["expected"]:
        rows, digest = 0, 0
        for _, found_rows, found_digest in groups["found"]:
            rows, digest = found_rows, found_digest
        problem = kept_count_problem(document_id, chunk_count, rows, digest)
        if problem is not None:
            raise DamagedPreviousOutput("chunks/", problem)
    yield from ()


def _value_counts(column: pa.ChunkedArray) -> tuple[list[str], list[int]]:
    """The distinct values of ``column`` and how many rows hold each."""
    counts = pc.value_counts(column)
    return counts.field("values").to_pylist(), counts.field("counts").to_pylist()


class _ReadCheckedTablesDoFn(beam.DoFn):
    """Each row group of a previous output's file as a table (``columns`` only, all when ``None``),
    its pages' checksums verified; a file that cannot be read whole raises
    :class:`~transforms.integrity.DamagedPreviousOutput`."""

    def __init__(self, columns: list[str] | None = None) -> None:
        self._columns = columns

    def process(self, metadata: FileMetadata) -> Iterator[pa.Table]:
        try:
            with FileSystems.open(metadata.path) as f, pq.ParquetFile(f, page_checksum_verification=True) as parquet:
                for index in range(parquet.metadata.num_row_groups):
                    yield parquet.read_row_group(index, columns=self._columns)
        except (OSError, ValueError, pa.ArrowException) as err:
            raise DamagedPreviousOutput(metadata.path, f"{type(err).__name__}: {err}") from err


def _read_previous(pipeline, label: str, pattern: str, columns: list[str] | None = None):
    """The tables of a previous output's files matching ``pattern``, checked as they are read."""
    return (
        pipeline
        | f"Match {label}" >> fileio.MatchFiles(pattern, empty_match_treatment=fileio.EmptyMatchTreatment.ALLOW)
        | f"Spread {label}" >> beam.Reshuffle()
        | f"Read {label}" >> beam.ParDo(_ReadCheckedTablesDoFn(columns)).with_output_types(pa.Table)
    )


def _manifest_keys(table: pa.Table) -> Iterator[tuple[int, int]]:
    """``(id_key, unchanged_key << 32 | chunk_count)`` for each row of a manifest table: two
    integers, about 130 bytes per document once a worker holds them in a dict. A row with a null
    field or a chunk count out of range (a hand-edited manifest) gives nothing: its document is
    chunked afresh."""
    rows = table.select(["document_id", "document_hash", "input_fingerprint", "chunk_count"]).to_pylist()
    for row in rows:
        count = row["chunk_count"]
        if None in row.values() or not 0 < count < 1 << 32:
            continue
        yield id_key(row["document_id"]), unchanged_key(row) << 32 | count


class CompareWithPrevious(beam.PTransform):
    """Keep an earlier run's chunks of every unchanged document; pass the rest on to chunking.

    A keyed side input of the earlier run's manifest (``documents/``), reduced to two integers
    per document (``AsDict``: the id's and the content's 128-bit keys and the chunk count, about
    130 bytes per document in each worker's memory), lets documents stream through without a
    shuffle. A document whose key still matches
    (``transforms.incremental``: same content hash and input fingerprint) is not chunked
    again; its previous chunks are copied from the earlier ``chunks/`` as Arrow tables, filtered
    by the kept ids (a second side input, their 128-bit keys), never turned into Python rows.

    Input: :class:`Document`. Output (a dict): ``documents`` (the documents to chunk),
    ``kept_chunks`` (pyarrow tables, ``CHUNK_SCHEMA``), ``kept_documents`` (manifest row dicts)
    and ``previous_chunk_ids`` (``(document_id, (chunk_index, chunk_id))`` of every previous
    chunk not kept, to list what the new output no longer holds).

    Args:
        previous: The earlier run's output directory (``chunks/`` and ``documents/``), any Beam filesystem.
        spec: The resolved configuration (to route documents as the chunking step will).
        tokenizer_identity: Singleton PCollection of the job's tokenizer identity.
        progress_seconds, documents_total: Kept documents count in the progress lines
            (``transforms.progress``).
    """

    def __init__(
        self,
        previous: str,
        spec: Mapping[str, Any],
        tokenizer_identity,
        *,
        progress_seconds: float = 0,
        documents_total: int | None = None,
    ) -> None:
        super().__init__()
        self._progress_args = (progress_seconds, documents_total)
        self._previous = previous
        self._spec = spec
        self._identity = tokenizer_identity

    def expand(self, documents):
        pipeline = documents.pipeline
        manifest = _read_previous(
            pipeline,
            "previous manifest",
            previous_files(self._previous, "documents"),
            ["document_id", "document_hash", "input_fingerprint", "chunk_count"],
        ) | "Manifest keys" >> beam.FlatMap(_manifest_keys)
        selected = typed_main_output(
            documents
            | "Select changed"
            >> beam.ParDo(
                _SelectChangedDoFn(self._spec, *self._progress_args), AsSingleton(self._identity), AsDict(manifest)
            ).with_outputs(KEPT_MANIFEST, _KEPT_IDS, _KEPT_EXPECTED, main="documents"),
            "documents",
            Document,
        )
        kept = typed_main_output(
            _read_previous(pipeline, "previous chunks", previous_files(self._previous, "chunks"))
            | "Keep unchanged"
            >> beam.ParDo(_KeptChunksDoFn(), AsDict(selected[_KEPT_IDS])).with_outputs(PREVIOUS_IDS, main="chunks"),
            "chunks",
            pa.Table,
        )
        # (Counted in a step of its own: Beam's runtime type check holds every output of a ParDo
        # to the input hints of all its consumers, and CombinePerKey's hint is a tuple.)
        found = (
            kept.chunks
            | "Count kept rows" >> beam.FlatMap(_kept_rows_found)
            | "Add up kept rows" >> beam.CombinePerKey(_add_found)
        )
        _ = (
            {"expected": selected[_KEPT_EXPECTED], "found": found}
            | "Join kept counts" >> beam.CoGroupByKey()
            | "Check kept counts" >> beam.FlatMap(_check_kept_counts)
        )
        return {
            "documents": selected.documents,
            KEPT_CHUNKS: kept.chunks,
            KEPT_MANIFEST: selected[KEPT_MANIFEST],
            PREVIOUS_IDS: kept[PREVIOUS_IDS],
        }


def _deleted_rows(element):
    document_id, groups = element
    current = list(groups["current"])
    stale = stale_chunk_ids(groups["previous"], current)
    if stale:
        counter("incremental.chunks_deleted").inc(len(stale))
        if not current:
            counter("incremental.documents_deleted").inc()
        yield {"document_id": document_id, "chunk_ids": stale, "document_removed": not current}


class ListDeleted(beam.PTransform):
    """The previous chunk ids missing from this run's output, per document (``DELETED_SCHEMA`` rows).

    Input: a dict with ``previous`` (``CompareWithPrevious``'s ``previous_chunk_ids``) and
    ``chunks`` (this run's freshly validated chunk rows), joined by document id
    (``CoGroupByKey``; ids only). ``document_removed`` is true when the document has no chunk
    in this run's output (gone from the input, or rejected now).
    """

    def expand(self, pcolls):
        current = pcolls["chunks"] | "Chunk ids" >> beam.Map(lambda row: (row["document_id"], row["chunk_id"]))
        return (
            {"previous": pcolls["previous"], "current": current}
            | "Join by document id" >> beam.CoGroupByKey()
            | "Stale chunk ids" >> beam.FlatMap(_deleted_rows)
        )
