"""The thin Beam layer: PTransforms that read, admit, chunk, validate and write.

Nothing here knows how a chunker works or what a rule says. Each DoFn converts its element, calls
the Beam-free core (``transforms.admission``, ``transforms.outcomes``, ``transforms.chunkers``,
``transforms.validation``) and maps what it returns to outputs: good records on the main
output, rejected ones as :class:`~transforms.documents.DeadLetter` on the ``dead_letter``
tagged output, each counted by a Beam metric (namespace ``rechunk``). Heavy objects (tokenizers,
chunkers, models) are built in ``DoFn.setup()`` from plain specs and released in ``teardown()``.

Modules, by concern:

- ``coders``: coders of Arrow tables and documents (registered when the package is imported);
- ``outputs``: output tags and Beam counters;
- ``read``: Parquet input, a row group at a time;
- ``chunk``: admission and chunking;
- ``incremental``: the comparison with an earlier run's output (``--previous``);
- ``write``: the Parquet sink and the job's Write* transforms;
- ``parse``: the transforms of ``rechunk parse`` (raw files into input rows).
"""

from transforms.beam.chunk import AdmitDocuments, ChunkDocuments, shared_tokenizer
from transforms.beam.coders import ArrowTableCoder, DocumentCoder
from transforms.beam.incremental import (
    KEPT_CHUNKS,
    KEPT_MANIFEST,
    PREVIOUS_IDS,
    CompareWithPrevious,
    ListDeleted,
    PreviousManifestNotes,
)
from transforms.beam.outputs import DEAD_LETTER, MANIFEST, METRICS_NAMESPACE
from transforms.beam.parse import PARSE_METRICS_NAMESPACE, ParseFiles, WriteParsed, WriteParseDeadLetter
from transforms.beam.read import ReadDocumentIds, ReadDocuments, ReadDocumentsAndIds, ReadParquetRows
from transforms.beam.write import (
    MAX_BATCH_ROWS,
    PLAIN_PAGE_COLUMNS,
    WriteChunks,
    WriteDeadLetter,
    WriteDeleted,
    WriteKeptChunks,
    WriteManifest,
    WriteRows,
)
from transforms.outcomes import STRUCTURE_COUNTERS

__all__ = [
    "DEAD_LETTER",
    "KEPT_CHUNKS",
    "KEPT_MANIFEST",
    "MANIFEST",
    "MAX_BATCH_ROWS",
    "METRICS_NAMESPACE",
    "PARSE_METRICS_NAMESPACE",
    "PLAIN_PAGE_COLUMNS",
    "PREVIOUS_IDS",
    "STRUCTURE_COUNTERS",
    "AdmitDocuments",
    "ArrowTableCoder",
    "ChunkDocuments",
    "CompareWithPrevious",
    "DocumentCoder",
    "ListDeleted",
    "ParseFiles",
    "PreviousManifestNotes",
    "ReadDocumentIds",
    "ReadDocuments",
    "ReadDocumentsAndIds",
    "ReadParquetRows",
    "WriteChunks",
    "WriteDeadLetter",
    "WriteDeleted",
    "WriteKeptChunks",
    "WriteManifest",
    "WriteParseDeadLetter",
    "WriteParsed",
    "WriteRows",
    "shared_tokenizer",
]
