"""The HTML benchmark scripts run (on tiny inputs) and measure what they say."""

from __future__ import annotations

import sys

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "benchmarks" / "differential"))


def test_big_pages_are_one_big_block_each(tmp_path):
    import html_big_gen

    from transforms.structure.normalizers.html import normalize_html

    html_big_gen.main(["3000", str(tmp_path)])
    kinds = {}
    for name in ("html_list", "html_table", "html_paragraphs"):
        rows = pq.read_table(tmp_path / f"{name}.parquet").to_pylist()
        assert len(rows) == 1 and rows[0]["content_format"] == "html" and rows[0]["metadata"] is None
        assert 3000 <= len(rows[0]["content"]) < 3200
        kinds[name] = [block.kind for block in normalize_html(rows[0]["content"]).blocks]
    assert kinds["html_list"] == ["heading", "list"]  # the <title>, then one list
    assert kinds["html_table"] == ["table"]
    assert kinds["html_paragraphs"][0] == "heading" and set(kinds["html_paragraphs"][1:]) == {"paragraph"}


@pytest.mark.slow
def test_speed_benchmark_runs_against_this_checkout(tmp_path, capsys):
    import html_big_gen
    import html_speed

    html_big_gen.main(["2000", str(tmp_path)])
    assert (
        html_speed.main(["--baseline", str(REPO), "--rounds", "1", "--input", str(tmp_path / "html_list.parquet")]) == 0
    )
    out = capsys.readouterr().out
    assert "1 pages" in out and "branch, windows forced:" in out


@pytest.mark.slow
def test_differential_fuzzer_runs_a_few_cases(tmp_path, capsys):
    import html_stream_fuzz

    fails = tmp_path / "fails.jsonl"
    argv = ["--seed", "7", "--generated", "15", "--mutated", "0", "--corpus", "", "--chunks", "2", "--out", str(fails)]
    assert html_stream_fuzz.main(argv) == 0
    assert '"generated": {"cases": 15' in capsys.readouterr().out
    assert fails.read_text() == ""
