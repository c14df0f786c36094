"""The vector-store sync of a run: after its chunks are written and verified, before its commit.

With ``vector_store:`` in the configuration, :func:`sync_store` runs a second pipeline on the
same runner options: it reads the run's own ``chunks/`` files, joins them by ``chunk_key`` with
the keys the store holds, embeds only the chunks the store lacks, writes them and the rows whose
other columns changed, and then deletes the keys this run did not produce
(:class:`transforms.beam.sync.SyncVectorStore`). A run over ``--max-dead-letter-fraction`` does
not touch the store: a run that chunked almost nothing must not empty it.

The store is opened and claimed for the run (:func:`claim_store`) before its pipeline starts and
held until the run ends, so a second run syncing the same store is refused before it chunks
anything. The report gains ``embedding`` and ``vector_store`` (:func:`sync_sections`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options import RunError, one_line, worker_error_line
from pipelines.paths import worker_path
from pipelines.report import counter_totals
from transforms.beam import ReadParquetRows
from transforms.beam.sync import SYNC_COUNTERS, SyncVectorStore

__all__ = [
    "CHUNK_COLUMNS",
    "ClaimedStore",
    "check_embedding",
    "claim_store",
    "embedding_model",
    "sync_sections",
    "sync_store",
]

#: The chunk columns the sync reads.
CHUNK_COLUMNS = [
    "chunk_key",
    "chunk_id",
    "document_id",
    "chunk_index",
    "text",
    "embedding_text",
    "metadata",
    "token_count",
]


def embedding_model(spec: Mapping[str, Any]) -> Any:
    """The configuration's embedding model, built on the driver (its identity names it in the
    store and the report).

    Raises:
        ValueError, TypeError: As :func:`transforms.models.registry.build_models` raises them.
    """
    from transforms.models.registry import build_models

    name = spec["embedding"]["model"]
    return build_models({name: spec["models"][name]})[name]


def sync_sections(
    spec: Mapping[str, Any], counters: Mapping[str, int], *, model: str | None, rows_after: int | None, synced: bool
) -> dict[str, Any]:
    """The report's ``embedding`` and ``vector_store`` sections (``None`` each without its
    configuration section)."""
    embedding = spec.get("embedding")
    store = spec.get("vector_store")
    return {
        "embedding": None
        if embedding is None
        else {
            "model": model,
            "chunks_embedded": counters.get("embedding.chunks_embedded", 0),
            "chunks_reused": counters.get("embedding.chunks_reused", 0),
        },
        "vector_store": None
        if store is None
        else {
            "type": store["type"],
            "store": _described(store),
            "synced": synced,
            "upserted": counters.get("vector_store.upserted", 0),
            "updated": counters.get("vector_store.updated", 0),
            "deleted": counters.get("vector_store.deleted", 0),
            "rows_after": rows_after,
        },
    }


def _described(store_spec: Mapping[str, Any]) -> str:
    """The store as shown (no password), without opening it."""
    from transforms.stores import describe_spec

    return describe_spec(store_spec)


@dataclass(frozen=True)
class ClaimedStore:
    """The configured store, open and claimed for this run's sync (:func:`claim_store`).

    ``store``: the open :class:`transforms.stores.base.VectorStore`; ``claim``: the token its
    ``claim_sync`` returned (the sync's writers write only while it holds). Close ``store`` when
    the run ends: that ends the claim.
    """

    store: Any
    claim: str | None


def claim_store(spec: Mapping[str, Any]) -> ClaimedStore:
    """Open the configured store and claim it for this run's sync, before the pipeline starts: a
    store that cannot be reached (a server down, a password variable unset, a Milvus Lite folder
    that cannot be made or that another process holds, a URI PostgreSQL cannot parse) or that
    another sync holds is an option error, not a failure after the chunking.

    Raises:
        OptionError: One line naming the store (never its password).
    """
    from pipelines.options import OptionError
    from transforms.stores import StoreError, open_store

    try:
        store = open_store(spec["vector_store"])
    except ImportError as err:
        raise OptionError(f"vector_store: {one_line(err, 300)}") from None
    except (StoreError, ValueError, OSError) as err:
        raise OptionError(f"vector_store: {_store_message(err, _described(spec['vector_store']))}") from None
    try:
        claim = store.claim_sync()
    except StoreError as err:
        store.close()
        raise OptionError(f"vector_store: {_store_message(err, store.described)}") from None
    except BaseException:
        store.close()
        raise
    return ClaimedStore(store, claim)


def check_embedding(spec: Mapping[str, Any]) -> None:
    """When the embedding model's vector size is not known without a call (an OpenAI-compatible
    endpoint without ``dimensions``), build the model and embed one word with it, before the
    pipeline starts: an endpoint that does not answer is an option error, not a failure after
    the chunking. A model whose size its configuration gives (a local model's files) is not
    called.

    Raises:
        OptionError: One line naming the model (never an API key or a document's text).
    """
    from pipelines.options import OptionError
    from transforms.models import ModelError

    if spec["embedding"].get("dimension"):
        return
    name = spec["embedding"]["model"]
    try:
        model = embedding_model(spec)
    except (TypeError, ValueError, ImportError) as err:
        raise OptionError(f"embedding model {name!r}: {one_line(err, 450)}") from None
    try:
        _dimension(spec, model)
    except ModelError as err:
        raise OptionError(f"embedding model {name!r}: {one_line(err, 450)}") from None
    finally:
        close = getattr(model, "close", None)
        if close is not None:
            close()


def _store_message(err: BaseException, described: str) -> str:
    """A store's error on one line, starting with the store's name once."""
    message = one_line(err, 450)
    return message if message.startswith(described) else f"{described}: {message}"


def sync_store(
    output: str,
    spec: Mapping[str, Any],
    options: PipelineOptions,
    *,
    whole: bool,
    chunks: int,
    claimed: ClaimedStore,
) -> dict[str, Any]:
    """Bring the configured store to this run's chunks; return the report's two sections.

    Args:
        output: The run's output folder (its ``chunks/`` are written and verified).
        spec: The resolved configuration, with ``embedding`` and ``vector_store``.
        options: The run's pipeline options.
        whole: Whether the run is within ``--max-dead-letter-fraction``; if not, the store is
            left as it is and ``vector_store.synced`` is false.
        chunks: The run's chunks written: the rows the store must hold after the sync.
        claimed: The store as :func:`claim_store` opened and claimed it before the pipeline
            started (left open: its owner closes it, which ends the claim).

    Raises:
        RunError: The store cannot be prepared (another model or dimension), the sync pipeline
            failed (no delete ran
            unless every write succeeded and the chunk rows read were the run's ``chunks``), or
            the store holds another number of rows than the run's chunks after it (another
            writer).
    """
    from transforms.models import ModelError
    from transforms.stores import StoreError

    try:
        model = embedding_model(spec)
    except (TypeError, ValueError, ImportError) as err:
        raise RunError(f"embedding model {spec['embedding']['model']!r}: {one_line(err, 450)}") from None
    store = claimed.store
    try:
        if not whole:
            return sync_sections(spec, {}, model=model.identity, rows_after=_rows_held(store), synced=False)
        store.prepare(dimension=_dimension(spec, model), model=model.identity)
        counters = _run_sync(output, spec, options, chunks, claimed.claim)
        rows_after = store.count()
        if rows_after != chunks:
            raise RunError(
                f"vector store {store.described}: holds {rows_after:,} rows after the sync, not the run's {chunks:,} "
                "chunks: another writer used it while this run did (one run at a time per store)"
            )
        return sync_sections(spec, counters, model=model.identity, rows_after=rows_after, synced=True)
    except StoreError as err:
        raise RunError(f"vector store {_store_message(err, store.described)}") from None
    except ModelError as err:
        raise RunError(f"embedding model {spec['embedding']['model']!r}: {one_line(err, 450)}") from None
    finally:
        close = getattr(model, "close", None)
        if close is not None:
            close()


def _rows_held(store: Any) -> int | None:
    """The rows ``store`` holds; ``None`` when it cannot tell (no collection yet: nothing to touch)."""
    from transforms.stores import StoreError

    try:
        return int(store.count())
    except StoreError:
        return None


def _dimension(spec: Mapping[str, Any], model: Any) -> int:
    """The model's vector size: from its budget, else from one embedding on the driver.

    Raises:
        ModelError: That embedding failed.
    """
    dimension = spec["embedding"].get("dimension")
    if dimension:
        return int(dimension)
    return len(model.embed(["dimension"])[0])


def _run_sync(
    output: str, spec: Mapping[str, Any], options: PipelineOptions, chunks: int, claim: str | None
) -> dict[str, int]:
    """Run the sync pipeline over the run's ``chunks`` verified chunk rows, its writers bound to
    `claim` (they stop once it ends); return its counters.

    Raises:
        RunError: The pipeline failed (a store or model error on a worker).
    """
    from transforms.stores.milvus import is_lite_uri

    embedding = spec["embedding"]
    if spec["vector_store"]["type"] == "milvus" and is_lite_uri(spec["vector_store"]["uri"]):
        # A Milvus Lite file is open to one process at a time: this one, which holds it already.
        options = PipelineOptions([], runner="DirectRunner", direct_running_mode="in_memory", direct_num_workers=1)
    pipeline = beam.Pipeline(options=options)
    _ = (
        pipeline
        | "Read chunks" >> ReadParquetRows(f"{worker_path(output)}/chunks/*.parquet", columns=CHUNK_COLUMNS)
        | "Sync vector store"
        >> SyncVectorStore(
            spec["vector_store"],
            models=spec["models"],
            model=embedding["model"],
            window=embedding["window"],
            dimension=embedding.get("dimension"),
            expected_rows=chunks,
            claim=claim,
        )
    )
    try:
        result = pipeline.run()
        result.wait_until_finish()
    except Exception as err:  # the runner wraps a worker's error in its own
        raise RunError(
            f"vector store sync failed: {worker_error_line(err, 400)}; no key was deleted unless every write "
            "succeeded: run the job again to converge"
        ) from None
    totals = counter_totals(result)
    return {name: totals[name] for name in SYNC_COUNTERS if name in totals}
