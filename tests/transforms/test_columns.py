"""Arrow columns as Python values: text over a limit stays in Arrow (``ArrowText``), and the
rejection path makes no Python string of it, from the read to the dead-letter file."""

from __future__ import annotations

import pickle
import tracemalloc

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from transforms.admission import row_to_document
from transforms.beam.read import _read_row_group
from transforms.beam.write import _table
from transforms.columns import ArrowText, table_columns
from transforms.documents import DEAD_LETTER_SCHEMA, DeadLetter, Document


def _plain(values: list) -> list:
    """``values`` with each ArrowText as its string."""
    return [str(v) if isinstance(v, ArrowText) else v for v in values]


def test_a_value_over_its_limit_stays_in_arrow_and_the_others_are_strings():
    content = ["abc", "abcdefgh", None, "ééééééé", "xy", "🙂🙂🙂🙂🙂🙂"]
    table = pa.table({"id": ["a", "b", "c", "d", "e", "f"], "text": content})
    columns = table_columns(table, {"text": "content"}, text_limits={"content": 5})
    values = columns["content"]
    assert [type(v).__name__ for v in values] == ["str", "ArrowText", "NoneType", "ArrowText", "str", "ArrowText"]
    assert _plain(values) == content
    assert [len(v) for v in values if isinstance(v, ArrowText)] == [8, 7, 6]  # code points
    assert [v.utf8_bytes for v in values if isinstance(v, ArrowText)] == [8, 14, 24]
    assert columns["id"] == ["a", "b", "c", "d", "e", "f"]  # other columns as they were


def test_the_limit_counts_code_points_and_a_value_at_it_is_a_string():
    table = pa.table({"content": ["ééééé", "éééééé"]})
    values = table_columns(table, {}, text_limits={"content": 5})["content"]
    assert isinstance(values[0], str) and isinstance(values[1], ArrowText)


def test_values_over_the_limit_in_several_chunks_keep_their_rows():
    column = pa.chunked_array([["long one", "s"], ["t", "long two", "long three"]], type=pa.large_string())
    values = table_columns(pa.table({"content": column}), {}, text_limits={"content": 3})["content"]
    assert _plain(values) == ["long one", "s", "t", "long two", "long three"]
    assert [isinstance(v, ArrowText) for v in values] == [True, False, False, True, True]


def test_a_value_over_the_limit_that_is_not_utf8_stays_bytes():
    raw = pa.array([b"ok", b"\xff\xfe not text"], type=pa.binary()).view(pa.string())
    values = table_columns(pa.table({"content": raw}), {}, text_limits={"content": 3})["content"]
    assert values == ["ok", b"\xff\xfe not text"]  # (admission: invalid_content, its payload escaped)


def test_without_a_limit_every_value_is_a_string():
    table = pa.table({"content": ["a" * 100]})
    assert table_columns(table, {})["content"] == ["a" * 100]
    assert table_columns(table, {}, text_limits={"other": 1})["content"] == ["a" * 100]


def test_arrow_text_pickles_only_its_own_value_and_shares_its_buffer_when_cast():
    column = pa.array(["x" * 1000, "y" * 100_000], type=pa.large_string())
    value = ArrowText(column.slice(0, 1))
    assert len(pickle.dumps(value)) < 2_000  # not the column's 101,000 bytes
    assert pickle.loads(pickle.dumps(value)) == value and str(pickle.loads(pickle.dumps(value))) == "x" * 1000
    as_string = value.as_arrow(pa.string())
    assert as_string.type == pa.string() and as_string.to_pylist() == ["x" * 1000]
    assert as_string.buffers()[2].address == column.buffers()[2].address  # the UTF-8 bytes are not copied


def test_arrow_text_refuses_anything_but_one_string_value():
    with pytest.raises(ValueError):
        ArrowText(pa.array(["a", "b"]))
    with pytest.raises(ValueError):
        ArrowText(pa.array([b"a"]))


def test_admission_rejects_arrow_text_with_its_arrow_value_as_the_payload():
    value = ArrowText(pa.array(["a long document"]))
    row = {"id": "d", "content": value, "content_format": "text"}
    rejected = row_to_document(row, {}, "tok", max_document_chars=5)
    assert isinstance(rejected, DeadLetter) and rejected.reason == "document_too_large"
    assert rejected.payload is value
    assert rejected.detail == "content is 15 characters > max 5 (--max-document-chars)"
    duplicate = row_to_document(row, {"d": 2}, "tok", max_document_chars=5)
    assert isinstance(duplicate, DeadLetter) and duplicate.reason == "duplicate_document_id"
    assert duplicate.payload is value
    # Within the limit (only when called apart from the read, whose limit is the job's): a string.
    document = row_to_document(row, {}, "tok", max_document_chars=100)
    assert isinstance(document, Document) and document.content == "a long document"


def test_dead_letter_rows_with_arrow_text_are_written_as_the_strings_would_be():
    rows = [
        DeadLetter("a", "read", "document_too_large", "d", ArrowText(pa.array(["first"])), "tok").to_row(),
        DeadLetter("b", "read", "empty_document", "d", "  ", "tok").to_row(),
        DeadLetter(
            "c", "read", "document_too_large", "d", ArrowText(pa.array(["third"], pa.large_string())), "tok"
        ).to_row(),
        DeadLetter("d", "read", "null_content", "d", None, "tok").to_row(),
    ]
    table = _table(rows, DEAD_LETTER_SCHEMA)
    assert table.schema == DEAD_LETTER_SCHEMA
    assert table.column("payload").to_pylist() == ["first", "  ", "third", None]
    assert table.column("document_id").to_pylist() == ["a", "b", "c", "d"]
    assert (
        table.to_pylist()
        == pa.Table.from_pylist(
            [{**r, "payload": _plain([r["payload"]])[0]} for r in rows], schema=DEAD_LETTER_SCHEMA
        ).to_pylist()
    )


def test_rejecting_a_document_over_the_limit_makes_no_python_string_of_it(tmp_path):
    """From the read to the dead-letter table: Python allocates nothing near the document's size
    (its content stays in Arrow's buffer, which tracemalloc does not see)."""
    content = "word and more words " * 250_000  # 5 M characters
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": ["big"], "content": [content], "content_format": ["text"]}), path)
    parquet = pq.ParquetFile(path)
    tracemalloc.start()
    try:
        columns, _ = _read_row_group(str(path), parquet, 0, None, {}, {"content": 1_000_000})
        row = {name: values[0] for name, values in columns.items()}
        rejected = row_to_document(row, {}, "tok", max_document_chars=1_000_000)
        assert isinstance(rejected, DeadLetter)
        table = _table([rejected.to_row()], DEAD_LETTER_SCHEMA)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 500_000, f"{peak:,} bytes allocated by Python for a {len(content):,}-character document"
    assert table.column("payload")[0].as_py() == content
