"""The contract's promises on real documents: docs_small.parquet plus one DoclingDocument.

Run twice in-process (``in_memory``) and once with two worker processes (``multi_processing``):
every accepted chunk is within budget by an independent recount, every verbatim chunk slices its
source exactly, every document is accounted for, and chunk ids are identical across runs and
running modes.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pipelines.rechunk import main
from tests.conftest import REPO, read_output, write_documents
from transforms.documents import chunk_id, document_hash
from transforms.structure.packing import build_embedding_text

MAX_TOKENS = 512


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data):
    """docs_small.parquet plus the sample's DoclingDocument, as one input file."""
    rows = pq.read_table(shared_data("corpus/docs_small.parquet")).to_pylist()
    rows += [r for r in pq.read_table(REPO / "sample" / "docs.parquet").to_pylist() if r["content_format"] == "docling"]
    path = write_documents(tmp_path_factory.mktemp("in") / "docs.parquet", rows)
    return path, {r["id"]: r for r in rows}


def _run(tmp_path_factory, input_path, *beam_args):
    out = tmp_path_factory.mktemp("out")
    assert main(["--input", str(input_path), "--output", str(out), *beam_args]) == 0
    return out


@pytest.fixture(scope="module")
def runs(corpus, tmp_path_factory):
    path, _ = corpus
    return {
        "in_memory": _run(tmp_path_factory, path, "--direct_running_mode=in_memory"),
        "in_memory_again": _run(tmp_path_factory, path, "--direct_running_mode=in_memory"),
        "multi_processing": _run(
            tmp_path_factory, path, "--direct_running_mode=multi_processing", "--direct_num_workers=2"
        ),
    }


@pytest.mark.slow
def test_every_chunk_within_budget_by_independent_recount(runs, recount):
    chunks = read_output(runs["in_memory"], "chunks")
    assert chunks
    for c in chunks:
        n = recount(c["embedding_text"])
        assert n <= MAX_TOKENS, (c["chunk_id"], n)
        assert n == c["token_count"]
        assert c["tokenizer"] == "tiktoken:cl100k_base:223921b7"


@pytest.mark.slow
def test_verbatim_chunks_slice_their_source(runs, corpus):
    _, docs = corpus
    verbatim = 0
    for c in read_output(runs["in_memory"], "chunks"):
        doc = docs[c["document_id"]]
        assert c["document_hash"] == document_hash(doc["content"])
        assert c["chunk_id"] == chunk_id(c["document_id"], c["chunk_index"], c["text"])
        assert c["text"].strip()
        metadata = json.loads(c["metadata"])
        assert c["chunker"] == "StructureAwareChunker"  # the default route, DoclingDocuments included
        if doc["content_format"] == "docling":
            # Cut from the DoclingDocument's Markdown rendering: no source offsets.
            assert c["start_offset"] is None and c["end_offset"] is None
            assert c["content_format"] == "markdown"
            continue
        assert c["embedding_text"] == build_embedding_text(c["text"], metadata)
        assert c["embedding_text"].endswith(c["text"])
        if doc["content_format"] == "html":
            # Cut from the Markdown rendering of the page: no source offsets.
            assert c["start_offset"] is None and c["content_format"] == "markdown"
        elif c["start_offset"] is not None:
            assert doc["content"][c["start_offset"] : c["end_offset"]] == c["text"]
            verbatim += 1
        else:
            # A repeated table header, code fence or rST directive line: the text is its spans, in order.
            spans = metadata["structure"]["spans"]
            assert len(spans) == 2 and metadata["structure"]["context"] in ("table_header", "code_fence", "directive")
            assert "".join(doc["content"][s:e] for s, e in spans) == c["text"]
        assert json.loads(c["metadata"])["collection"] == json.loads(doc["metadata"])["collection"]
    assert verbatim > 1000


@pytest.mark.slow
def test_every_document_accounted_for_and_indices_dense(runs, corpus):
    _, docs = corpus
    out = runs["in_memory"]
    chunks = read_output(out, "chunks")
    dead = read_output(out, "dead_letter")
    chunked = {c["document_id"] for c in chunks}
    dead_ids = {d["document_id"] for d in dead}
    assert set(docs) == chunked | dead_ids
    assert "docling/word_sample.docx.json" in chunked
    by_doc: dict[str, list[int]] = {}
    for c in chunks:
        by_doc.setdefault(c["document_id"], []).append(c["chunk_index"])
    rejected_chunks = {d["document_id"] for d in dead if d["chunk_id"]}
    for doc_id, indices in by_doc.items():
        if doc_id not in rejected_chunks:
            assert sorted(indices) == list(range(len(indices))), doc_id
    report = json.loads((out / "report.json").read_text())
    assert report["documents_read"] == len(docs)
    assert report["chunks_written"] == len(chunks)
    assert report["dead_letter_rows"] == len(dead)
    assert report["documents_chunked"] + report["documents_dead_lettered"] == len(docs)
    assert sum(report["chunks_by_chunker"].values()) == len(chunks)


@pytest.mark.slow
def test_chunk_ids_identical_across_runs_and_running_modes(runs):
    def rows(out):
        return sorted(
            (c["chunk_id"], c["document_id"], c["chunk_index"], c["token_count"], c["chunker_config_hash"])
            for c in read_output(out, "chunks")
        )

    first = rows(runs["in_memory"])
    assert first == rows(runs["in_memory_again"])
    assert first == rows(runs["multi_processing"])
    dead = [
        sorted((d["document_id"], d["reason"], d["chunk_id"] or "") for d in read_output(out, "dead_letter"))
        for out in runs.values()
    ]
    assert dead[0] == dead[1] == dead[2]
