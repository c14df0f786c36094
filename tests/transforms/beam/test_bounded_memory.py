"""Bounded memory and huge inputs: --max-document-chars, byte-bounded record batches, duplicate ids
from an id-only read, and progress lines."""

from __future__ import annotations

import json
import logging

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

import transforms.beam.write as write_module
from pipelines.rechunk import main
from tests.conftest import read_output, write_documents
from transforms.beam import WriteDeadLetter
from transforms.documents import DeadLetter


@pytest.mark.slow
def test_longer_documents_are_dead_lettered_whole(tmp_path, monkeypatch):
    """... and their content reaches the dead-letter writer still in Arrow's buffer (never a
    Python string: transforms.columns.ArrowText)."""
    payload_types = []
    table = write_module._table

    def recording_table(rows, schema):
        payload_types.extend(type(row["payload"]).__name__ for row in rows if "payload" in row)
        return table(rows, schema)

    monkeypatch.setattr(write_module, "_table", recording_table)
    at_limit, over = "word " * 20, "word " * 20 + "x"
    docs = write_documents(
        tmp_path / "docs.parquet",
        [
            {"id": "fits", "content": at_limit, "content_format": "text", "metadata": None},
            {"id": "big", "content": over, "content_format": "text", "metadata": None},
        ],
    )
    argv = ["--input", str(docs), "--output", str(tmp_path / "out"), "--max-dead-letter-fraction", "1"]
    assert main([*argv, "--max-document-chars", "100"]) == 0
    dead = read_output(tmp_path / "out", "dead_letter")
    assert [(d["document_id"], d["stage"], d["reason"], d["payload"]) for d in dead] == [
        ("big", "read", "document_too_large", over)
    ]
    assert dead[0]["detail"] == "content is 101 characters > max 100 (--max-document-chars)"
    assert {c["document_id"] for c in read_output(tmp_path / "out", "chunks")} == {"fits"}
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["dead_letter_by_reason"] == {"document_too_large": 1}
    assert payload_types == ["ArrowText"]


@pytest.mark.slow
def test_duplicate_ids_are_found_by_the_id_only_read(tmp_path):
    """The job counts ids from a second read of the id column (renamed by --column-map)."""
    import pyarrow as pa

    table = pa.table(
        {
            "doc_id": ["a", "dup", "dup", "b"],
            "text": ["Alpha text.", "One.", "Two.", "Beta text."],
        }
    )
    pq.write_table(table, tmp_path / "docs.parquet")
    assert (
        main(
            [
                "--input",
                str(tmp_path / "docs.parquet"),
                "--output",
                str(tmp_path / "out"),
                "--column-map",
                "id=doc_id,content=text",
                "--max-dead-letter-fraction",
                "1",
            ]
        )
        == 0
    )
    dead = read_output(tmp_path / "out", "dead_letter")
    assert sorted((d["document_id"], d["reason"], d["payload"]) for d in dead) == [
        ("dup", "duplicate_document_id", "One."),
        ("dup", "duplicate_document_id", "Two."),
    ]
    assert {c["document_id"] for c in read_output(tmp_path / "out", "chunks")} == {"a", "b"}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--max-document-chars", "0"], "--max-document-chars must be an integer from 1 to 500,000,000"),
        (["--max-document-chars", "abc"], "--max-document-chars must be an integer from 1 to 500,000,000"),
        (["--max-document-chars", "500000001"], "got '500000001'"),
        (["--progress-seconds", "-1"], "--progress-seconds must be a number of seconds >= 0 (0: never), got '-1'"),
        (["--progress-seconds", "nan"], "--progress-seconds must be a number of seconds >= 0"),
    ],
)
def test_option_mistakes(capsys, tmp_path, argv, message):
    docs = write_documents(tmp_path / "docs.parquet", [{"id": "a", "content": "x", "metadata": None}])
    assert main(["--input", str(docs), "--output", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


@pytest.mark.slow
def test_record_batches_are_bounded_by_utf8_bytes(tmp_path, monkeypatch):
    """A batch is flushed before its strings pass MAX_BATCH_BYTES of UTF-8: one row group per row
    here (two rows are 1,200 bytes of payload, but only 600 characters), same rows."""
    monkeypatch.setattr(write_module, "MAX_BATCH_BYTES", 1000)
    rows = [DeadLetter(f"d{i}", "read", "null_content", "x", "é" * 300, "t") for i in range(10)]
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        _ = p | beam.Create(rows) | WriteDeadLetter(str(tmp_path / "dl" / "dead_letter"))
    files = sorted((tmp_path / "dl").glob("*.parquet"))
    assert sum(pq.ParquetFile(f).metadata.num_row_groups for f in files) == 10
    assert sorted(r["document_id"] for r in read_output(tmp_path, "dl")) == sorted(f"d{i}" for i in range(10))
    assert all(r["payload"] == "é" * 300 for r in read_output(tmp_path, "dl"))


def test_utf8_size_counts_every_string_column():
    assert write_module._utf8_size("abc") == 3
    assert write_module._utf8_size("é€😀") == 2 + 3 + 4
    assert write_module._utf8_size(["ab", "é"]) == 4
    assert write_module._utf8_size(7) == write_module._utf8_size(None) == 0


@pytest.mark.slow
def test_the_job_logs_progress(tmp_path, caplog):
    """The lines count every document done against the input's rows, a dead-lettered one too."""
    rows = [{"id": str(i), "content": f"Document {i}.", "metadata": None} for i in range(4)]
    docs = write_documents(tmp_path / "docs.parquet", [*rows, {"id": "4", "content": None}])  # null_content
    argv = ["--input", str(docs), "--output", str(tmp_path / "out"), "--max-dead-letter-fraction", "1"]
    with caplog.at_level(logging.INFO, logger="rechunk"):
        assert main([*argv, "--progress-seconds", "1e-9"]) == 0
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("progress: ")]
    assert lines and lines[-1].startswith("progress: 5 of 5 documents (100.0%), ")
    assert lines[-1].endswith(", 4 chunks, the job's total reached (this worker)")


def test_worker_progress_lines_forwarded_by_beam_are_shown_as_rechunk_lines():
    """multi_processing workers' entries reach the launcher as Beam's 'Worker: ...' text."""
    import logging as log_module

    from pipelines.console import WorkerProgressFilter

    def record(level, text):
        return log_module.LogRecord(
            "apache_beam.runners.portability.local_job_service", level, __file__, 1, "Worker: %s", (text,), None
        )

    keep = WorkerProgressFilter()
    progress = record(log_module.INFO, 'severity: INFO message: "progress: 3 documents, 9 chunks in this worker" x: 1')
    assert keep.filter(progress) and progress.name == "rechunk"
    assert progress.getMessage() == "progress: 3 documents, 9 chunks in this worker"
    assert not keep.filter(record(log_module.INFO, 'severity: INFO message: "Creating state cache"'))
    assert keep.filter(record(log_module.WARNING, 'severity: WARN message: "something"'))


@pytest.mark.slow
def test_text_columns_are_written_in_plain_pages_and_the_rest_dictionary_encoded(tmp_path):
    """Every output file is zstd; a column holding a document's or a chunk's text has no dictionary
    page (reading a huge value back from one holds an extra copy of it) and no min and max
    statistics (writing a huge value would build several more copies), the other columns keep
    pyarrow's dictionary encoding (the list of headings included) and their statistics."""
    docs = write_documents(
        tmp_path / "docs.parquet",
        [
            {
                "id": "a",
                "content": "# Title\n\n" + "Some words here. " * 300,
                "content_format": "markdown",
                "metadata": None,
            },
            {"id": "b", "content": None, "content_format": "text", "metadata": None},
        ],
    )
    argv = ["--input", str(docs), "--output", str(tmp_path / "out"), "--max-dead-letter-fraction", "1"]
    assert main([*argv, "--max-tokens", "64"]) == 0
    seen, statistics = {}, {}
    for folder in ("chunks", "dead_letter", "documents"):
        for path in sorted((tmp_path / "out" / folder).glob("*.parquet")):
            metadata = pq.ParquetFile(path).metadata
            for g in range(metadata.num_row_groups):
                for c in range(metadata.num_columns):
                    column = metadata.row_group(g).column(c)
                    assert column.compression == "ZSTD", (path, column.path_in_schema)
                    seen[(folder, column.path_in_schema)] = "RLE_DICTIONARY" in column.encodings
                    statistics[(folder, column.path_in_schema)] = column.is_stats_set
    plain = {("chunks", "text"), ("chunks", "embedding_text"), ("dead_letter", "payload"), ("dead_letter", "detail")}
    assert {key for key, dictionary in seen.items() if not dictionary} == plain
    assert {key for key, written in statistics.items() if not written} == plain
    # the list layout of Beam's own sink (``item``), as earlier outputs have it
    assert seen[("chunks", "headings.list.item")] and seen[("chunks", "document_id")]
    assert ("documents", "document_hash") in seen and ("dead_letter", "reason") in seen
    # dead-letter files in data pages of version 2 (no joined copy of a huge payload), the others in 1
    versions = {
        folder: {
            _data_page_version(path, c)
            for path in (tmp_path / "out" / folder).glob("*.parquet")
            if pq.ParquetFile(path).metadata.num_row_groups
            for c in (0, 1)
        }
        for folder in ("chunks", "dead_letter", "documents")
    }
    assert versions == {"chunks": {1}, "dead_letter": {2}, "documents": {1}}


def _data_page_version(path, column: int) -> int:
    """The version of the first data page of ``column`` in row group 0, read from its page header:
    a Thrift compact struct whose first field (id 1, i32) is the page type, zigzag-encoded
    (``DATA_PAGE`` = 0, ``DATA_PAGE_V2`` = 3; parquet-format's ``PageHeader``)."""
    offset = pq.ParquetFile(path).metadata.row_group(0).column(column).data_page_offset
    with open(path, "rb") as handle:
        handle.seek(offset)
        field, page_type = handle.read(2)
    assert field == 0x15, "a page header starts with field 1 of type i32"
    return {0: 1, 6: 2}[page_type]


@pytest.mark.slow
def test_parsed_documents_are_written_with_content_in_plain_pages(tmp_path):
    """``rechunk parse``'s output is the next job's input: its ``content`` has no dictionary page."""
    from transforms.beam import WriteParsed

    rows = [{"id": f"d{i}", "content": "x" * 2000, "content_format": "markdown", "metadata": "{}"} for i in range(3)]
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        _ = p | beam.Create(rows) | WriteParsed(str(tmp_path / "parsed" / "documents"))
    (path,) = sorted((tmp_path / "parsed").glob("*.parquet"))
    group = pq.ParquetFile(path).metadata.row_group(0)
    encodings = {group.column(c).path_in_schema: group.column(c).encodings for c in range(group.num_columns)}
    assert "RLE_DICTIONARY" not in encodings["content"] and "RLE_DICTIONARY" in encodings["id"]
    assert pq.read_table(path).to_pylist() == rows
