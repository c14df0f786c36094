"""The Beam layer with TestPipeline and assert_that: every row ends as chunks or dead letter."""

from __future__ import annotations

import json

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import given
from hypothesis import strategies as st

from pipelines.config import resolve_config
from tests.conftest import REPO
from transforms import chunkers as chunkers_module
from transforms.beam import DEAD_LETTER, AdmitDocuments, ChunkDocuments
from transforms.chunkers.base import Chunker
from transforms.documents import chunk_id, unescape_payload

DOCLING_SAMPLE = REPO / "sample" / "docs.parquet"

PROSE = "First paragraph here.\n\nSecond paragraph, a little longer than the first one."


def _pipeline():
    return BeamTestPipeline(options=PipelineOptions(runner="FnApiRunner"))


def _spec(**overrides):
    data = {
        "chunkers": {
            "prose": {"type": "RecursiveCharacterTextSplitter", "params": {"length": "tokens", "chunk_overlap": 0}},
        },
        "default": "prose",
        **overrides,
    }
    return resolve_config(data, tokenizer="tiktoken:cl100k_base", max_tokens=8)


def _run(rows, spec, identity=None):
    """Admit, chunk and validate ``rows``; return (chunks, dead letter) PCollections."""
    from transforms.tokenizers import load_tokenizer

    p = _pipeline()
    identity = identity or load_tokenizer(spec["tokenizer"]).identity
    ident = p | "identity" >> beam.Create([identity])
    admitted = p | beam.Create(rows) | AdmitDocuments(ident)
    validated = admitted.documents | ChunkDocuments(spec, ident)
    dead = (admitted[DEAD_LETTER], validated[DEAD_LETTER]) | beam.Flatten()
    return p, validated.chunks, dead


@pytest.mark.slow
def test_admit_rejects_each_bad_row_with_its_reason_and_whole_payload():
    rows = [
        {"id": "good", "content": PROSE, "content_format": "markdown", "metadata": '{"source": "a"}', "lang": "en"},
        {"id": "null", "content": None, "content_format": "text", "metadata": None},
        {"id": "blank", "content": " \n\t ", "content_format": "text", "metadata": None},
        {"id": "badmeta", "content": "text", "content_format": "text", "metadata": "[1, 2]"},
        {"id": "brokenmeta", "content": "text", "content_format": "text", "metadata": "{not json"},
        {"id": "dup", "content": "one", "content_format": "text", "metadata": None},
        {"id": "dup", "content": "two", "content_format": "text", "metadata": None},
        {"id": "pdf", "content": "%PDF", "content_format": "pdf", "metadata": None},
        {"id": None, "content": "orphan", "content_format": "text", "metadata": None},
        {"id": "notdocling", "content": "{]", "content_format": "docling", "metadata": None},
    ]
    spec = _spec(
        chunkers={
            "prose": {"type": "RecursiveCharacterTextSplitter", "params": {"length": "tokens", "chunk_overlap": 0}},
            "docling": {"type": "DoclingChunker", "params": {}},
        },
        routes=[{"when": {"content_format": ["docling"]}, "chunker": "docling"}],
    )
    p, chunks, dead = _run(rows, spec)
    expected_dead = [
        ("null", "read", "null_content", None),
        ("blank", "read", "empty_document", " \n\t "),
        ("badmeta", "read", "invalid_metadata", "text"),
        ("brokenmeta", "read", "invalid_metadata", "text"),
        ("dup", "read", "duplicate_document_id", "one"),
        ("dup", "read", "duplicate_document_id", "two"),
        ("pdf", "route", "unsupported_content_format", "%PDF"),
        (None, "read", "missing_document_id", "orphan"),
        ("notdocling", "chunk", "invalid_docling_json", "{]"),
    ]
    assert_that(
        dead | "dead key" >> beam.Map(lambda d: (d.document_id, d.stage, d.reason, d.payload)),
        equal_to(expected_dead),
        label="dead letter",
    )
    assert_that(
        chunks
        | "chunk key"
        >> beam.Map(
            lambda c: (c["document_id"], c["chunk_index"], c["text"], c["token_count"], json.loads(c["metadata"]))
        ),
        equal_to(
            [
                ("good", 0, "First paragraph here.", 4, {"source": "a", "lang": "en"}),
                # In tokens the splitter searches back from where 8 tokens end (after " the") for
                # the first separator there: no "\n\n" or "\n", the space after "the".
                ("good", 1, "Second paragraph, a little longer than the", 8, {"source": "a", "lang": "en"}),
                ("good", 2, "first one.", 3, {"source": "a", "lang": "en"}),
            ]
        ),
        label="chunks",
    )
    p.run().wait_until_finish()


@pytest.mark.slow
def test_chunks_carry_contract_identity():
    rows = [{"id": "doc-1", "content": PROSE, "content_format": "text", "metadata": None}]
    spec = _spec()
    p, chunks, _ = _run(rows, spec)
    from transforms.chunkers.registry import build_router
    from transforms.tokenizers import load_tokenizer

    config_hash = build_router(spec, tokenizer=load_tokenizer(spec["tokenizer"])).chunkers["prose"].config_hash
    assert_that(
        chunks
        | beam.Map(
            lambda c: (c["chunk_id"], c["chunker"], c["chunker_config_hash"], c["start_offset"], c["end_offset"])
        ),
        equal_to(
            [
                (chunk_id("doc-1", 0, "First paragraph here."), "RecursiveCharacterTextSplitter", config_hash, 0, 21),
                (
                    chunk_id("doc-1", 1, "Second paragraph, a little longer than the"),
                    "RecursiveCharacterTextSplitter",
                    config_hash,
                    23,
                    65,
                ),
                (chunk_id("doc-1", 2, "first one."), "RecursiveCharacterTextSplitter", config_hash, 66, 76),
            ]
        ),
    )
    p.run().wait_until_finish()


@pytest.mark.slow
def test_oversized_chunks_are_dead_lettered_and_the_rest_kept():
    # CharacterTextSplitter never descends below its separator: the long paragraph stays whole.
    long_paragraph = "word " * 30
    rows = [
        {
            "id": "mixed",
            "content": f"short one\n\n{long_paragraph}\n\nshort two",
            "content_format": "text",
            "metadata": None,
        }
    ]
    spec = _spec(
        chunkers={"para": {"type": "CharacterTextSplitter", "params": {"length": "tokens", "chunk_overlap": 0}}},
        default="para",
    )
    p, chunks, dead = _run(rows, spec)
    assert_that(
        chunks | "texts" >> beam.Map(lambda c: (c["chunk_index"], c["text"])),
        equal_to([(0, "short one"), (2, "short two")]),
        label="kept",
    )
    assert_that(
        dead | "reasons" >> beam.Map(lambda d: (d.reason, d.chunk_id is not None, d.detail, d.payload)),
        equal_to([("token_budget_exceeded", True, "30 tokens > max 8", long_paragraph.strip())]),
        label="dead",
    )
    p.run().wait_until_finish()


@pytest.mark.slow
def test_no_route_without_default():
    rows = [{"id": "md", "content": PROSE, "content_format": "markdown", "metadata": None}]
    spec = _spec(routes=[{"when": {"content_format": ["text"]}, "chunker": "prose"}], default=None)
    p, chunks, dead = _run(rows, spec)
    assert_that(chunks, equal_to([]), label="no chunks")
    assert_that(
        dead | beam.Map(lambda d: (d.document_id, d.stage, d.reason, d.payload)),
        equal_to([("md", "route", "no_route", PROSE)]),
        label="dead",
    )
    p.run().wait_until_finish()


@pytest.mark.slow
def test_tokenizer_identity_side_input_mismatch_rejects_chunks():
    rows = [{"id": "doc", "content": PROSE, "content_format": "text", "metadata": None}]
    p, chunks, dead = _run(rows, _spec(), identity="tiktoken:cl100k_base:ffffffff")
    assert_that(chunks, equal_to([]), label="no chunks")
    assert_that(
        dead | beam.Map(lambda d: (d.reason, d.tokenizer)),
        equal_to([("tokenizer_mismatch", "tiktoken:cl100k_base:ffffffff")] * 3),
        label="dead",
    )
    p.run().wait_until_finish()


class _Boom(Chunker):
    accepted_content_formats = None

    def __init__(self):
        pass

    def to_dict(self):
        return {}

    def split(self, document):
        raise RuntimeError("kaboom " + document.id)


@pytest.mark.slow
def test_unexpected_chunker_exception_becomes_chunker_error(monkeypatch):
    monkeypatch.setitem(chunkers_module.CHUNKERS, "_Boom", _Boom)
    rows = [{"id": "doc", "content": PROSE, "content_format": "text", "metadata": None}]
    spec = resolve_config(
        {"chunkers": {"boom": {"type": "_Boom"}}, "default": "boom"}, tokenizer="tiktoken:cl100k_base", max_tokens=8
    )
    p, chunks, dead = _run(rows, spec)
    assert_that(chunks, equal_to([]), label="no chunks")
    assert_that(
        dead | beam.Map(lambda d: (d.reason, d.stage, d.chunker, d.detail, d.payload)),
        equal_to([("chunker_error", "chunk", "_Boom", "RuntimeError: kaboom doc", PROSE)]),
        label="dead",
    )
    p.run().wait_until_finish()


def test_row_to_document_normalizes_format_and_merges_columns():
    from transforms.admission import row_to_document
    from transforms.documents import Document

    row = {
        "id": 7,
        "content": b"Hi there.",
        "content_format": " Markdown ",
        "metadata": '{"a": 1, "lang": "fr"}',
        "lang": "en",
        "year": 2024,
    }
    assert row_to_document(row, {}, "tok") == Document(
        id="7", content="Hi there.", content_format="markdown", metadata={"a": 1, "lang": "fr", "year": 2024}
    )
    bad = row_to_document({"id": "b", "content": b"\xff\xfe"}, {}, "tok")
    assert (bad.reason, bad.payload) == ("invalid_content", "\\xff\\xfe")  # readable
    # The text "\xff" and the byte 0xff give different payloads, and each payload gives its bytes back.
    raw = b"a\\xff \xff\\\xfe \xc3\xa9"
    bad = row_to_document({"id": "b", "content": raw}, {}, "tok")
    assert bad.payload == "a\\\\xff \\xff\\\\\\xfe \u00e9"
    assert unescape_payload(bad.payload) == raw


@given(
    st.binary(max_size=64)
    | st.lists(st.sampled_from([b"\\", b"x", b"ff", b"\xff", b"\xc3\xa9", b"\xc3", b"a"])).map(b"".join)
)
def test_escaped_payload_gives_the_bytes_back(raw):
    from transforms.documents import escape_bytes

    assert unescape_payload(escape_bytes(raw)) == raw


@pytest.mark.parametrize(
    "row, reason, detail",
    [
        ({"id": ["a"], "content": "x"}, "invalid_document_id", "id is a list, not a string"),
        ({"id": b"\xff", "content": "x"}, "invalid_document_id", "id is bytes that are not UTF-8"),
        (
            {"id": "d", "content": "x", "metadata": '{"a": ' + "[" * 40 + "]" * 40 + "}"},
            "invalid_metadata",
            "nested deeper than 32 levels",
        ),
        ({"id": "d", "content": "x", "metadata": "{oops"}, "invalid_metadata", "metadata is not JSON"),
        ({"id": "d", "content": "x", "metadata": "[]"}, "invalid_metadata", "metadata is not a JSON object"),
        (
            {"id": "d", "content": "x", "metadata": b"\xff"},
            "invalid_metadata",
            "metadata column is bytes that are not UTF-8",
        ),
        ({"id": "d", "content": "x", "content_format": {"a": 1}}, "unsupported_content_format", "content_format"),
    ],
)
def test_row_problems_become_reasons(row, reason, detail):
    from transforms.admission import row_to_document

    rejected = row_to_document(row, {}, "tok")
    assert rejected.reason == reason
    assert detail in rejected.detail


def test_metadata_is_made_plain_json():
    import datetime

    from transforms.admission import row_to_document

    row = {
        "id": b"bytes-id",
        "content": "x",
        "metadata": '{"score": NaN, "n": [1, Infinity]}',
        "seen": datetime.date(2024, 5, 1),
        "raw": b"ok",
        "weight": float("nan"),
    }
    doc = row_to_document(row, {}, "tok")
    assert doc.id == "bytes-id"
    assert doc.metadata == {"score": None, "n": [1, None], "seen": "2024-05-01", "raw": "ok", "weight": None}


def test_metadata_of_a_struct_or_map_column_is_the_object_it_holds():
    """A struct or map ``metadata`` column's value is the metadata object (as the same struct in any
    other column is carried as JSON), not an ``invalid_metadata`` dead letter; a list that is not
    a map's is refused."""
    import pyarrow as pa

    from transforms.admission import row_to_document

    table = pa.table(
        {
            "id": ["s", "m", "n"],
            "content": ["x", "y", "z"],
            "metadata": pa.array(
                [{"lang": "en", "n": 1}, None, {"lang": None, "n": 3}],
                pa.struct([("lang", pa.string()), ("n", pa.int64())]),
            ),
        }
    )
    rows = _table_rows(table, {})
    assert [row_to_document(r, {}, "t").metadata for r in rows] == [{"lang": "en", "n": 1}, {}, {"lang": None, "n": 3}]
    mapped = list(
        _table_rows(
            pa.table(
                {
                    "id": ["m"],
                    "content": ["y"],
                    "metadata": pa.array([[("k", "v"), ("a", "b")]], pa.map_(pa.string(), pa.string())),
                }
            ),
            {},
        )
    )
    assert row_to_document(mapped[0], {}, "t").metadata == {"a": "b", "k": "v"}
    # a map's keys become their text; the last of equal keys wins (as a dict of its pairs)
    assert row_to_document(
        {"id": "i", "content": "x", "metadata": [(1, "a"), (1, "b"), (2, None)]}, {}, "t"
    ).metadata == {"1": "b", "2": None}
    dead = row_to_document({"id": "l", "content": "x", "metadata": ["k", "v"]}, {}, "t")
    assert (dead.reason, dead.detail) == ("invalid_metadata", "the metadata column is a list, not a string")


def _table_rows(table, rename):
    """A table's rows as the job's read makes them (after ``read_row_group``)."""
    from transforms.columns import release_rows, table_columns

    return release_rows(table_columns(table, rename), table.num_rows)


def test_table_rows_keep_invalid_utf8_as_bytes_per_value():
    import numpy as np
    import pyarrow as pa

    items = [b"fine", b"lone \xed\xa0\x80", b"x"]
    offsets = np.cumsum([0] + [len(b) for b in items]).astype(np.int32)
    content = pa.Array.from_buffers(
        pa.string(), 3, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(items))]
    )
    table = pa.table({"id": ["a", "b", "c"], "content": content, "text": ["t1", "t2", "t3"]})
    assert list(_table_rows(table, {})) == [
        {"id": "a", "content": "fine", "text": "t1"},
        {"id": "b", "content": b"lone \xed\xa0\x80", "text": "t2"},
        {"id": "c", "content": "x", "text": "t3"},
    ]
    # --column-map content=text: the mapped column wins, the shadowed one is dropped.
    assert [r["content"] for r in _table_rows(table, {"text": "content"})] == ["t1", "t2", "t3"]


@pytest.mark.slow
def test_bad_document_data_is_dead_lettered_not_fatal():
    deep = "[" * 3000 + "]" * 3000
    rows = [
        {"id": "deep", "content": "text", "content_format": "text", "metadata": '{"a": ' + deep + "}"},
        {"id": "big", "content": "text", "content_format": "text", "metadata": None, "blob": "x" * 70_000},
        {"id": "listfmt", "content": "text", "content_format": ["markdown"], "metadata": None},
        {"id": "ok", "content": "fine text", "content_format": "text", "metadata": None},
    ]
    p, chunks, dead = _run(rows, _spec())
    assert_that(chunks | "ids" >> beam.Map(lambda c: c["document_id"]), equal_to(["ok"]), label="chunks")
    assert_that(
        dead | beam.Map(lambda d: (d.document_id, d.reason)),
        equal_to(
            [("deep", "invalid_metadata"), ("big", "invalid_metadata"), ("listfmt", "unsupported_content_format")]
        ),
        label="dead",
    )
    p.run().wait_until_finish()


def test_page_number_that_does_not_fit_int32_dead_letters_the_document():
    from transforms.chunkers.text import RecursiveCharacterTextSplitter
    from transforms.documents import Document
    from transforms.outcomes import writable_row

    chunk = RecursiveCharacterTextSplitter().chunk(Document(id="d", content="x y"), tokenizer_identity="t")[0]
    from dataclasses import replace

    with pytest.raises(ValueError, match="page_no 4294967296 does not fit int32"):
        writable_row(replace(chunk, page_no=2**32))


def test_table_rows_read_dictionary_and_large_string_columns():
    import pyarrow as pa

    table = pa.table(
        {
            "id": pa.array(["a", "b"], pa.large_string()),
            "content": pa.array(["x", "y"]).dictionary_encode(),
            "n": [1, None],
        }
    )
    assert list(_table_rows(table, {})) == [{"id": "a", "content": "x", "n": 1}, {"id": "b", "content": "y", "n": None}]


def _raw_strings(items, arrow_type=None):
    import numpy as np
    import pyarrow as pa

    offsets = np.cumsum([0] + [len(b) for b in items]).astype(np.int32)
    return pa.Array.from_buffers(
        pa.string(), len(items), [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(items))]
    )


def test_column_values_never_fail_the_batch():
    import pyarrow as pa

    from transforms.columns import Unreadable, column_values

    # int64 max microseconds: the "infinity" timestamp of database exports, past year 9999.
    stamps = pa.chunked_array([pa.array([0, 2**63 - 1], pa.int64()).cast(pa.timestamp("us"))])
    values = column_values(stamps)
    assert values[0].year == 1970 and isinstance(values[1], Unreadable)
    bad = _raw_strings([b"ok", b"\xff"])
    assert column_values(pa.chunked_array([bad.dictionary_encode()])) == ["ok", b"\xff"]
    tags = pa.chunked_array([pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), bad)])
    assert column_values(tags)[0] == ["ok"] and isinstance(column_values(tags)[1], Unreadable)


@pytest.mark.parametrize(
    "row, reason, detail",
    [
        ({"id": "a\x001", "content": "x"}, "invalid_document_id", "NUL"),
        ({"id": "  ", "content": "x"}, "missing_document_id", "whitespace only"),
        ({"id": "d", "content": "x", "metadata": '{"t": "caf\\ud800"}'}, "invalid_metadata", "surrogate"),
        ({"id": "d", "content": "x", "metadata": '{"\\udc80": 1}'}, "invalid_metadata", "surrogate"),
        (
            {"id": "d", "content": "x", "stamp": "UNREADABLE"},
            "invalid_metadata",
            "column 'stamp': a value is unreadable",
        ),
    ],
)
def test_ids_and_metadata_that_would_break_the_output(row, reason, detail):
    from transforms.admission import row_to_document
    from transforms.columns import Unreadable

    row = {k: Unreadable("OverflowError: too big") if v == "UNREADABLE" else v for k, v in row.items()}
    rejected = row_to_document(row, {}, "tok")
    assert rejected.reason == reason
    assert detail in rejected.detail


def test_binary_extra_columns_are_kept_as_base64():
    from transforms.admission import row_to_document

    doc = row_to_document({"id": "d", "content": "x", "digest": b"\x00\xff", "name": b"plain"}, {}, "tok")
    assert doc.metadata == {"digest": "base64:AP8=", "name": "plain"}


def test_documents_between_admission_and_chunking_are_sized_without_pickling(monkeypatch):
    """Beam estimates the size of sampled elements with the edge's coder; the default one pickled
    a whole Document (for a 50 MB Markdown document, +48 MiB of RSS before chunking)."""
    import pickle

    from transforms.beam import DocumentCoder
    from transforms.documents import Document

    p = _pipeline()
    ident = p | "identity" >> beam.Create(["tok"])
    admitted = p | beam.Create([{"id": "a", "content": "x"}]) | AdmitDocuments(ident)
    coder = beam.coders.registry.get_coder(admitted.documents.element_type)  # the coder of the edge
    assert isinstance(coder, DocumentCoder)
    document = Document(id="d", content="é" * 1000 + "😀", content_format="markdown", metadata={"k": [1]})
    assert coder.decode(coder.encode(document)) == document

    def refuse(*args, **kwargs):
        raise AssertionError("the size estimate pickled the document")

    monkeypatch.setattr(pickle, "dumps", refuse)
    size, _ = coder.get_impl().get_estimated_size_and_observables(document)
    assert size == 1002
