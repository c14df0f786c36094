"""The HTML normalizer's windowed reading agrees with its whole reading on generated pages (the
differential check of ``benchmarks/differential/html_stream_fuzz.py``, on a few cases)."""

from __future__ import annotations

from benchmarks.differential import html_stream_fuzz


def test_windowed_html_reading_equals_the_whole_reading_on_generated_pages(tmp_path, capsys):
    fails = tmp_path / "fails.jsonl"
    argv = ["--seed", "7", "--generated", "15", "--mutated", "0", "--corpus", "", "--chunks", "2", "--out", str(fails)]
    assert html_stream_fuzz.main(argv) == 0
    assert '"generated": {"cases": 15' in capsys.readouterr().out
    assert fails.read_text() == ""
