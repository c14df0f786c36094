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
        pq.write_table(pa.table({"token_count": pa.array(part, pa.int32())}), tmp_path / f"c{i}.parquet",
                       row_group_size=rng.randint(1, 64))
    stats = _token_stats(f"{tmp_path}/*.parquet")
    if not values:
        assert stats == {"min": None, "p50": None, "p95": None, "max": None}
        return
    p50, p95 = pc.quantile(pa.array(values, pa.int32()), q=[0.5, 0.95], interpolation="lower").to_pylist()
    assert stats == {"min": min(values), "p50": int(p50), "p95": int(p95), "max": max(values)}
