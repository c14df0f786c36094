"""report.json's token statistics (a histogram per row group gives pyarrow's exact quantiles), its
bucketed histogram, and the summary lines."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipelines.report import _token_stats


@pytest.mark.parametrize("seed", range(8))
def test_token_stats_equal_pyarrow_quantiles_over_all_files(tmp_path, seed):
    rng = random.Random(seed)
    values: list[int] = []
    for i in range(rng.randint(1, 3)):
        part = [rng.randint(0, rng.choice([3, 512, 9000])) for _ in range(rng.randint(0, 400))]
        values += part
        pq.write_table(
            pa.table({"token_count": pa.array(part, pa.int32())}),
            tmp_path / f"c{i}.parquet",
            row_group_size=rng.randint(1, 64),
        )
    stats, buckets = _token_stats(f"{tmp_path}/*.parquet", 512)
    assert sum(buckets["chunks"]) == len(values)
    if not values:
        assert stats == {"min": None, "p50": None, "p95": None, "max": None}
        return
    p50, p95 = pc.quantile(pa.array(values, pa.int32()), q=[0.5, 0.95], interpolation="lower").to_pylist()
    assert stats == {"min": min(values), "p50": int(p50), "p95": int(p95), "max": max(values)}


def test_the_summary_separates_thousands_as_the_progress_lines_do():
    from pipelines.rechunk import summary

    report = {
        "documents_read": 1234567,
        "documents_chunked": 1234000,
        "documents_dead_lettered": 567,
        "documents_partially_rejected": 1,
        "chunks_written": 48384,
        "max_tokens": 1000000,
        "tokenizer": "t",
        "token_count": {"min": 1, "p50": 2, "p95": 1056, "max": 8100},
        "dead_letter_rows": 1001,
        "dead_letter_by_reason": {"null_content": 1001},
        "wall_seconds": 1.5,
        "documents_skipped_unchanged": 1000,
        "incremental": {
            "previous": "/p",
            "chunks_deleted": 1,
            "documents_new": 2000,
            "documents_changed": 3,
            "documents_deleted": 1,
        },
    }
    assert summary(report, "/o").splitlines() == [
        "rechunk: 1,234,567 documents read, 1,234,000 chunked, 567 dead-lettered (1 partly)",
        "rechunk: 48,384 chunks written to /o/chunks/ (tokens min 1, p50 2, p95 1,056, max 8,100 of max 1,000,000, t)",
        "rechunk: 1,001 dead-letter rows in /o/dead_letter/ (null_content 1,001)",
        "rechunk: 1,000 unchanged documents kept from /p without chunking (2,000 new, 3 changed, 1 deleted); "
        "1 previous chunk id listed in /o/deleted/",
        "rechunk: report in /o/report.json and report.html (1.5 s)",
    ]


@pytest.mark.parametrize("max_tokens", [1, 7, 32, 512, 1000])
def test_the_token_histogram_buckets_every_count_once_over_the_budget(tmp_path, max_tokens):
    """Bucket i of ``token_histogram`` counts the chunks of i*W+1 to (i+1)*W tokens; the buckets
    cover 1 to the budget (at most HISTOGRAM_BUCKETS of them), and a count over it gets more."""
    from pipelines.report import HISTOGRAM_BUCKETS

    rng = random.Random(max_tokens)
    values = [rng.randint(1, max_tokens) for _ in range(300)] + [max_tokens, 1]
    pq.write_table(pa.table({"token_count": pa.array(values, pa.int32())}), tmp_path / "c.parquet", row_group_size=50)
    _, histogram = _token_stats(f"{tmp_path}/*.parquet", max_tokens)
    width, chunks = histogram["bucket_tokens"], histogram["chunks"]
    assert len(chunks) <= HISTOGRAM_BUCKETS and (len(chunks) - 1) * width < max_tokens <= len(chunks) * width
    assert chunks == [sum(i * width < v <= (i + 1) * width for v in values) for i in range(len(chunks))]
    pq.write_table(pa.table({"token_count": pa.array([max_tokens * 3], pa.int32())}), tmp_path / "d.parquet")
    _, over = _token_stats(f"{tmp_path}/*.parquet", max_tokens)
    assert sum(over["chunks"]) == len(values) + 1 and len(over["chunks"]) == -(-max_tokens * 3 // width)


def test_the_token_histogram_of_no_chunk_is_empty_buckets(tmp_path):
    pq.write_table(pa.table({"token_count": pa.array([], pa.int32())}), tmp_path / "c.parquet")
    stats, histogram = _token_stats(f"{tmp_path}/*.parquet", 512)
    assert stats["max"] is None and histogram == {"bucket_tokens": 16, "chunks": [0] * 32}
