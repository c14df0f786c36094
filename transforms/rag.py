"""Chunks into Beam's RAG types, so Beam's embedding and vector-database transforms follow directly.

A row of ``chunks/*.parquet`` (``CHUNK_SCHEMA``) becomes an ``apache_beam.ml.rag.types.Chunk``
(``EmbeddableItem`` in Beam 2.77):

- ``id`` = ``chunk_id`` (stable: the same chunk keeps its id run after run, so a vector store
  upserts it in place);
- ``content.text`` = ``embedding_text`` (exactly what the budget was checked on: the text with its
  heading prefix where the chunker added one);
- ``index`` = ``chunk_index``;
- ``metadata``: ``document_id``, ``headings`` (list, outermost first), ``page_no``,
  ``start_offset``, ``end_offset`` (code points in the source document, or None), ``text`` (the
  chunk as a reader sees it), ``token_count``, ``tokenizer``, ``chunker``, ``content_format``,
  ``document_hash`` and ``document_metadata`` (the chunk's ``metadata`` JSON, parsed).

Then, for example::

    chunks | ToRagChunks()
           | MLTransform(write_artifact_location=TMP).with_transform(HuggingfaceTextEmbeddings(model_name=PATH))
           | beam.ml.rag.ingestion.base.VectorDatabaseWriteTransform(...)

Pure data: no model, no torch (see ``examples/embed_chunks.py`` for the embedding step).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import apache_beam as beam
from apache_beam.ml.rag.types import Chunk as RagChunk
from apache_beam.ml.rag.types import Content

__all__ = ["ToRagChunks", "rag_chunk"]


def rag_chunk(row: Mapping[str, Any]) -> RagChunk:
    """One chunk row (a dict with ``CHUNK_SCHEMA``'s columns) as a Beam RAG ``Chunk``.

    Raises:
        KeyError: a required column (``chunk_id``, ``embedding_text``, ``chunk_index``,
            ``document_id``) is missing.
        ValueError: ``metadata`` is neither null (empty, or JSON ``null``: no metadata) nor a JSON
            object.
    """
    raw = row.get("metadata")
    try:
        document_metadata = (json.loads(raw) if raw else None) if isinstance(raw, str) else raw
    except ValueError:
        document_metadata = raw  # not JSON: refused below with the chunk's id
    if document_metadata is None:  # no metadata: null, "" or JSON null
        document_metadata = {}
    if not isinstance(document_metadata, dict):
        raise ValueError(f"chunk {row['chunk_id']}: metadata must be a JSON object, got {raw!r:.80}")
    headings = row.get("headings")
    return RagChunk(
        content=Content(text=row["embedding_text"]),
        id=row["chunk_id"],
        index=int(row["chunk_index"]),
        metadata={
            "document_id": row["document_id"],
            "headings": list(headings) if headings is not None else [],
            "page_no": row.get("page_no"),
            "start_offset": row.get("start_offset"),
            "end_offset": row.get("end_offset"),
            "text": row.get("text"),
            "token_count": row.get("token_count"),
            "tokenizer": row.get("tokenizer"),
            "chunker": row.get("chunker"),
            "content_format": row.get("content_format"),
            "document_hash": row.get("document_hash"),
            "chunk_key": row.get("chunk_key"),
            "document_metadata": document_metadata,
        },
    )


class ToRagChunks(beam.PTransform):
    """Chunk rows (dicts, e.g. from ``beam.io.ReadFromParquet('OUT/chunks/*.parquet')``) into
    ``apache_beam.ml.rag.types.Chunk``: see :func:`rag_chunk` for the mapping."""

    def expand(self, rows):
        return rows | "To RAG chunks" >> beam.Map(rag_chunk).with_output_types(RagChunk)
