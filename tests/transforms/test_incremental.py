"""Incremental re-chunking (``--previous``): the output equals a fresh run's, unchanged documents
are not chunked again, and ``deleted/`` lists exactly the previous chunk ids that are gone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.rechunk import main
from tests.conftest import read_output, recommit, write_documents
from transforms.documents import Document
from transforms.incremental import input_fingerprint, manifest_row, stale_chunk_ids, unchanged_key

MAX_TOKENS = ["--max-tokens", "48"]


def _paragraphs(topic: str, n: int) -> str:
    return "\n\n".join(
        f"Paragraph {i} about {topic}: the quick brown fox jumps over the lazy dog near the river bank."
        for i in range(n)
    )


V1: list[dict[str, Any]] = [
    {
        "id": "same",
        "content": f"# Same\n\n{_paragraphs('stability', 6)}",
        "content_format": "markdown",
        "metadata": {"source": "a"},
    },
    {
        "id": "edited",
        "content": f"# Edited\n\n{_paragraphs('editing', 6)}",
        "content_format": "markdown",
        "metadata": None,
    },
    {"id": "retagged", "content": _paragraphs("metadata", 3), "content_format": "text", "metadata": {"v": 1}},
    {"id": "reformatted", "content": "# Title\n\nSome text under a title.", "content_format": "text", "metadata": None},
    {"id": "removed", "content": _paragraphs("removal", 4), "content_format": "text", "metadata": None},
    {"id": "emptied", "content": _paragraphs("emptiness", 2), "content_format": "text", "metadata": None},
    {"id": "was-null", "content": None, "content_format": "text", "metadata": None},
]


def _v2() -> list[dict]:
    rows = {row["id"]: dict(row) for row in V1}
    # The last paragraph changes: the first chunks keep their ids, the last ones do not.
    rows["edited"]["content"] = rows["edited"]["content"].replace("Paragraph 5", "Final paragraph 5")
    rows["retagged"]["metadata"] = {"v": 2}
    rows["reformatted"]["content_format"] = "markdown"
    del rows["removed"]
    rows["emptied"]["content"] = "   \n"
    rows["was-null"]["content"] = "Now it has text."
    rows["new"] = {"id": "new", "content": _paragraphs("novelty", 2), "content_format": "text", "metadata": None}
    return list(rows.values())


def _rows(directory: Path, sub: str) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True) for row in read_output(directory, sub))


def _report(directory: Path) -> dict:
    return json.loads((directory / "report.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The previous run on V1, then on V2 a fresh run and an incremental one."""
    tmp = tmp_path_factory.mktemp("incremental")
    v1 = write_documents(tmp / "v1" / "docs.parquet", V1)
    v2 = write_documents(tmp / "v2" / "docs.parquet", _v2())
    opts = [*MAX_TOKENS, "--max-dead-letter-fraction", "1"]  # (bad rows on purpose: any share dead-lettered)
    assert main(["--input", str(v1), "--output", str(tmp / "previous"), *opts]) == 0
    assert main(["--input", str(v2), "--output", str(tmp / "fresh"), *opts]) == 0
    assert (
        main(["--input", str(v2), "--output", str(tmp / "incremental"), *opts, "--previous", str(tmp / "previous")])
        == 0
    )
    return tmp


@pytest.mark.slow
def test_output_equals_a_fresh_run_row_for_row(runs):
    for sub in ("chunks", "dead_letter", "documents"):
        assert _rows(runs / "incremental", sub) == _rows(runs / "fresh", sub), sub
    fresh, incremental = _report(runs / "fresh"), _report(runs / "incremental")
    for key in (
        "documents_read",
        "documents_chunked",
        "documents_dead_lettered",
        "chunks_written",
        "dead_letter_by_reason",
        "chunks_by_chunker",
        "token_count",
    ):
        assert incremental[key] == fresh[key], key


@pytest.mark.slow
def test_only_unchanged_documents_are_skipped(runs):
    report = _report(runs / "incremental")
    assert report["documents_skipped_unchanged"] == 1  # "same"; every other one changed somehow
    assert report["incremental"] == {
        "previous": str(runs / "previous"),
        "documents_new": 2,  # "new", and "was-null" (dead-lettered before, so not in the manifest)
        "documents_changed": 3,  # edited content, metadata, content format
        "documents_deleted": 2,  # "removed" is gone, "emptied" is now dead-lettered
        "chunks_deleted": report["incremental"]["chunks_deleted"],
    }
    assert _report(runs / "fresh")["documents_skipped_unchanged"] == 0
    assert _report(runs / "fresh")["incremental"] is None


@pytest.mark.slow
def test_deleted_lists_exactly_the_previous_chunk_ids_that_are_gone(runs):
    previous = read_output(runs / "previous", "chunks")
    current = {row["chunk_id"] for row in read_output(runs / "incremental", "chunks")}
    expected = {}
    for row in sorted(previous, key=lambda r: (r["document_id"], r["chunk_index"])):
        if row["chunk_id"] not in current:
            expected.setdefault(row["document_id"], []).append(row["chunk_id"])
    deleted = {row["document_id"]: row for row in read_output(runs / "incremental", "deleted")}
    assert {k: v["chunk_ids"] for k, v in deleted.items()} == expected
    assert {k for k, v in deleted.items() if v["document_removed"]} == {"removed", "emptied"}
    # The edit touched only the end of "edited": its first chunk keeps its id, so is not deleted.
    edited_previous = [r["chunk_id"] for r in previous if r["document_id"] == "edited"]
    assert 0 < len(deleted["edited"]["chunk_ids"]) < len(edited_previous)
    assert _report(runs / "incremental")["incremental"]["chunks_deleted"] == sum(map(len, expected.values()))


@pytest.mark.slow
def test_unchanged_documents_are_copied_not_chunked_again(tmp_path):
    """Mark the previous run's chunks (in ``metadata``, which neither their ids nor their keys
    cover): a copied chunk keeps the mark, a chunked one has none."""
    v1 = write_documents(tmp_path / "docs.parquet", V1[:2])
    assert main(["--input", str(v1), "--output", str(tmp_path / "previous"), *MAX_TOKENS]) == 0
    files = sorted((tmp_path / "previous" / "chunks").glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(f) for f in files])
    for f in files:
        f.unlink()
    metadata = [
        json.dumps({**json.loads(m), "marked": True}, sort_keys=True) if d == "same" else m
        for m, d in zip(table.column("metadata").to_pylist(), table.column("document_id").to_pylist())
    ]
    table = table.set_column(table.schema.get_field_index("metadata"), "metadata", pa.array(metadata, pa.string()))
    pq.write_table(table, files[0])
    recommit(tmp_path / "previous")
    assert (
        main(
            [
                "--input",
                str(v1),
                "--output",
                str(tmp_path / "next"),
                *MAX_TOKENS,
                "--previous",
                str(tmp_path / "previous"),
            ]
        )
        == 0
    )
    rows = read_output(tmp_path / "next", "chunks")
    assert {r["document_id"] for r in rows} == {"same", "edited"}
    assert all(("marked" in json.loads(r["metadata"])) == (r["document_id"] == "same") for r in rows)


@pytest.mark.slow
def test_another_budget_rechunks_everything(runs, tmp_path):
    v2 = write_documents(tmp_path / "docs.parquet", _v2())
    assert (
        main(
            [
                "--input",
                str(v2),
                "--output",
                str(tmp_path / "out"),
                "--max-tokens",
                "64",
                "--previous",
                str(runs / "previous"),
                "--max-dead-letter-fraction",
                "1",
            ]
        )
        == 0
    )
    assert _report(tmp_path / "out")["documents_skipped_unchanged"] == 0


def test_fingerprint_covers_every_input_of_the_chunks():
    document = Document(id="d", content="text", content_format="text", metadata={"a": 1})
    base = dict(chunker_config_hash="c1", tokenizer="t1", max_tokens=512)
    reference = input_fingerprint(document, **base)
    assert input_fingerprint(Document(id="other", content="changed", metadata={"a": 1}), **base) == reference
    variants = [
        input_fingerprint(Document(id="d", content="text", content_format="markdown", metadata={"a": 1}), **base),
        input_fingerprint(Document(id="d", content="text", metadata={"a": 2}), **base),
        input_fingerprint(document, **{**base, "chunker_config_hash": "c2"}),
        input_fingerprint(document, **{**base, "tokenizer": "t2"}),
        input_fingerprint(document, **{**base, "max_tokens": 256}),
    ]
    assert len({reference, *variants}) == 6
    row = manifest_row(document, chunker="X", chunk_count=3, **base)
    changed = manifest_row(Document(id="d", content="text!", metadata={"a": 1}), chunker="X", chunk_count=3, **base)
    assert unchanged_key(row) == unchanged_key(dict(row)) and unchanged_key(row) != unchanged_key(changed)


@settings(max_examples=200, deadline=None)
@given(
    content_format=st.text(),
    metadata=st.dictionaries(st.text(max_size=5), st.one_of(st.text(), st.integers(), st.none()), max_size=3),
    config_hash=st.text(),
    tokenizer=st.text(),
    max_tokens=st.integers(1, 10**6),
    libraries=st.lists(st.sampled_from(["torch", "not-installed-x", "tiktoken"]), max_size=2),
)
def test_fingerprint_is_the_sha256_of_its_parts_json(
    content_format, metadata, config_hash, tokenizer, max_tokens, libraries
):
    """The definition, spelled out: sha256 of the JSON list of the parts (non-ASCII as it is)."""
    import hashlib

    import transforms
    from transforms.documents import dumps_metadata
    from transforms.incremental import CHUNKING_LIBRARIES, _library_versions

    document = Document(id="d", content="text", content_format=content_format, metadata=metadata)
    parts = [
        "rechunk-input/2",
        transforms.__version__,
        *_library_versions(CHUNKING_LIBRARIES + tuple(libraries)),
        content_format,
        dumps_metadata(metadata),
        config_hash,
        tokenizer,
        str(max_tokens),
    ]
    try:
        expected = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()
    except UnicodeEncodeError:  # a lone surrogate: neither can encode it
        with pytest.raises(UnicodeEncodeError):
            input_fingerprint(
                document,
                chunker_config_hash=config_hash,
                tokenizer=tokenizer,
                max_tokens=max_tokens,
                libraries=libraries,
            )
        return
    got = input_fingerprint(
        document, chunker_config_hash=config_hash, tokenizer=tokenizer, max_tokens=max_tokens, libraries=libraries
    )
    assert got == expected


def test_fingerprint_covers_the_chunking_libraries_versions(monkeypatch):
    """A core library's version is in every fingerprint, so after an upgrade --previous keeps no
    chunk a fresh run may cut otherwise; a model library's version is only in those of the
    documents routed to a chunker that names it, so installing the ``semantic`` extra does not
    re-chunk a corpus routed to the structure chunker."""
    import importlib.metadata

    import transforms.incremental as incremental
    from transforms.chunkers.semantic import EmbeddingSemanticChunker, LangchainSemanticChunker, SemanticChunker
    from transforms.chunkers.structure import StructureAwareChunker
    from transforms.chunkers.text import RecursiveCharacterTextSplitter

    model = ("langchain-experimental", "sentence-transformers", "torch")
    for chunker in (EmbeddingSemanticChunker, LangchainSemanticChunker, SemanticChunker):
        assert set(model) <= set(chunker.fingerprint_libraries), chunker
    assert StructureAwareChunker.fingerprint_libraries == RecursiveCharacterTextSplitter.fingerprint_libraries == ()
    assert not set(model) & set(incremental.CHUNKING_LIBRARIES)

    document = Document(id="d", content="text")
    base = dict(chunker_config_hash="c1", tokenizer="t1", max_tokens=512)
    before = (input_fingerprint(document, **base), input_fingerprint(document, **base, libraries=model))
    real = importlib.metadata.version

    def installed(changed: str):
        def version(name):
            return "9.9" if name == changed else real(name)

        return version

    monkeypatch.setattr(importlib.metadata, "version", installed("torch"))
    incremental._library_versions.cache_clear()
    plain, semantic = input_fingerprint(document, **base), input_fingerprint(document, **base, libraries=model)
    assert plain == before[0] and semantic != before[1]
    monkeypatch.setattr(importlib.metadata, "version", installed("markdown-it-pyrs"))
    incremental._library_versions.cache_clear()
    assert input_fingerprint(document, **base) != before[0]
    incremental._library_versions.cache_clear()


def test_kept_chunks_are_the_kept_documents_rows_in_order_and_the_rest_are_listed():
    """Rows of kept and other documents interleaved in one previous table: the kept table holds
    exactly the kept documents' rows, every column, in their order; the others' ids go on."""
    from apache_beam.pvalue import TaggedOutput

    from transforms.beam import PREVIOUS_IDS
    from transforms.beam.incremental import _FOUND_VALUE, _kept_rows_found, split_kept
    from transforms.documents import CHUNK_SCHEMA, chunk_id, chunk_key
    from transforms.integrity import digest_key, index_set_digest

    order = ["a", "a", "b", "a", "c", "c", "b", "d"]
    rows = []
    for position, document_id in enumerate(order):
        row = {field.name: None for field in CHUNK_SCHEMA}
        row.update(
            chunk_id=chunk_id(document_id, position, f"text {position}"),
            document_id=document_id,
            chunk_index=position,
            text=f"text {position}",
            embedding_text=f"text {position}",
            headings=[document_id],
            document_hash="0" * 64,
            chunker="structure",
            chunk_key=chunk_key(document_id, f"text {position}"),
        )
        rows.append(row)
    table = pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA)
    outputs = list(split_kept(table, {i: digest_key("0" * 64) for i in ("a", "c", "unknown")}))
    kept = [o for o in outputs if isinstance(o, pa.Table)]
    others = [o.value for o in outputs if isinstance(o, TaggedOutput) and o.tag == PREVIOUS_IDS]
    assert len(kept) == 1 and kept[0].schema == CHUNK_SCHEMA
    assert kept[0].to_pylist() == [r for r in rows if r["document_id"] in ("a", "c")]
    assert others == [(d, (i, chunk_id(d, i, f"text {i}"))) for d, i in (("b", 2), ("b", 6), ("d", 7))]
    # per kept document: its rows in this table, counted, and the digest of their indexes
    assert [(i, _FOUND_VALUE.unpack(found)) for i, found in _kept_rows_found(kept[0])] == [
        ("a", (3, index_set_digest([0, 1, 3]))),
        ("c", (2, index_set_digest([4, 5]))),
    ]
    # Nothing kept: ids only.
    assert all(isinstance(o, TaggedOutput) and o.tag == PREVIOUS_IDS for o in split_kept(table, {}))
    everything = {i: digest_key("0" * 64) for i in "abcd"}
    assert [o.num_rows for o in split_kept(table, everything) if isinstance(o, pa.Table)] == [8]


def test_stale_chunk_ids_keep_the_previous_order():
    assert stale_chunk_ids([(2, "c"), (0, "a"), (1, "b")], ["b"]) == ["a", "c"]
    assert stale_chunk_ids([(0, "a")], ["a"]) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "nowhere", "not a finished run: no _SUCCESS there"),
        (lambda tmp: tmp / "out", "must be another directory than --output"),
        (lambda tmp: tmp / "run*", "a directory, not a pattern"),
        (lambda tmp: "", "--previous: empty path"),
        (lambda tmp: "gcs://bucket/run", "--previous gcs://bucket/run: no Beam filesystem for this path"),
        (lambda tmp: _only_chunks(tmp), "no documents/*.parquet there"),
        (lambda tmp: _not_parquet(tmp), "is not a readable Parquet file"),
        (lambda tmp: _stray_file(tmp), "zz-notes.parquet is not a readable Parquet file"),
        (lambda tmp: _lost_shard(tmp), "chunks/ holds 0 rows but report.json says 2 were written"),
        (lambda tmp: _wrong_type(tmp), "column 'chunk_count' is string, not int32"),
        (lambda tmp: _count_as_text(tmp), "report.json's chunks_written is '1', not a count; the output was changed"),
    ],
)
def test_previous_mistakes_are_option_errors(capsys, tmp_path, make, message):
    docs = write_documents(tmp_path / "in" / "docs.parquet", V1[:1])
    assert main(["--input", str(docs), "--output", str(tmp_path / "out"), "--previous", str(make(tmp_path))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rechunk: error: --previous") and message in err[0], err


def _only_chunks(tmp: Path) -> Path:
    previous = _previous_run(tmp)
    for f in (previous / "documents").glob("*"):
        f.unlink()
    return recommit(previous)


def _not_parquet(tmp: Path) -> Path:
    previous = _previous_run(tmp)
    for f in (previous / "documents").glob("*.parquet"):
        f.write_text("not parquet")
    return recommit(previous)


def _previous_run(tmp: Path) -> Path:
    docs = write_documents(tmp / "v1" / "docs.parquet", V1[:1])
    assert main(["--input", str(docs), "--output", str(tmp / "prev")]) == 0
    return tmp / "prev"


def _stray_file(tmp: Path) -> Path:
    previous = _previous_run(tmp)
    (previous / "chunks" / "zz-notes.parquet").write_text("junk")
    return recommit(previous)


def _lost_shard(tmp: Path) -> Path:
    previous = _previous_run(tmp)
    report = json.loads((previous / "report.json").read_text())
    (previous / "report.json").write_text(json.dumps({**report, "chunks_written": 2}))
    for f in (previous / "chunks").glob("*.parquet"):
        pq.write_table(pq.read_table(f).slice(0, 0), f)
    return recommit(previous)


def _wrong_type(tmp: Path) -> Path:
    previous = _previous_run(tmp)
    for f in (previous / "documents").glob("*.parquet"):
        table = pq.read_table(f)
        i = table.schema.get_field_index("chunk_count")
        pq.write_table(table.set_column(i, "chunk_count", table.column(i).cast(pa.string())), f)
    return recommit(previous)


def _count_as_text(tmp: Path) -> Path:
    """``"chunks_written": "1"`` is not a count: no "chunks/ holds 1 rows but report.json says 1"."""
    previous = _previous_run(tmp)
    report = json.loads((previous / "report.json").read_text())
    (previous / "report.json").write_text(json.dumps({**report, "chunks_written": str(report["chunks_written"])}))
    return recommit(previous)


@pytest.mark.slow
def test_every_file_the_check_counts_is_read(tmp_path):
    """The job reads every file in chunks/ that the check counts: a shard renamed ``.parquet.old``
    is read too (its document not lost), and the output equals a fresh run."""
    docs = [dict(row, metadata=None) for row in V1[:3]]
    source = write_documents(tmp_path / "in" / "docs.parquet", docs)
    previous = tmp_path / "previous"
    assert main(["--input", str(source), "--output", str(previous), *MAX_TOKENS]) == 0
    (shard,) = (previous / "chunks").glob("*.parquet")
    table = pq.read_table(shard)
    last = table.column("document_id")[table.num_rows - 1].as_py()
    mask = pa.array([i == last for i in table.column("document_id").to_pylist()])
    pq.write_table(table.filter(pa.compute.invert(mask)), shard)
    pq.write_table(table.filter(mask), previous / "chunks" / "part-1.parquet.old")
    recommit(previous)
    assert main(["--input", str(source), "--output", str(tmp_path / "fresh"), *MAX_TOKENS]) == 0
    assert (
        main(["--input", str(source), "--output", str(tmp_path / "next"), *MAX_TOKENS, "--previous", str(previous)])
        == 0
    )
    assert _report(tmp_path / "next")["documents_skipped_unchanged"] == 3
    assert _rows(tmp_path / "next", "chunks") == _rows(tmp_path / "fresh", "chunks")
    assert _rows(tmp_path / "next", "deleted") == []


@pytest.mark.slow
def test_hidden_files_and_markers_in_previous_folders_are_skipped(tmp_path):
    """A ``_SUCCESS`` or ``.DS_Store`` in the previous output's ``chunks/`` or ``documents/`` (a
    copy by a Hadoop tool, a look in macOS's Finder) is skipped by the check and the job alike:
    no option error, and nothing is lost."""
    source = write_documents(tmp_path / "in" / "docs.parquet", V1[:3])
    previous = tmp_path / "previous"
    assert main(["--input", str(source), "--output", str(previous), *MAX_TOKENS]) == 0
    for sub in ("chunks", "documents"):
        (previous / sub / "_SUCCESS").write_bytes(b"")
        (previous / sub / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    assert main(["--input", str(source), "--output", str(tmp_path / "fresh"), *MAX_TOKENS]) == 0
    assert (
        main(["--input", str(source), "--output", str(tmp_path / "next"), *MAX_TOKENS, "--previous", str(previous)])
        == 0
    )
    assert _report(tmp_path / "next")["documents_skipped_unchanged"] == 3
    for sub in ("chunks", "documents", "dead_letter"):
        assert _rows(tmp_path / "next", sub) == _rows(tmp_path / "fresh", sub)


@pytest.mark.slow
def test_a_previous_folder_of_skipped_names_only_says_they_are_skipped(tmp_path, capsys):
    """documents/ holding only "_documents-...parquet": the message gives the rule that skipped it,
    not "no documents/*.parquet there" beside that very file."""
    source = write_documents(tmp_path / "in" / "docs.parquet", V1[:3])
    previous = tmp_path / "previous"
    assert main(["--input", str(source), "--output", str(previous), *MAX_TOKENS]) == 0
    shard = next((previous / "documents").glob("*.parquet"))
    shard.rename(shard.with_name("_" + shard.name))
    recommit(previous)
    capsys.readouterr()
    assert main(["--input", str(source), "--output", str(tmp_path / "next"), "--previous", str(previous)]) == 2
    assert "no documents/*.parquet there (names starting with . or _ are skipped)" in capsys.readouterr().err


@pytest.mark.slow
def test_a_manifest_row_with_a_null_field_rechunks_its_document(tmp_path):
    """A null ``chunk_count`` in documents/, or a count out of range, keeps nothing: its document
    is chunked afresh (no traceback)."""
    source = write_documents(tmp_path / "in" / "docs.parquet", V1[:3])
    previous = tmp_path / "previous"
    assert main(["--input", str(source), "--output", str(previous), *MAX_TOKENS]) == 0
    (manifest,) = (previous / "documents").glob("*.parquet")
    rows = pq.read_table(manifest).to_pylist()
    rows[0]["chunk_count"], rows[1]["input_fingerprint"] = None, None
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(manifest)), manifest)
    recommit(previous)
    assert main(["--input", str(source), "--output", str(tmp_path / "fresh"), *MAX_TOKENS]) == 0
    assert (
        main(["--input", str(source), "--output", str(tmp_path / "next"), *MAX_TOKENS, "--previous", str(previous)])
        == 0
    )
    assert _report(tmp_path / "next")["documents_skipped_unchanged"] == 1
    for sub in ("chunks", "documents", "dead_letter"):
        assert _rows(tmp_path / "next", sub) == _rows(tmp_path / "fresh", sub)


@pytest.mark.slow
def test_a_previous_chunk_row_without_a_document_id_is_left_out(tmp_path):
    """A null ``document_id`` in a previous chunks/ row: no document owns such a row, so it is left
    out (no AttributeError in the kept-chunks step), and the output equals a fresh run."""
    source = write_documents(tmp_path / "in" / "docs.parquet", V1[:3])
    previous = tmp_path / "previous"
    assert main(["--input", str(source), "--output", str(previous), *MAX_TOKENS]) == 0
    (shard,) = (previous / "chunks").glob("*.parquet")
    table = pq.read_table(shard)
    stray = table.slice(0, 1).set_column(
        table.schema.get_field_index("document_id"), "document_id", pa.array([None], pa.string())
    )
    pq.write_table(pa.concat_tables([table, stray]), shard)
    report = _report(previous)
    (previous / "report.json").write_text(json.dumps({**report, "chunks_written": table.num_rows + 1}))
    recommit(previous)
    assert main(["--input", str(source), "--output", str(tmp_path / "fresh"), *MAX_TOKENS]) == 0
    assert (
        main(["--input", str(source), "--output", str(tmp_path / "next"), *MAX_TOKENS, "--previous", str(previous)])
        == 0
    )
    for sub in ("chunks", "documents", "dead_letter", "deleted"):
        assert _rows(tmp_path / "next", sub) == (_rows(tmp_path / "fresh", sub) if sub != "deleted" else [])


@pytest.mark.slow
def test_output_inside_previous_is_an_option_error(capsys, tmp_path):
    previous = _previous_run(tmp_path)
    docs = write_documents(tmp_path / "in" / "docs.parquet", V1[:1])
    assert main(["--input", str(docs), "--output", str(previous / "chunks" / "next"), "--previous", str(previous)]) == 2
    assert "must not be inside --previous" in capsys.readouterr().err


def test_arrow_tables_are_coded_as_ipc_and_their_size_is_estimated_without_encoding(monkeypatch):
    """Beam samples element sizes on every edge: for tables that must not encode (pickle) them."""
    import apache_beam as beam

    from transforms.beam import ArrowTableCoder
    from transforms.documents import CHUNK_SCHEMA

    row = {field.name: None for field in CHUNK_SCHEMA}
    row.update(chunk_id="c", document_id="d", chunk_index=0, text="t" * 1000, embedding_text="é" * 500, headings=["h"])
    table = pa.Table.from_pylist([row, {**row, "chunk_index": 1}], schema=CHUNK_SCHEMA)
    coder = beam.coders.registry.get_coder(pa.Table)
    assert isinstance(coder, ArrowTableCoder)
    decoded = coder.decode(coder.encode(table))
    assert decoded.schema == CHUNK_SCHEMA and decoded.equals(table)
    monkeypatch.setattr(ArrowTableCoder, "encode", lambda self, value: pytest.fail("encoded to estimate"))
    impl = coder.get_impl()
    assert impl.estimate_size(table) == table.nbytes > 3000
    assert impl.get_estimated_size_and_observables(table)[0] == table.nbytes


@pytest.mark.slow
def test_a_model_library_upgrade_keeps_the_structure_chunkers_documents(tmp_path, monkeypatch):
    """The job end to end: after torch's version changes (the ``semantic`` extra
    installed between two nights) every document routed to the default structure chunker is kept;
    after a parser's version changes, none is."""
    import importlib.metadata

    import transforms.incremental as incremental

    source = write_documents(tmp_path / "in" / "docs.parquet", V1[:3])
    previous = tmp_path / "previous"
    assert main(["--input", str(source), "--output", str(previous), *MAX_TOKENS]) == 0
    real = importlib.metadata.version
    for changed, kept in (("torch", 3), ("markdown-it-pyrs", 0)):
        monkeypatch.setattr(importlib.metadata, "version", lambda name, c=changed: "9.9" if name == c else real(name))
        incremental._library_versions.cache_clear()
        out = tmp_path / f"after-{changed}"
        assert main(["--input", str(source), "--output", str(out), *MAX_TOKENS, "--previous", str(previous)]) == 0
        assert _report(out)["documents_skipped_unchanged"] == kept, changed
    incremental._library_versions.cache_clear()


@pytest.mark.slow
def test_a_document_dead_lettered_in_both_runs_is_not_new(tmp_path):
    docs = [
        {"id": "ok", "content": _paragraphs("kept", 2), "content_format": "text", "metadata": None},
        {"id": "empty", "content": "   ", "content_format": "text", "metadata": None},
        {"id": "unknown-format", "content": "Text.", "content_format": "latex", "metadata": None},
    ]
    path = write_documents(tmp_path / "docs.parquet", docs)
    opts = [*MAX_TOKENS, "--max-dead-letter-fraction", "1"]
    assert main(["--input", str(path), "--output", str(tmp_path / "first"), *opts]) == 0
    argv = ["--input", str(path), "--output", str(tmp_path / "second"), *opts, "--previous", str(tmp_path / "first")]
    assert main(argv) == 0
    report = _report(tmp_path / "second")
    assert report["documents_dead_lettered"] == 2 and report["documents_skipped_unchanged"] == 1
    assert report["incremental"]["documents_new"] == 0


def test_each_row_is_read_with_the_manifest_entry_of_its_id_and_only_its_ranges_entries():
    """The join by id sends an id's entry to each range holding the id (none for an id the
    manifest lists with differing rows); the reader of a range gives each row its own id's entry."""
    from transforms.beam.incremental import _notes_by_range, _row_id

    assert list(_row_id((12, {"id": 7}))) == [("7", 12)]
    assert list(_row_id((12, {"id": None}))) == []
    one, other = 12, 13
    assert list(_notes_by_range(("a", {"ids": [one, one], "manifest": [(5, 2)]}))) == [(one, ("a", (5, 2)))]
    assert sorted(_notes_by_range(("a", {"ids": [one, other], "manifest": [(5, 2), (5, 2)]}))) == [
        (one, ("a", (5, 2))),
        (other, ("a", (5, 2))),
    ]
    assert list(_notes_by_range(("a", {"ids": [one], "manifest": [(5, 2), (6, 2)]}))) == []
    assert list(_notes_by_range(("a", {"ids": [one], "manifest": []}))) == []
    assert list(_notes_by_range(("a", {"ids": [], "manifest": [(5, 2)]}))) == []


def test_a_range_reader_gives_each_row_its_ids_note(tmp_path):
    from apache_beam.io.filesystems import FileSystems

    from transforms.beam.read import _ReadNotedRowGroupsDoFn, _RowGroupRangesDoFn, range_key

    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "content": ["x", "y", "z"]}), path)
    (listed,) = _RowGroupRangesDoFn().process(FileSystems.match([str(path)])[0].metadata_list[0])
    element = (range_key(listed), {"range": [listed], "notes": [("b", (9, 1))]})
    rows = list(_ReadNotedRowGroupsDoFn(None, {}).process(element))
    assert [(row["id"], note) for row, note in rows] == [("a", None), ("b", (9, 1)), ("c", None)]


def test_no_worker_holds_the_manifest_or_the_kept_ids_as_a_side_input(tmp_path):
    """With --previous, the only side inputs of the graph (its writers' aside) are the tokenizer
    identity (a singleton) and the duplicate ids (admission's count): the comparison is made by
    keyed joins."""
    import apache_beam as beam
    from apache_beam.pipeline import PipelineVisitor
    from apache_beam.pvalue import AsSingleton

    pipeline = _incremental_graph(tmp_path)
    found: list[tuple[str, str]] = []
    joins: list[str] = []

    class Visitor(PipelineVisitor):
        def visit_transform(self, node):
            for side in getattr(node.transform, "side_inputs", None) or ():
                kind = "singleton" if isinstance(side, AsSingleton) else type(side).__name__
                found.append((node.full_label, f"{kind} of {side.pvalue.producer.full_label}"))

        def enter_composite_transform(self, node):
            if isinstance(node.transform, beam.CoGroupByKey):
                joins.append(node.full_label)

    pipeline.visit(Visitor())
    # (Beam's file sinks pass their own results to their finalize step as side inputs.)
    found = [(label, side) for label, side in found if not label.startswith("Write ")]
    many = [(label, side) for label, side in found if not side.startswith("singleton")]
    assert [side for _, side in many] == ["AsDict of Admit documents/Duplicate ids"]
    assert {label.split("/")[0] for label, _ in found} == {
        "Admit documents",
        "Compare with previous",
        "Route, chunk and validate",
    }
    assert any("Join manifest by id" in label for label in joins)
    assert any("Join units with their kept ids" in label for label in joins)


def test_the_manifest_rows_reach_their_writers_without_a_flatten(tmp_path):
    """With --previous, the kept documents' manifest rows and the chunked ones' go to two writers:
    the graph's only Flattens of several inputs are the keyed joins' own (the FnApiRunner holds
    every such Flatten's elements, encoded, until its last input is done, then decodes them all
    again in a stage of their own)."""
    import apache_beam as beam
    from apache_beam.pipeline import PipelineVisitor

    pipeline = _incremental_graph(tmp_path)
    flattens: list[str] = []

    class Visitor(PipelineVisitor):
        def visit_transform(self, node):
            if isinstance(node.transform, beam.Flatten) and len(node.inputs) > 1:
                flattens.append(node.full_label)

    pipeline.visit(Visitor())
    assert flattens and all("/CoGroupByKeyImpl/" in label for label in flattens), flattens


@pytest.mark.slow
def test_the_kept_documents_manifest_rows_are_a_set_of_files_of_their_own(runs):
    """``documents/kept-*`` holds the manifest rows of the kept documents (here ``same`` alone),
    ``documents/documents-*`` those of the chunked ones (the folder read whole equals a fresh
    run's: ``test_output_equals_a_fresh_run_row_for_row``)."""
    folder = runs / "incremental" / "documents"
    assert sorted(p.name for p in folder.glob("*.parquet")) == [
        "documents-00000-of-00001.parquet",
        "kept-00000-of-00001.parquet",
    ]
    (kept,) = folder.glob("kept-*.parquet")
    assert pq.read_table(kept).column("document_id").to_pylist() == ["same"]
    (chunked,) = folder.glob("documents-*.parquet")
    assert "same" not in pq.read_table(chunked).column("document_id").to_pylist()


def _incremental_graph(tmp_path: Path):
    """The job's graph with ``--previous`` (built, not run), over V1 in ``tmp_path``."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.config import load_config, resolve_config
    from pipelines.rechunk import Job, build_pipeline
    from transforms.beam.chunk import shared_tokenizer

    docs = write_documents(tmp_path / "docs.parquet", V1)
    spec = resolve_config(load_config(None), tokenizer=None, max_tokens=None)
    job = Job(
        input=str(docs),
        output=str(tmp_path / "out"),
        spec=spec,
        tokenizer_identity=shared_tokenizer(spec["tokenizer"]).identity,
        column_map={},
        options=PipelineOptions(),
        previous=str(tmp_path / "previous"),
    )
    pipeline = beam.Pipeline(options=PipelineOptions())
    build_pipeline(pipeline, job)
    return pipeline


def test_a_manifest_entry_packs_into_20_bytes_and_back():
    from transforms.incremental import pack_entry, unpack_entry

    key = (1 << 127) + 5
    assert pack_entry(key, 7) == key.to_bytes(16, "big") + b"\x00\x00\x00\x07"
    assert unpack_entry(pack_entry(key, 7)) == (key, 7)
    assert unpack_entry(pack_entry(0, (1 << 32) - 1)) == (0, (1 << 32) - 1)
    with pytest.raises(OverflowError):
        pack_entry(1 << 128, 1)


def test_the_kept_count_join_adds_up_a_documents_rows_found_in_several_tables():
    """A kept document's rows counted in two tables (any order) pass as one whole; one row short,
    or an index repeated, stops the run."""
    from transforms.beam.incremental import _FOUND_VALUE, _KEPT_VALUE, _check_kept_counts
    from transforms.integrity import DamagedPreviousOutput, index_set_digest

    expected = [_KEPT_VALUE.pack(9, 3)]
    first, second = _FOUND_VALUE.pack(2, index_set_digest([0, 2])), _FOUND_VALUE.pack(1, index_set_digest([1]))
    for found in ([first, second], [second, first]):
        assert list(_check_kept_counts(("a", {"expected": expected, "found": found}))) == []
    with pytest.raises(DamagedPreviousOutput, match="1 chunk rows in chunks/, its manifest row says 3"):
        list(_check_kept_counts(("a", {"expected": expected, "found": [second]})))
    repeated = _FOUND_VALUE.pack(1, index_set_digest([0]))
    with pytest.raises(DamagedPreviousOutput, match="not chunks 0 to 2"):
        list(_check_kept_counts(("a", {"expected": expected, "found": [first, repeated]})))
    with pytest.raises(DamagedPreviousOutput, match="0 chunk rows"):
        list(_check_kept_counts(("a", {"expected": expected, "found": []})))
