"""Vector stores a run's chunks are kept in: Milvus (a server or a Milvus Lite file) and PostgreSQL with pgvector.

`check_store_spec` checks a configuration's `vector_store:` mapping without importing either client;
`open_store` builds the store, importing pymilvus or psycopg only then. See docs/stores.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from transforms.stores.base import (
    COLUMNS,
    DEFAULT_BATCH_SIZE,
    SHARD_COUNTS,
    StoreError,
    StoreRow,
    VectorStore,
    hide_password,
)

__all__ = [
    "COLUMNS",
    "CONFIG_KEYS",
    "SHARD_COUNTS",
    "STORE_TYPES",
    "StoreError",
    "StoreRow",
    "VectorStore",
    "check_store_spec",
    "describe_spec",
    "open_store",
    "store_password",
]

STORE_TYPES = ("milvus", "pgvector")

_KEYS = ("type", "uri", "collection", "password_env", "batch_size")
#: Keys a configuration file's ``vector_store:`` may hold: ``uri_env`` names the environment variable
#: holding ``uri`` (the job reads it before it checks the rest).
CONFIG_KEYS = (*_KEYS, "uri_env")
_REQUIRED = ("type", "uri", "collection")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MILVUS_SCHEMES = ("http://", "https://", "tcp://", "unix:")
_PG_SCHEMES = ("postgresql://", "postgres://")
MAX_BATCH_SIZE = 100_000
_INSTALL_HINT = "install the store extra: pip install 'rechunk[store]'"


def check_store_spec(spec: Mapping) -> dict[str, Any]:
    """The checked `vector_store:` mapping, with every key present (`password_env` None, `batch_size` 256 when absent).

    Keys: `type` ("milvus" or "pgvector"), `uri` (milvus: a Milvus Lite file ending in .db, or an
    http(s)://, tcp:// or unix: address; pgvector: a postgresql:// URI, which may hold a password,
    never shown), `collection` (a SQL identifier, [A-Za-z_][A-Za-z0-9_]{0,62}), `password_env` (the
    name of the environment variable holding the password or token), `batch_size` (rows per write
    call, 1 to 100,000). Relative Milvus Lite paths are kept as given (the store opens them from the
    working folder).

    Raises ValueError whose message starts "vector_store.FIELD: " and never holds a secret.
    """
    if not isinstance(spec, Mapping):
        raise ValueError(f"vector_store: a mapping with type, uri and collection, got {type(spec).__name__}")
    for key in spec:
        if key not in _KEYS:
            shown = key if isinstance(key, str) and len(key) <= 40 and key.isprintable() else "(a key)"
            raise ValueError(f"vector_store.{shown}: unknown key (known: {', '.join(CONFIG_KEYS)})")
    for key in _REQUIRED:
        if key not in spec or spec[key] is None:
            raise ValueError(f"vector_store.{key}: required")
    kind = spec["type"]
    if not isinstance(kind, str) or kind not in STORE_TYPES:
        raise ValueError(f"vector_store.type: one of {', '.join(STORE_TYPES)}, got {_shown_value(kind)}")
    uri = spec["uri"]
    if not isinstance(uri, str) or not uri or uri != uri.strip() or not uri.isprintable():
        raise ValueError("vector_store.uri: a non-empty string without spaces at either end or control characters")
    if kind == "milvus":
        if "://" in uri or uri.startswith("unix:"):
            if not uri.startswith(_MILVUS_SCHEMES):
                raise ValueError(
                    "vector_store.uri: a Milvus address starts with http://, https://, tcp:// or unix:, or is a file ending in .db"
                )
            if "@" in uri.split("://", 1)[-1].split("/", 1)[0]:
                raise ValueError(
                    "vector_store.uri: holds credentials; put the token in the variable named by password_env"
                )
        elif not uri.endswith(".db"):
            raise ValueError("vector_store.uri: a Milvus Lite file's name ends in .db")
    elif not uri.startswith(_PG_SCHEMES):
        raise ValueError("vector_store.uri: a PostgreSQL URI starting with postgresql:// or postgres://")
    collection = spec["collection"]
    if not isinstance(collection, str) or not _IDENTIFIER.fullmatch(collection):
        raise ValueError(
            f"vector_store.collection: an identifier of letters, digits and _ (not first), 1 to 63 characters, got {_shown_value(collection)}"
        )
    password_env = spec.get("password_env")
    if password_env is not None and (not isinstance(password_env, str) or not _VARIABLE.fullmatch(password_env)):
        raise ValueError(
            f"vector_store.password_env: the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), got {_shown_value(password_env)}"
        )
    batch_size = spec.get("batch_size", DEFAULT_BATCH_SIZE)
    if batch_size is None:
        batch_size = DEFAULT_BATCH_SIZE
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(
            f"vector_store.batch_size: an integer from 1 to {MAX_BATCH_SIZE:,}, got {_shown_value(batch_size)}"
        )
    return {"type": kind, "uri": uri, "collection": collection, "password_env": password_env, "batch_size": batch_size}


def describe_spec(spec: Mapping) -> str:
    """`TYPE:URI#COLLECTION` of a checked spec, with any password or token in the URI shown as ***."""
    return f"{spec['type']}:{hide_password(spec['uri'])}#{spec['collection']}"


def store_password(spec: Mapping) -> str:
    """The password or token held by the variable the spec's `password_env` names ('' when it names none).

    Raises StoreError when the variable is named but unset or empty.
    """
    name = spec.get("password_env")
    if not name:
        return ""
    value = os.environ.get(name, "")
    if not value:
        raise StoreError(f"vector_store.password_env: the environment variable {name} is not set")
    return value


def open_store(spec: Mapping) -> VectorStore:
    """The store a `vector_store:` spec names, connected (the spec is checked first).

    Raises ValueError for a bad spec, ImportError (with the install hint) when pymilvus/milvus-lite
    or psycopg is missing, StoreError when the store cannot be reached.
    """
    checked = check_store_spec(spec)
    if checked["type"] == "milvus":
        try:
            import pymilvus  # noqa: F401
        except ImportError as error:
            raise ImportError(f"vector_store.type milvus needs pymilvus: {_INSTALL_HINT}") from error
        from transforms.stores.milvus import MilvusStore

        return MilvusStore(checked)
    try:
        import psycopg  # noqa: F401
    except ImportError as error:
        raise ImportError(f"vector_store.type pgvector needs psycopg: {_INSTALL_HINT}") from error
    from transforms.stores.pgvector import PgvectorStore

    return PgvectorStore(checked)


def _shown_value(value: object) -> str:
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 and value.isprintable() else "a string"
    if isinstance(value, (bool, int, float)) or value is None:
        return repr(value)
    return f"a {type(value).__name__}"
