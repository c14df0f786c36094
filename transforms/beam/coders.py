"""Coders of the job's heavy elements, whose size estimates encode nothing.

Beam samples the size of elements on every edge between transforms (always the first ten, then
about ten per doubling) with the edge's coder. Importing this module registers
:class:`ArrowTableCoder` for ``pyarrow.Table``, :class:`DocumentCoder` for
:class:`~transforms.documents.Document` and :class:`DeadLetterCoder` for
:class:`~transforms.documents.DeadLetter` (``transforms.beam`` imports it first); an edge gets one
where its PCollection is typed so (:func:`typed_main_output`, :func:`typed_output`,
``.with_output_types``).
"""

from __future__ import annotations

import pickle

import apache_beam as beam
import pyarrow as pa

from transforms.documents import DeadLetter, Document

__all__ = ["ArrowTableCoder", "DeadLetterCoder", "DocumentCoder", "typed_main_output", "typed_output"]


class ArrowTableCoder(beam.coders.Coder):
    """pyarrow Tables as Arrow IPC streams, with a size estimate that encodes nothing.

    With Beam's default coder each sampled table is pickled whole (150 MB per pass over a run's
    chunk tables). This coder's estimate is the table's buffer size (``Table.nbytes``, bytes).
    Its encoding is used only where a runner moves tables between workers or stages.
    """

    def encode(self, table: pa.Table) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()

    def decode(self, encoded: bytes) -> pa.Table:
        return pa.ipc.open_stream(encoded).read_all()

    def estimate_size(self, table: pa.Table) -> int:
        return table.nbytes

    def is_deterministic(self) -> bool:
        return False

    def to_type_hint(self):
        return pa.Table


beam.coders.registry.register_coder(pa.Table, ArrowTableCoder)


class DocumentCoder(beam.coders.Coder):
    """:class:`Document` records pickled, with a size estimate that encodes nothing.

    With Beam's default coder, the size estimate of a Document edge pickles each sampled element
    whole: for a 50 MB document, a pickle of the whole content (and the pickler's growing buffer,
    left resident by the allocator) between admission and chunking (+48 MiB RSS for a
    50 M-character Markdown document held at 4 bytes a character). This coder's estimate is the
    content's length in code points plus the id's.
    """

    def encode(self, document: Document) -> bytes:
        return pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL)

    def decode(self, encoded: bytes) -> Document:
        return pickle.loads(encoded)

    def estimate_size(self, document: Document) -> int:
        return len(document.content) + len(document.id)

    def is_deterministic(self) -> bool:
        return False

    def to_type_hint(self):
        return Document


beam.coders.registry.register_coder(Document, DocumentCoder)


class DeadLetterCoder(beam.coders.Coder):
    """:class:`DeadLetter` records pickled, with a size estimate that encodes nothing.

    A dead-letter row's ``payload`` is a rejected document's whole content. With Beam's default
    coder the size estimate of the edge pickles it whole (and the pickler's buffers grow with
    it): for a 200 M-character document dead-lettered as ``document_too_large``, several hundred
    MiB of peak (``benchmarks/memory.py --dead-letter``). This coder's estimate is the payload's
    and the detail's length in code points.
    """

    def encode(self, row: DeadLetter) -> bytes:
        return pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL)

    def decode(self, encoded: bytes) -> DeadLetter:
        return pickle.loads(encoded)

    def estimate_size(self, row: DeadLetter) -> int:
        return len(row.payload or "") + len(row.detail)

    def is_deterministic(self) -> bool:
        return False

    def to_type_hint(self):
        return DeadLetter


beam.coders.registry.register_coder(DeadLetter, DeadLetterCoder)


def typed_output(outputs, tag: str, element_type: type):
    """``outputs`` (a ParDo's ``with_outputs``) with its output ``tag`` typed ``element_type``
    (as :func:`typed_main_output`, for a tagged output: ``DeadLetterCoder`` on a dead-letter edge)."""
    outputs[tag].element_type = element_type
    return outputs


def typed_main_output(outputs, main: str, element_type: type):
    """``outputs`` (a ParDo's ``with_outputs``) with its ``main`` output typed ``element_type``,
    so that edge has the coder registered for the type (``DocumentCoder``, ``ArrowTableCoder``).

    The type goes on the PCollection, not on the ParDo (``.with_output_types``): Beam 2.77's
    runtime type checks (``--runtime_type_check``, ``--performance_runtime_type_check``) check
    every tagged output against a ParDo's main output hint, so a hinted ParDo would fail the job
    on its first dead-letter row.
    """
    getattr(outputs, main).element_type = element_type
    return outputs
