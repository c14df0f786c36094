"""The command line's checks of a ``--previous`` output's files, before the pipeline starts."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.options import OptionError
from pipelines.preflight import _PREVIOUS_FILES, _count_previous_rows
from transforms.documents import CHUNK_SCHEMA


def _write_chunks(folder, schema: pa.Schema, rows: int) -> None:
    (folder / "chunks").mkdir(parents=True)
    pq.write_table(_table(schema, rows), folder / "chunks" / "c.parquet")


def _table(schema: pa.Schema, rows: int) -> pa.Table:
    return pa.table({field.name: pa.nulls(rows, field.type) for field in schema}, schema=schema)


def test_previous_chunks_without_chunk_keys_are_counted(tmp_path):
    """An output of a rechunk version that wrote no ``chunk_key`` is a valid previous run."""
    _write_chunks(tmp_path, CHUNK_SCHEMA.remove(CHUNK_SCHEMA.get_field_index("chunk_key")), 3)
    assert _count_previous_rows(str(tmp_path), "chunks", dict(_PREVIOUS_FILES)["chunks"]) == 3


def test_previous_chunks_without_their_text_are_refused(tmp_path):
    _write_chunks(tmp_path, CHUNK_SCHEMA.remove(CHUNK_SCHEMA.get_field_index("text")), 1)
    with pytest.raises(OptionError, match="lacks column 'text'"):
        _count_previous_rows(str(tmp_path), "chunks", dict(_PREVIOUS_FILES)["chunks"])
