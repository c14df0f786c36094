"""report.json: the run's figures, from Beam metrics and the written chunks' token counts."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import MetricsFilter

import transforms
from pipelines.verdict import DEFAULT_MAX_DEAD_LETTER_FRACTION, verdict
from transforms.beam import METRICS_NAMESPACE, STRUCTURE_COUNTERS

__all__ = ["HISTOGRAM_BUCKETS", "build_report", "counter_totals", "write_report"]

#: The token-count histogram's buckets over 1 to ``max_tokens`` (fewer when the budget is smaller).
HISTOGRAM_BUCKETS = 32

_DOCUMENT_COUNTERS = (
    "documents_read",
    "documents_chunked",
    "documents_partially_rejected",
    "documents_dead_lettered",
    "documents_skipped_unchanged",
    "chunks_written",
    "chunks_rejected",
)


def counter_totals(result) -> dict[str, int]:
    """Sum the job's counters (namespace ``rechunk``) over steps, by name (committed values where
    the runner has them)."""
    totals: dict[str, int] = {}
    query = result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + (value or 0)
    return totals


def _token_stats(chunks_glob: str, max_tokens: int) -> tuple[dict[str, int | None], dict[str, Any]]:
    """min, p50, p95 and max of ``token_count`` over the written chunk files (nearest rank, lower),
    and their histogram in buckets (:func:`_bucketed`).

    Counted as a histogram of token counts, a row group at a time: memory follows the largest
    count (at most the budget), not the number of chunks.
    """
    histogram = np.zeros(0, dtype=np.int64)
    for match in sorted(FileSystems.match([chunks_glob])[0].metadata_list, key=lambda m: m.path):
        # ParquetFile without threads, closed here: a dataset read over a Python file object can
        # leave an Arrow thread holding it past interpreter shutdown (an abort at exit).
        with FileSystems.open(match.path) as f, pq.ParquetFile(f) as parquet:
            for group in range(parquet.metadata.num_row_groups):
                column = parquet.read_row_group(group, columns=["token_count"], use_threads=False).column(0)
                counts = column.drop_null().to_numpy()
                if len(counts):
                    found = np.bincount(counts)
                    if len(found) > len(histogram):
                        found[: len(histogram)] += histogram
                        histogram = found
                    else:
                        histogram[: len(found)] += found
    buckets = _bucketed(histogram, max_tokens)
    total = int(histogram.sum())
    if total == 0:
        return {"min": None, "p50": None, "p95": None, "max": None}, buckets
    cumulative = np.cumsum(histogram)

    def quantile(q: float) -> int:  # the value at sorted index floor(q * (n - 1)), as "lower" interpolation
        return int(np.searchsorted(cumulative, int(q * (total - 1)), side="right"))

    present = np.flatnonzero(histogram)
    stats: dict[str, int | None] = {
        "min": int(present[0]),
        "p50": quantile(0.5),
        "p95": quantile(0.95),
        "max": int(present[-1]),
    }
    return stats, buckets


def _bucketed(histogram: np.ndarray, max_tokens: int) -> dict[str, Any]:
    """``histogram`` (chunks by token count) in buckets of equal width over 1 to ``max_tokens``:
    ``{"bucket_tokens": W, "chunks": [n0, n1, ...]}``, bucket ``i`` counting the chunks of
    ``i*W + 1`` to ``(i+1)*W`` tokens (a count of 0 in the first, counts over the budget in more
    buckets after the last); ``W`` is ``max_tokens / HISTOGRAM_BUCKETS`` rounded up."""
    width = max(1, math.ceil(max_tokens / HISTOGRAM_BUCKETS))
    top = max(max_tokens, len(histogram) - 1)
    buckets = np.zeros(math.ceil(top / width), dtype=np.int64)
    if len(histogram):
        counts = np.arange(len(histogram))
        np.add.at(buckets, np.maximum(counts - 1, 0) // width, histogram)
    return {"bucket_tokens": width, "chunks": [int(n) for n in buckets]}


def recount_engines(spec: Mapping[str, Any]) -> dict[str, str]:
    """``{"mode", "chunk_engine", "recount_engine"}``: the configuration's ``recount`` and what
    counted the chunkers' tokens and what recounted them in validation, as the launching process
    builds the tokenizer (a BPE engine, ``bpe-openai`` or ``tiktoken``, else the tokenizer's class:
    ``WordPieceTokenizer`` counts from remembered words, ``HuggingFaceTokenizer`` by whole encodes)."""
    from transforms.beam import shared_tokenizer
    from transforms.tokenizers import recount_tokenizer

    mode = spec.get("recount", "independent")
    tokenizer = shared_tokenizer(spec["tokenizer"])
    recount = tokenizer if mode == "same-engine" else recount_tokenizer(tokenizer)
    return {
        "mode": mode,
        "chunk_engine": getattr(tokenizer, "engine", type(tokenizer).__name__),
        "recount_engine": getattr(recount, "engine", type(recount).__name__),
    }


def build_report(
    result,
    *,
    output: str,
    spec: Mapping[str, Any],
    tokenizer_identity: str,
    wall_seconds: float,
    previous: str | None = None,
    max_dead_letter_fraction: float = DEFAULT_MAX_DEAD_LETTER_FRACTION,
) -> dict[str, Any]:
    """Assemble the contract's report from a finished pipeline result.

    Keys: the document and chunk counters, ``dead_letter_by_reason``, ``chunks_by_chunker``,
    ``structure`` (merged, split, oversized and small chunks and excluded characters, summed
    over the documents a structure chunker chunked in this run: not over documents kept
    unchanged from ``--previous``),
    ``model`` (``calls``, ``cache_hits``, ``fallbacks`` of model-backed chunkers),
    ``token_count`` (``min``, ``p50``, ``p95``, ``max`` of accepted chunks), ``token_histogram``
    (their token counts in buckets, ``bucket_tokens`` wide: ``chunks``), ``tokenizer``,
    ``recount`` (:func:`recount_engines`), ``max_tokens``, ``wall_seconds``, ``version``, ``output``, and ``incremental`` (``None``
    without ``--previous``; else the previous directory, the documents chunked because they
    were new or changed, the documents left without chunks and the chunk ids listed in
    ``deleted/``), and last ``verdict`` (:func:`pipelines.verdict.verdict` at
    ``max_dead_letter_fraction``: the exit status and why). Maps are sorted by key.
    """
    counters = counter_totals(result)
    report: dict[str, Any] = {name: counters.get(name, 0) for name in _DOCUMENT_COUNTERS}
    report["dead_letter_by_reason"] = _by_suffix(counters, "dead_letter")
    report["dead_letter_rows"] = sum(report["dead_letter_by_reason"].values())
    report["chunks_by_chunker"] = _by_suffix(counters, "chunks_by_chunker")
    report["structure"] = {name: counters.get(f"structure.{name}", 0) for name in sorted(STRUCTURE_COUNTERS)}
    # Model-backed chunkers: requests sent (retries included), answers from the response caches,
    # documents split locally after a transient model failure (or a refiner's fallback).
    report["model"] = {name: counters.get(f"model.{name}", 0) for name in ("calls", "cache_hits", "fallbacks")}
    report["incremental"] = None if previous is None else _incremental(counters, previous)
    report["token_count"], report["token_histogram"] = _token_stats(f"{output}/chunks/*.parquet", spec["max_tokens"])
    report["tokenizer"] = tokenizer_identity
    report["recount"] = recount_engines(spec)
    report["max_tokens"] = spec["max_tokens"]
    report["wall_seconds"] = round(wall_seconds, 3)
    report["version"] = transforms.__version__
    report["output"] = {
        "chunks": f"{output}/chunks/",
        "dead_letter": f"{output}/dead_letter/",
        "documents": f"{output}/documents/",
        **({"deleted": f"{output}/deleted/"} if previous is not None else {}),
    }
    report["verdict"] = verdict(report, max_dead_letter_fraction)
    return report


def _by_suffix(counters: Mapping[str, int], prefix: str) -> dict[str, int]:
    """The counters named ``PREFIX.NAME``, as ``{NAME: value}`` sorted by name."""
    return {name.split(".", 1)[1]: value for name, value in sorted(counters.items()) if name.startswith(prefix + ".")}


def _incremental(counters: Mapping[str, int], previous: str) -> dict[str, Any]:
    """The report's ``incremental`` section: the previous run's folder and the ``incremental.*`` counters."""
    return {
        "previous": previous,
        **{
            name: counters.get(f"incremental.{name}", 0)
            for name in ("documents_new", "documents_changed", "documents_deleted", "chunks_deleted")
        },
    }


def write_report(report: Mapping[str, Any], path: str) -> None:
    """Write ``report`` as indented JSON to ``path`` on any Beam filesystem."""
    with FileSystems.create(path) as f:
        f.write((json.dumps(report, indent=2, sort_keys=False) + "\n").encode("utf-8"))
