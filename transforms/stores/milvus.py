"""A Milvus collection of chunks through pymilvus's `MilvusClient`: a Milvus server, or a Milvus Lite file.

A `uri` ending in `.db` (and without a scheme) is a Milvus Lite file: pymilvus starts Milvus Lite in
this process on a free local port, and the file (a folder, in Milvus Lite 3) is created with its
parent folder. Milvus Lite takes an exclusive lock on the file: one process at a time may open it.
Within one process every store object and client shares one Milvus Lite server; a second process
opening the same file gets `StoreError` ("open in another process"). The lock is released when the
last `MilvusStore` of the file in this process is closed (or when the process ends). So a Beam job
writing a Milvus Lite file must run its writes in the launching process (the DirectRunner's default
in-memory mode), not in worker processes.

The collection: `chunk_key` VARCHAR(64) primary key, `chunk_id`, `document_id`, `text`,
`embedding_text` and `fingerprint` VARCHAR (at most 65,535 bytes of UTF-8 each, Milvus's limit),
`metadata` JSON, `embedding` FLOAT_VECTOR(dimension) with an AUTOINDEX index on cosine distance;
consistency level Strong, so what is written is read back at once. The embedding model and dimension
are the collection properties `rechunk.model` and `rechunk.dimension`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pymilvus import DataType, MilvusClient
from pymilvus.exceptions import MilvusException

from transforms.stores import describe_spec, store_password
from transforms.stores.base import (
    HEX_DIGITS,
    StoreError,
    StoreRow,
    batches,
    check_vectors,
    is_rest_shard,
    mismatch_message,
    one_line,
    scrubbed,
    shard_prefix,
)
from transforms.stores.limits import MILVUS_VARCHAR_BYTES

MODEL_PROPERTY = "rechunk.model"
DIMENSION_PROPERTY = "rechunk.dimension"
VECTOR_FIELD = "embedding"
METRIC = "COSINE"
_VARCHAR_FIELDS = ("chunk_id", "document_id", "text", "embedding_text", "fingerprint")
_FIELD_TYPES = {
    "chunk_key": DataType.VARCHAR,
    "chunk_id": DataType.VARCHAR,
    "document_id": DataType.VARCHAR,
    "text": DataType.VARCHAR,
    "embedding_text": DataType.VARCHAR,
    "metadata": DataType.JSON,
    "fingerprint": DataType.VARCHAR,
    VECTOR_FIELD: DataType.FLOAT_VECTOR,
}
_PAGE = 1_000  # rows per query-iterator page and per get() call

# Milvus Lite files opened by MilvusStore objects of this process: absolute path -> open stores.
_LITE_OPEN: dict[str, int] = {}
_LITE_LOCK = threading.Lock()


class _DropMvccWarning(logging.Filter):
    """Drops pymilvus's warning that Milvus Lite has no server-side iterator timestamp (harmless there)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "failed to get mvccTs" not in record.getMessage()


class _DropUnimplementedCall(logging.Filter):
    """Drops Milvus Lite's in-process gRPC server's traceback for a call it does not implement
    (``AllocTimestamp``, which pymilvus's query iterator tries first and then does without)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Method not implemented" not in record.getMessage()


@contextlib.contextmanager
def _quiet_start() -> Iterator[None]:
    """Milvus Lite's own traceback of a server that fails to start (a file locked by another
    process) left out of the log: the failure is raised as one ``StoreError`` line instead."""
    logger = logging.getLogger("milvus_lite.server_manager")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def is_lite_uri(uri: str) -> bool:
    """True when `uri` names a Milvus Lite file (no scheme, ends in .db)."""
    return "://" not in uri and not uri.startswith("unix:") and uri.endswith(".db")


def client_uri(uri: str) -> str:
    """The uri to give MilvusClient: a Milvus Lite path made absolute (its parent folder created), else as given."""
    if not is_lite_uri(uri):
        return uri
    path = os.path.abspath(uri)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


class MilvusStore:
    """A Milvus collection of `StoreRow`s (see the module docstring for the columns and Milvus Lite's lock).

    Built from a checked spec (`check_store_spec`); connects at once. Raises StoreError when Milvus
    cannot be reached, the file is open in another process, or the token's variable is unset.
    """

    type = "milvus"

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.described = describe_spec(spec)
        self._collection = spec["collection"]
        self._batch_size = int(spec["batch_size"])
        self._token = store_password(spec)
        self._uri = client_uri(spec["uri"])
        self._lite_path = self._uri if is_lite_uri(spec["uri"]) else None
        self._dimension: int | None = None
        #: Rows per page read by stored() and vectors().
        self.page_size = _PAGE
        self._client: MilvusClient | None = None
        try:
            with _quiet_start():
                self._client = MilvusClient(uri=self._uri, token=self._token)
        except Exception as error:
            if self._lite_path and _locked_elsewhere(self._lite_path):
                raise StoreError(
                    f"{self.described}: open in another process (Milvus Lite allows one process per file)"
                ) from None
            raise self._error("connect", error) from None
        if self._lite_path:
            with _LITE_LOCK:
                _LITE_OPEN[self._lite_path] = _LITE_OPEN.get(self._lite_path, 0) + 1

    # -- the protocol ------------------------------------------------------------------------

    def prepare(self, *, dimension: int, model: str) -> None:
        """Create the collection if missing, recording `model` and `dimension`; check an existing one.

        Raises StoreError when the collection exists with another dimension or model (naming both),
        or without rechunk's fields or properties.
        """
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise StoreError(f"{self.described}: a dimension of at least 1, got {dimension!r}")
        client = self._open()
        try:
            if client.has_collection(self._collection):
                self._check_existing(client.describe_collection(self._collection), dimension, model)
                client.load_collection(self._collection)
            else:
                self._create(client, dimension, model)
        except MilvusException as error:
            raise self._error("prepare", error) from None
        self._dimension = dimension

    def claim_sync(self) -> str | None:
        """Claim nothing (return None): a Milvus Lite file is held by the one process that opened it
        (another process's sync is refused when it opens the file), and a Milvus server offers no
        lock, so one sync per collection at a time is the operator's to keep."""
        return None

    def write_for(self, claim: str | None) -> None:
        """Nothing to check: Milvus claims nothing."""

    def stored(self, shard: int, shards: int) -> Iterator[tuple[str, str]]:
        """Stream (chunk_key, fingerprint) of every row whose key starts with the shard's hex prefix
        (``shard == shards``: every row whose key starts with no lowercase hex digit).

        A query iterator pages through `chunk_key like "PREFIX%"` in pages of 1,000 rows.
        """
        if is_rest_shard(shard, shards):  # keys no hex prefix covers
            found = " or ".join(f'chunk_key like "{digit}%"' for digit in HEX_DIGITS)
            condition = f"not ({found})"
        else:
            condition = f'chunk_key like "{shard_prefix(shard, shards)}%"'
        client = self._open()
        try:
            iterator = client.query_iterator(
                self._collection,
                batch_size=self.page_size,
                filter=condition,
                output_fields=["chunk_key", "fingerprint"],
            )
        except MilvusException as error:
            raise self._error("read keys", error) from None
        try:
            while True:
                try:
                    page = iterator.next()
                except MilvusException as error:
                    raise self._error("read keys", error) from None
                if not page:
                    break
                for entity in page:
                    yield entity["chunk_key"], entity["fingerprint"]
        finally:
            iterator.close()

    def upsert(self, rows: Sequence[StoreRow]) -> None:
        """Insert or replace the rows, `batch_size` rows per call.

        Raises StoreError when a row has no vector or one of another dimension, or a text column is
        over 65,535 bytes of UTF-8 (Milvus's VARCHAR limit), or Milvus refuses the batch.
        """
        if not rows:
            return
        client = self._open()
        check_vectors(rows, self._known_dimension(), self.described)
        for batch in batches(rows, self._batch_size):
            data = [self._entity(row) for row in batch]
            try:
                client.upsert(self._collection, data)
            except MilvusException as error:
                raise self._error("upsert", error) from None

    def vectors(self, keys: Sequence[str]) -> dict[str, tuple[float, ...]]:
        """The stored vectors (float32 values as Python floats) of those keys that exist."""
        client = self._open()
        found: dict[str, tuple[float, ...]] = {}
        for batch in batches(list(keys), self.page_size):
            try:
                entities = client.get(self._collection, ids=list(batch), output_fields=["chunk_key", VECTOR_FIELD])
            except MilvusException as error:
                raise self._error("read vectors", error) from None
            for entity in entities:
                found[entity["chunk_key"]] = tuple(float(value) for value in entity[VECTOR_FIELD])
        return found

    def delete(self, keys: Sequence[str]) -> None:
        """Delete the rows with these keys, `batch_size` keys per call (keys not held are ignored)."""
        client = self._open()
        for batch in batches(list(keys), self._batch_size):
            try:
                client.delete(self._collection, ids=list(batch))
            except MilvusException as error:
                raise self._error("delete", error) from None

    def count(self) -> int:
        """Rows held now: a `count(*)` query (consistency level Strong)."""
        client = self._open()
        try:
            result = client.query(self._collection, filter="", output_fields=["count(*)"])
        except MilvusException as error:
            raise self._error("count", error) from None
        return int(result[0]["count(*)"])

    def search(self, vector: Sequence[float], limit: int) -> list[str]:
        """The chunk_keys of the `limit` rows nearest `vector` (cosine distance), nearest first."""
        client = self._open()
        try:
            hits = client.search(
                self._collection,
                data=[[float(value) for value in vector]],
                limit=limit,
                anns_field=VECTOR_FIELD,
                output_fields=["chunk_key"],
                search_params={"metric_type": METRIC},
            )
        except MilvusException as error:
            raise self._error("search", error) from None
        return [hit["chunk_key"] for hit in hits[0]]

    def close(self) -> None:
        """Close the client; the last store of a Milvus Lite file in this process releases the file's lock."""
        client, self._client = self._client, None
        if client is None:
            return
        with contextlib.suppress(Exception):
            client.close()
        if self._lite_path:
            with _LITE_LOCK:
                left = _LITE_OPEN.get(self._lite_path, 1) - 1
                if left > 0:
                    _LITE_OPEN[self._lite_path] = left
                    return
                _LITE_OPEN.pop(self._lite_path, None)
            from milvus_lite.server_manager import server_manager_instance

            release = getattr(server_manager_instance, "release_server", None)
            if release is not None:
                release(self._lite_path)

    # -- helpers -----------------------------------------------------------------------------

    def _open(self) -> MilvusClient:
        if self._client is None:
            raise StoreError(f"{self.described}: the store is closed")
        return self._client

    def _known_dimension(self) -> int:
        if self._dimension is None:
            client = self._open()
            try:
                if not client.has_collection(self._collection):
                    raise StoreError(f"{self.described}: no such collection (prepare it first)")
                described = client.describe_collection(self._collection)
            except MilvusException as error:
                raise self._error("describe", error) from None
            self._dimension = _recorded(described, self.described)[0]
        return self._dimension

    def _create(self, client: MilvusClient, dimension: int, model: str) -> None:
        schema = MilvusClient.create_schema(
            auto_id=False,
            enable_dynamic_field=False,
            description=f"rechunk chunks: embeddings of dimension {dimension} from {model}",
        )
        schema.add_field("chunk_key", DataType.VARCHAR, is_primary=True, max_length=64)
        for name in ("chunk_id", "document_id", "text", "embedding_text"):
            schema.add_field(name, DataType.VARCHAR, max_length=MILVUS_VARCHAR_BYTES)
        schema.add_field("metadata", DataType.JSON)
        schema.add_field("fingerprint", DataType.VARCHAR, max_length=MILVUS_VARCHAR_BYTES)
        schema.add_field(VECTOR_FIELD, DataType.FLOAT_VECTOR, dim=dimension)
        index = client.prepare_index_params()
        index.add_index(field_name=VECTOR_FIELD, index_type="AUTOINDEX", metric_type=METRIC)
        client.create_collection(
            self._collection,
            schema=schema,
            index_params=index,
            consistency_level="Strong",
            properties={MODEL_PROPERTY: model, DIMENSION_PROPERTY: str(dimension)},
        )
        client.load_collection(self._collection)

    def _check_existing(self, described: dict, dimension: int, model: str) -> None:
        fields = {field["name"]: field for field in described.get("fields", [])}
        missing = [name for name in _FIELD_TYPES if name not in fields]
        wrong = [name for name, kind in _FIELD_TYPES.items() if name in fields and fields[name].get("type") != kind]
        if missing or wrong or not fields["chunk_key"].get("is_primary"):
            problem = (
                f"lacks {', '.join(missing)}" if missing else f"has other types for {', '.join(wrong) or 'chunk_key'}"
            )
            raise StoreError(f"{self.described}: exists without rechunk's fields ({problem}): name another collection")
        stored = _recorded(described, self.described)
        if stored != (dimension, model):
            raise StoreError(mismatch_message(self.described, stored, (dimension, model)))

    def _entity(self, row: StoreRow) -> dict[str, Any]:
        for name in _VARCHAR_FIELDS:
            value = getattr(row, name)
            if len(value) * 4 > MILVUS_VARCHAR_BYTES and len(value.encode("utf-8")) > MILVUS_VARCHAR_BYTES:
                raise StoreError(
                    f"{self.described}: chunk {row.chunk_key}: {name} is over {MILVUS_VARCHAR_BYTES:,} bytes, Milvus's VARCHAR limit"
                )
        try:
            metadata = json.loads(row.metadata)
        except ValueError:
            metadata = None
        if not isinstance(metadata, dict):
            raise StoreError(f"{self.described}: chunk {row.chunk_key}: metadata is not a JSON object")
        return {
            "chunk_key": row.chunk_key,
            "chunk_id": row.chunk_id,
            "document_id": row.document_id,
            "text": row.text,
            "embedding_text": row.embedding_text,
            "metadata": metadata,
            "fingerprint": row.fingerprint,
            VECTOR_FIELD: [float(value) for value in row.vector or ()],
        }

    def _error(self, operation: str, error: BaseException) -> StoreError:
        text = scrubbed(str(getattr(error, "message", "") or error), [self._token])
        return StoreError(f"{self.described}: {operation} failed: {one_line(text, 300)}", transient=_transient(error))


def _recorded(described: dict, shown: str) -> tuple[int, str]:
    """The (dimension, model) a collection records; StoreError when it records none."""
    properties = described.get("properties") or {}
    model = properties.get(MODEL_PROPERTY)
    dimension = properties.get(DIMENSION_PROPERTY)
    if model is None or dimension is None or not str(dimension).isdigit():
        raise StoreError(f"{shown}: exists without rechunk's model and dimension properties: name another collection")
    return int(dimension), str(model)


def _transient(error: BaseException) -> bool:
    """True for errors a retry may clear: the server unavailable, a deadline passed, a connection lost."""
    from pymilvus.exceptions import MilvusUnavailableException

    if isinstance(error, MilvusUnavailableException):
        return True
    text = str(error).upper()
    return any(word in text for word in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "CONNECTION", "TIMEOUT"))


def _locked_elsewhere(path: str) -> bool:
    """True when another process holds the Milvus Lite lock of `path` (its LOCK file, flock)."""
    lock = os.path.join(path, "LOCK")
    if not os.path.exists(lock):
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        return error.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


logging.getLogger("pymilvus.client.iterator.query_iterator").addFilter(_DropMvccWarning())
logging.getLogger("grpc._server").addFilter(_DropUnimplementedCall())
