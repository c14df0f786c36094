"""A PostgreSQL table of chunks with the pgvector extension, through psycopg 3.

One connection per store object (autocommit, `idle_session_timeout` off for the session; every
write batch is its own transaction, so a batch that fails leaves none of its rows written). A
sync claims its table with a session-level advisory lock on that connection (`claim_sync`), so a
second sync of the same table is refused while the first runs, and the lock goes with the
connection however the first ends; the sync's writers (`write_for`) write only while that claim
holds. The table:

    chunk_key text COLLATE "C" PRIMARY KEY, chunk_id text, document_id text, text text,
    embedding_text text, metadata jsonb, fingerprint text, embedding vector(DIMENSION)

all NOT NULL, with an HNSW index on cosine distance (`vector_cosine_ops`) when the dimension is at
most 2,000 (pgvector's limit for indexing `vector`; above it search is exact). The embedding model
and dimension are recorded in the table's comment as JSON: {"rechunk": {"model": ..., "dimension": ...}}.
`prepare` runs `CREATE EXTENSION IF NOT EXISTS vector` (the role needs the right to, or the extension
installed by an administrator first). Keys are in the "C" collation so a shard's prefix is a key range.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql

from transforms.stores import describe_spec, store_password
from transforms.stores.base import (
    StoreError,
    StoreRow,
    batches,
    check_vectors,
    is_rest_shard,
    mismatch_message,
    one_line,
    scrubbed,
    shard_prefix,
    uri_secrets,
)
from transforms.stores.limits import store_limit_problem

HNSW_MAX_DIMENSION = 2_000
_PAGE = 5_000  # keys per page of stored(), per vectors() query
_COLUMN_TYPES = {
    "chunk_key": "text",
    "chunk_id": "text",
    "document_id": "text",
    "text": "text",
    "embedding_text": "text",
    "metadata": "jsonb",
    "fingerprint": "text",
}
# SQLSTATE classes a retry may clear: connection exception, transaction rollback (serialization,
# deadlock), insufficient resources, operator intervention (shutdown).
_TRANSIENT_CLASSES = ("08", "40", "53", "57")


class PgvectorStore:
    """A PostgreSQL table of `StoreRow`s with a pgvector column (see the module docstring for the table).

    Built from a checked spec (`check_store_spec`); connects at once, with the password from the
    variable `password_env` names when it names one (else the URI's own, or libpq's usual sources:
    PGPASSWORD, ~/.pgpass). Raises StoreError when PostgreSQL cannot be reached.
    """

    type = "pgvector"

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.described = describe_spec(spec)
        self._table = spec["collection"]
        self._batch_size = int(spec["batch_size"])
        password = store_password(spec)
        self._secrets = [password, *uri_secrets(spec["uri"])]
        self._dimension: int | None = None
        #: Rows per page read by stored() and vectors().
        self.page_size = _PAGE
        self._connection: psycopg.Connection | None = None
        self._claim: str | None = None
        self._claimed = False
        self._keys: tuple[int, int] | None = None
        options: dict[str, Any] = {"autocommit": True}
        if password:
            options["password"] = password
        try:
            self._connection = psycopg.connect(spec["uri"], **options)
        except psycopg.Error as error:
            raise self._error("connect", error) from None
        except Exception:
            raise StoreError(
                f"{self.described}: connect failed: the URI is not a PostgreSQL connection string"
            ) from None
        if self._connection.info.server_version >= 140_000:
            # A sync's connections wait while it embeds: a server's idle_session_timeout must not
            # end them (the launcher's holds the sync's claim, a worker's its writes).
            try:
                self._connection.execute("SET idle_session_timeout = 0")
            except psycopg.Error as error:
                self.close()
                raise self._error("connect", error) from None
        self._name = sql.Identifier(self._table)

    # -- the protocol ------------------------------------------------------------------------

    def prepare(self, *, dimension: int, model: str) -> None:
        """Create the extension and the table if missing, recording `model` and `dimension`; check an existing table.

        Raises StoreError when the table exists with another dimension or model (naming both), or
        without rechunk's columns or comment.
        """
        if isinstance(dimension, bool) or not isinstance(dimension, int) or not 1 <= dimension <= 16_000:
            raise StoreError(f"{self.described}: a dimension of 1 to 16,000 (pgvector's limit), got {dimension!r}")
        connection = self._open()
        try:
            with connection.transaction():
                # Concurrent prepares of one table wait for each other.
                connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"rechunk:{self._table}"])
                connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
                exists = connection.execute("SELECT to_regclass(%s)", [self._quoted()]).fetchone()
                if exists and exists[0] is not None:
                    self._check_existing(connection, dimension, model)
                else:
                    self._create(connection, dimension, model)
        except psycopg.Error as error:
            raise self._error("prepare", error) from None
        self._dimension = dimension

    def claim_sync(self) -> str:
        """Hold the table for one sync until `close`; return the claim's token for its writers (`write_for`).

        The claim is a session-level advisory lock on this object's connection, keyed on the first
        8 bytes of sha256("rechunk-sync:SCHEMA.TABLE") in this database (SCHEMA: the one holding
        the table, else the one `prepare` creates it in: the first of the connection's
        search_path). PostgreSQL releases it when the connection ends, so a killed sync leaves no
        lock behind. Once it holds the lock it waits (up to a minute) for the write transactions
        of an earlier sync's writers still running (`write_for`): a writer that outlived its
        launching process finishes or fails before this sync reads the table. The token names
        this connection's server process (its pid and start).

        Raises StoreError when another connection holds it (another sync of this table is running),
        or when an earlier sync's write does not end within the minute.
        """
        connection = self._open()
        try:
            claim_key, writers_key = self._claim_keys(connection)
            row = connection.execute("SELECT pg_try_advisory_lock(%s)", [claim_key]).fetchone()
        except psycopg.Error as error:
            raise self._error("claim", error) from None
        if not row or row[0] is not True:
            raise StoreError(
                f"{self.described}: another sync of this table is running (it holds the table's advisory lock); "
                "run one sync per table at a time"
            )
        self._claimed = True
        try:
            with connection.transaction():
                connection.execute("SET LOCAL lock_timeout = '60s'")
                connection.execute("SELECT pg_advisory_xact_lock(%s)", [writers_key])
            row = connection.execute(
                "SELECT pid, extract(epoch FROM backend_start)::text FROM pg_stat_activity WHERE pid = pg_backend_pid()"
            ).fetchone()
        except psycopg.Error as error:
            raise self._error("claim", error) from None
        if not row:
            raise StoreError(f"{self.described}: claim failed: the server does not show this connection")
        return f"{row[0]}:{row[1]}"

    def write_for(self, claim: str | None) -> None:
        """Write (`upsert`, `delete`) only while the sync whose `claim_sync` returned `claim` holds
        its claim: each write transaction first takes the table's writers' lock (shared) and checks
        that the claim's connection still holds the claim. None: write without checking.

        Raises StoreError (from the writes) once the claim has ended: the sync's launching process
        is gone, and another sync may hold the table.
        """
        self._claim = claim

    def stored(self, shard: int, shards: int) -> Iterator[tuple[str, str]]:
        """Stream (chunk_key, fingerprint) of every row whose key starts with the shard's hex prefix
        (``shard == shards``: every row whose key starts with no lowercase hex digit).

        Pages of 5,000 keys in key order (keyset pagination over the primary key's range), each page
        its own query, so writes on this store between pages are allowed.
        """
        rest = is_rest_shard(shard, shards)  # keys no hex prefix covers (C collation: byte order)
        prefix = "" if rest else shard_prefix(shard, shards)
        connection = self._open()
        low, high = prefix, _next_prefix(prefix)
        last: str | None = None
        while True:
            clauses = [sql.SQL("true")]
            params: list[Any] = []
            if rest:
                clauses.append(
                    sql.SQL("(chunk_key < '0' OR (chunk_key >= ':' AND chunk_key < 'a') OR chunk_key >= 'g')")
                )
            if low:
                clauses.append(sql.SQL("chunk_key >= %s"))
                params.append(low)
            if high is not None:
                clauses.append(sql.SQL("chunk_key < %s"))
                params.append(high)
            if last is not None:
                clauses.append(sql.SQL("chunk_key > %s"))
                params.append(last)
            query = sql.SQL("SELECT chunk_key, fingerprint FROM {} WHERE {} ORDER BY chunk_key LIMIT {}").format(
                self._name, sql.SQL(" AND ").join(clauses), sql.Literal(self.page_size)
            )
            try:
                page = connection.execute(query, params).fetchall()
            except psycopg.Error as error:
                raise self._error("read keys", error) from None
            yield from page
            if len(page) < self.page_size:
                return
            last = page[-1][0]

    def upsert(self, rows: Sequence[StoreRow]) -> None:
        """Insert or replace the rows (`INSERT ... ON CONFLICT (chunk_key) DO UPDATE`), one transaction per `batch_size` rows.

        Raises StoreError when a row has no vector or one of another dimension, a text holds NUL
        (PostgreSQL's text cannot), metadata is not a JSON object, or PostgreSQL refuses the batch.
        """
        if not rows:
            return
        connection = self._open()
        check_vectors(rows, self._known_dimension(), self.described)
        for row in rows:
            problem = store_limit_problem(
                "pgvector",
                document_id=row.document_id,
                chunk_id=row.chunk_id,
                text=row.text,
                embedding_text=row.embedding_text,
                metadata=row.metadata,
            )
            if problem:
                raise StoreError(f"{self.described}: chunk {row.chunk_key}: {problem}")
        columns = (
            "chunk_key",
            "chunk_id",
            "document_id",
            "text",
            "embedding_text",
            "metadata",
            "fingerprint",
            "embedding",
        )
        statement = sql.SQL(
            "INSERT INTO {} ({}) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s::vector) ON CONFLICT (chunk_key) DO UPDATE SET {}"
        ).format(
            self._name,
            sql.SQL(", ").join(sql.Identifier(name) for name in columns),
            sql.SQL(", ").join(
                sql.SQL("{} = EXCLUDED.{}").format(sql.Identifier(name), sql.Identifier(name)) for name in columns[1:]
            ),
        )
        for batch in batches(rows, self._batch_size):
            params = [
                (
                    row.chunk_key,
                    row.chunk_id,
                    row.document_id,
                    row.text,
                    row.embedding_text,
                    row.metadata,
                    row.fingerprint,
                    _vector_text(row.vector or ()),
                )
                for row in batch
            ]
            try:
                with connection.transaction(), connection.cursor() as cursor:
                    self._check_claim(connection)
                    cursor.executemany(statement, params)
            except psycopg.Error as error:
                raise self._error("upsert", error) from None

    def vectors(self, keys: Sequence[str]) -> dict[str, tuple[float, ...]]:
        """The stored vectors (float32 values as Python floats) of those keys that exist."""
        connection = self._open()
        found: dict[str, tuple[float, ...]] = {}
        query = sql.SQL("SELECT chunk_key, embedding::text FROM {} WHERE chunk_key = ANY(%s)").format(self._name)
        for batch in batches(list(keys), self.page_size):
            try:
                for key, text in connection.execute(query, [list(batch)]):
                    found[key] = tuple(float(value) for value in text.strip("[]").split(","))
            except psycopg.Error as error:
                raise self._error("read vectors", error) from None
        return found

    def delete(self, keys: Sequence[str]) -> None:
        """Delete the rows with these keys, one transaction per `batch_size` keys (keys not held are ignored)."""
        connection = self._open()
        statement = sql.SQL("DELETE FROM {} WHERE chunk_key = ANY(%s)").format(self._name)
        for batch in batches(list(keys), self._batch_size):
            try:
                with connection.transaction():
                    self._check_claim(connection)
                    connection.execute(statement, [list(batch)])
            except psycopg.Error as error:
                raise self._error("delete", error) from None

    def count(self) -> int:
        """Rows held now (`SELECT count(*)`)."""
        try:
            row = self._open().execute(sql.SQL("SELECT count(*) FROM {}").format(self._name)).fetchone()
        except psycopg.Error as error:
            raise self._error("count", error) from None
        return int(row[0]) if row else 0

    def search(self, vector: Sequence[float], limit: int) -> list[str]:
        """The chunk_keys of the `limit` rows nearest `vector` by cosine distance (`<=>`), nearest first."""
        query = sql.SQL("SELECT chunk_key FROM {} ORDER BY embedding <=> %s::vector, chunk_key LIMIT %s").format(
            self._name
        )
        try:
            rows = self._open().execute(query, [_vector_text(vector), int(limit)]).fetchall()
        except psycopg.Error as error:
            raise self._error("search", error) from None
        return [row[0] for row in rows]

    def close(self) -> None:
        """Release the sync's claim (`claim_sync`) if this object holds it, then close the connection.

        The claim is released by a statement, not left to the server noticing the closed
        connection, so the next sync of the table can claim it as soon as this returns.
        """
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                if self._claimed:
                    connection.execute("SELECT pg_advisory_unlock(%s)", [self._claim_keys(connection)[0]])
            with contextlib.suppress(Exception):
                connection.close()
        self._claimed = False

    # -- helpers -----------------------------------------------------------------------------

    def _open(self) -> psycopg.Connection:
        if self._connection is None:
            raise StoreError(f"{self.described}: the store is closed")
        return self._connection

    def _claim_keys(self, connection: psycopg.Connection) -> tuple[int, int]:
        """The advisory lock keys of the table's claim and of its writers, named for SCHEMA.TABLE
        (the schema holding the table, else the first of the search_path, where `prepare` creates
        it), so same-named tables in two schemas are two claims and one table is one claim
        whatever search_path reaches it. Found once per store object."""
        if self._keys is None:
            row = connection.execute(
                "SELECT coalesce((SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.oid = to_regclass(%s)), current_schema())",
                [self._quoted()],
            ).fetchone()
            name = f"{row[0] if row else None}.{self._table}"
            self._keys = (_lock_key("rechunk-sync", name), _lock_key("rechunk-sync-writes", name))
        return self._keys

    def _check_claim(self, connection: psycopg.Connection) -> None:
        """Inside a write transaction: hold the writers' lock (shared) and check the claim (`write_for`)."""
        if self._claim is None:
            return
        claim_key, writers_key = self._claim_keys(connection)
        connection.execute("SELECT pg_advisory_xact_lock_shared(%s)", [writers_key])
        pid, started = self._claim.split(":", 1)
        key = claim_key & 0xFFFF_FFFF_FFFF_FFFF
        row = connection.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock' AND l.objsubid = 1 "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND l.classid::bigint = %s AND l.objid::bigint = %s AND l.pid = %s "
            "AND extract(epoch FROM a.backend_start)::text = %s)",
            [key >> 32, key & 0xFFFF_FFFF, int(pid), started],
        ).fetchone()
        if not row or row[0] is not True:
            raise StoreError(
                f"{self.described}: this sync's claim on the table has ended (its launching process or "
                "that process's connection is gone): this writer writes nothing more"
            )

    def _quoted(self) -> str:
        return '"' + self._table + '"'

    def _known_dimension(self) -> int:
        if self._dimension is None:
            try:
                recorded = self._recorded(self._open())
            except psycopg.Error as error:
                raise self._error("describe", error) from None
            if recorded is None:
                raise StoreError(f"{self.described}: no such table or not rechunk's (prepare it first)")
            self._dimension = recorded[0]
        return self._dimension

    def _recorded(self, connection: psycopg.Connection) -> tuple[int, str] | None:
        row = connection.execute(
            "SELECT obj_description(c.oid, 'pg_class') FROM pg_class c WHERE c.oid = to_regclass(%s)", [self._quoted()]
        ).fetchone()
        if row is None or not row[0]:
            return None
        try:
            recorded = json.loads(row[0])["rechunk"]
            return int(recorded["dimension"]), str(recorded["model"])
        except (ValueError, KeyError, TypeError):
            return None

    def _create(self, connection: psycopg.Connection, dimension: int, model: str) -> None:
        connection.execute(
            sql.SQL(
                'CREATE TABLE {} (chunk_key text COLLATE "C" PRIMARY KEY, chunk_id text NOT NULL, document_id text NOT NULL, '
                "text text NOT NULL, embedding_text text NOT NULL, metadata jsonb NOT NULL, fingerprint text NOT NULL, "
                "embedding vector({}) NOT NULL)"
            ).format(self._name, sql.Literal(dimension))
        )
        if dimension <= HNSW_MAX_DIMENSION:
            # Named by PostgreSQL (TABLE_embedding_idx, cut to 63 bytes and numbered when taken), so
            # two tables whose names share their first characters each get an index.
            connection.execute(
                sql.SQL("CREATE INDEX ON {} USING hnsw (embedding vector_cosine_ops)").format(self._name)
            )
        comment = json.dumps({"rechunk": {"model": model, "dimension": dimension}}, sort_keys=True)
        connection.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(self._name, sql.Literal(comment)))

    def _check_existing(self, connection: psycopg.Connection, dimension: int, model: str) -> None:
        rows = connection.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_attribute a "
            "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped",
            [self._quoted()],
        ).fetchall()
        found: dict[str, str] = {name: kind for name, kind, _ in rows}
        nullable = {name for name, _, not_null in rows if not not_null}
        wanted = dict(_COLUMN_TYPES)
        missing = [name for name in [*wanted, "embedding"] if name not in found]
        wrong = [name for name, kind in wanted.items() if name in found and found[name] != kind]
        if not missing and not found["embedding"].startswith("vector("):
            wrong.append("embedding")
        if missing or wrong:
            problem = f"lacks {', '.join(missing)}" if missing else f"has other types for {', '.join(wrong)}"
            raise StoreError(f"{self.described}: exists without rechunk's columns ({problem}): name another table")
        recorded = self._recorded(connection)
        if recorded is None:
            raise StoreError(
                f"{self.described}: exists without rechunk's model and dimension comment: name another table"
            )
        if recorded != (dimension, model):
            raise StoreError(mismatch_message(self.described, recorded, (dimension, model)))
        # The vector column as prepare() makes it: of the recorded dimension, never null (a row
        # without a vector would be kept as if it had one, and never found by a search).
        if found["embedding"] != f"vector({dimension})" or "embedding" in nullable:
            raise StoreError(
                f"{self.described}: its embedding column is {found['embedding']}"
                f"{'' if 'embedding' in nullable else ' NOT NULL'}, not vector({dimension}) NOT NULL as "
                "its comment records: name another table"
            )

    def _error(self, operation: str, error: BaseException) -> StoreError:
        # PostgreSQL's primary message only: its DETAIL can quote a failing row (a chunk's text).
        diag = getattr(error, "diag", None)
        primary = getattr(diag, "message_primary", None) if diag is not None else None
        text = scrubbed(str(primary or error), self._secrets)
        return StoreError(f"{self.described}: {operation} failed: {one_line(text, 300)}", transient=_transient(error))


def _transient(error: BaseException) -> bool:
    """True for errors a retry may clear (by SQLSTATE class; a connection that failed without one)."""
    state = getattr(error, "sqlstate", None)
    if state:
        return str(state)[:2] in _TRANSIENT_CLASSES
    if isinstance(error, psycopg.OperationalError):
        text = str(error).lower()
        return "authentication" not in text and "does not exist" not in text and "password" not in text
    return False


def _lock_key(kind: str, table: str) -> int:
    """An advisory lock key: the first 8 bytes of sha256("KIND:TABLE"), as a signed 64-bit integer."""
    return int.from_bytes(hashlib.sha256(f"{kind}:{table}".encode()).digest()[:8], "big", signed=True)


def _next_prefix(prefix: str) -> str | None:
    """The smallest string above every string starting with the hex `prefix` (None for '': no upper bound)."""
    if not prefix:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _vector_text(vector: Sequence[float]) -> str:
    """pgvector's text form of a vector: [v1,v2,...], each value as Python's shortest round-trip repr."""
    return "[" + ",".join(repr(float(value)) for value in vector) + "]"
