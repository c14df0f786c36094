"""The vector-store layer's shared types: a row, the error, the protocol, and the helpers both stores use.

A store holds one row per chunk, keyed on `chunk_key` (64 lowercase hex digits, see docs/contract.md),
with the chunk's non-vector columns, a `fingerprint` of them computed by the caller, and a dense
float vector. The collection (Milvus) or table (pgvector) records the embedding model's identity and
the vector's dimension, so a store written with one model is never extended with another.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

#: The columns every store holds, in this order, the vector last (named `embedding` in both stores).
COLUMNS = ("chunk_key", "chunk_id", "document_id", "text", "embedding_text", "metadata", "fingerprint", "embedding")

#: The shard counts `stored()` accepts: a shard is the keys' first 0, 1 or 2 hex digits.
SHARD_COUNTS = (1, 16, 256)

#: The batch size a spec gets when it names none (rows per write call).
DEFAULT_BATCH_SIZE = 256

HIDDEN = "***"

# Query parameters of a URI whose values are secrets (libpq's password and sslpassword, tokens).
_SECRET_PARAMETERS = frozenset({"password", "sslpassword", "token", "api_key", "apikey"})


@dataclass(frozen=True)
class StoreRow:
    """One chunk as a store holds it.

    `chunk_key` is the primary key (64 lowercase hex digits); `metadata` is the chunk row's JSON object
    as text; `fingerprint` is the sha256 hex of the non-vector columns, computed by the caller and
    stored as given; `vector` is the dense embedding (its length the collection's dimension), None
    only for rows passed to nothing that writes vectors.
    """

    chunk_key: str
    chunk_id: str
    document_id: str
    text: str
    embedding_text: str
    metadata: str
    fingerprint: str
    vector: tuple[float, ...] | None


class StoreError(Exception):
    """A store operation that failed: a one-line message that never holds a password or token.

    `transient` is True when trying again later may succeed (a connection lost, a server unavailable,
    a transaction that lost a conflict), False for a mistake that repeats (a dimension or model that
    differs from the collection's, a table without rechunk's columns, a value the store refuses).
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(one_line(message))
        self.transient = transient


class VectorStore(Protocol):
    """A collection (Milvus) or table (pgvector) of `StoreRow`s keyed on `chunk_key`.

    Every method raises `StoreError` when the store refuses or cannot be reached.
    """

    type: str
    described: str

    def prepare(self, *, dimension: int, model: str) -> None:
        """Create the collection if missing; refuse one made with another dimension or model."""
        ...

    def claim_sync(self) -> str | None:
        """Hold the store for one sync until `close`, or raise `StoreError` when another sync
        holds it; return the claim's token for the sync's writers (`write_for`). A store with no
        way to tell (a Milvus server) claims nothing and returns None."""
        ...

    def write_for(self, claim: str | None) -> None:
        """Write only while the sync holding `claim` (from `claim_sync`) holds it: later writes raise
        `StoreError`. None (and a store that claims nothing): write without checking."""
        ...

    def stored(self, shard: int, shards: int) -> Iterator[tuple[str, str]]:
        """Stream (chunk_key, fingerprint) of the rows whose key falls in `shard` of `shards`."""
        ...

    def upsert(self, rows: Sequence[StoreRow]) -> None:
        """Insert the rows, replacing any row with the same chunk_key; every row has a vector."""
        ...

    def vectors(self, keys: Sequence[str]) -> dict[str, tuple[float, ...]]:
        """The stored vectors of those keys that exist."""
        ...

    def delete(self, keys: Sequence[str]) -> None:
        """Delete the rows with these keys (keys not held are ignored)."""
        ...

    def count(self) -> int:
        """The number of rows held now, read back from the store."""
        ...

    def search(self, vector: Sequence[float], limit: int) -> list[str]:
        """The chunk_keys of the `limit` rows nearest `vector` by cosine distance, nearest first."""
        ...

    def close(self) -> None:
        """Release the connection; the object is unusable afterwards."""
        ...


def one_line(text: str, limit: int = 400) -> str:
    """`text` on one line (runs of whitespace and control characters as one space), at most `limit` characters."""
    flat = re.sub(r"[\s\x00-\x1f\x7f]+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def scrubbed(text: str, secrets: Sequence[str]) -> str:
    """`text` with every occurrence of each non-empty secret replaced by ***."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, HIDDEN)
    return text


def hide_password(uri: str) -> str:
    """`uri` with the password of its user-info and the values of secret query parameters shown as ***.

    A URI without a scheme (a file path) is returned as given.
    """
    if "://" not in uri:
        return uri
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri.split("://", 1)[0] + "://" + HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, colon, password = userinfo.partition(":")
        if password:
            userinfo = user + colon + HIDDEN
        netloc = userinfo + "@" + host
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(name.lower() in _SECRET_PARAMETERS for name, _ in pairs):
            pairs = [(name, HIDDEN if name.lower() in _SECRET_PARAMETERS else value) for name, value in pairs]
            query = urlencode(pairs, safe="/*")
    # Joined by hand: urlunsplit drops the // of an empty host (postgresql:///db?host=/socket).
    return (
        f"{parts.scheme}://{netloc}{parts.path}"
        + (f"?{query}" if query else "")
        + (f"#{parts.fragment}" if parts.fragment else "")
    )


def uri_secrets(uri: str) -> list[str]:
    """The secrets written in `uri` (its user-info password, secret query parameters), to scrub from messages."""
    if "://" not in uri:
        return []
    try:
        parts = urlsplit(uri)
        found = [parts.password] if parts.password else []
        found += [value for name, value in parse_qsl(parts.query) if name.lower() in _SECRET_PARAMETERS and value]
    except ValueError:
        return [uri]
    return [secret for secret in found if secret]


#: The hex digits a ``chunk_key`` starts with; :meth:`VectorStore.stored` reads the keys that start
#: with none of them (written by hand, or by something else) as one more shard, ``shard == shards``.
HEX_DIGITS = "0123456789abcdef"


def is_rest_shard(shard: int, shards: int) -> bool:
    """Whether ``shard`` is the extra shard of keys whose first character is no lowercase hex digit."""
    return shards in SHARD_COUNTS and shard == shards and not isinstance(shard, bool)


def shard_prefix(shard: int, shards: int) -> str:
    """The hex prefix shared by the keys of `shard` of `shards`: '' for 1 shard, one digit for 16, two for 256.

    Raises ValueError for a shard count other than 1, 16 or 256 or a shard outside 0 to shards - 1.
    """
    if isinstance(shards, bool) or shards not in SHARD_COUNTS:
        raise ValueError(f"shards must be 1, 16 or 256, got {shards!r}")
    if isinstance(shard, bool) or not isinstance(shard, int) or not 0 <= shard < shards:
        raise ValueError(f"shard must be 0 to {shards - 1}, got {shard!r}")
    digits = {1: 0, 16: 1, 256: 2}[shards]
    return format(shard, f"0{digits}x") if digits else ""


def batches(items: Sequence, size: int) -> Iterator[Sequence]:
    """`items` in consecutive slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def check_vectors(rows: Sequence[StoreRow], dimension: int, described: str) -> None:
    """Raise StoreError unless every row has a vector of `dimension` finite floats."""
    for row in rows:
        if row.vector is None:
            raise StoreError(f"{described}: chunk {row.chunk_key}: no vector to write")
        if len(row.vector) != dimension:
            raise StoreError(
                f"{described}: chunk {row.chunk_key}: a vector of {len(row.vector)} dimensions, the collection holds {dimension}"
            )
        for value in row.vector:
            if value != value or value in (float("inf"), float("-inf")):
                raise StoreError(f"{described}: chunk {row.chunk_key}: the vector holds {value!r}")


def mismatch_message(described: str, stored: tuple[int, str], wanted: tuple[int, str]) -> str:
    """The message for a collection made with another dimension or model: names both, and the way out."""
    return (
        f"{described} holds vectors of dimension {stored[0]} from model {stored[1]!r}; this run embeds with "
        f"dimension {wanted[0]} from model {wanted[1]!r}: name another collection (or drop this one)"
    )
