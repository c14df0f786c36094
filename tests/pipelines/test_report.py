"""report.json's token statistics: a histogram per row group gives pyarrow's exact quantiles."""

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
    stats = _token_stats(f"{tmp_path}/*.parquet")
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
        "rechunk: report in /o/report.json (1.5 s)",
    ]
