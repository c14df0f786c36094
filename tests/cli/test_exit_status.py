"""Exit statuses for operators: a committed run that dead-lettered too much exits 3 and says why;
report.json records the threshold and the verdict."""

from __future__ import annotations

import json
import shutil

from pipelines.rechunk import main
from tests.conftest import REPO, write_documents

SAMPLE = REPO / "sample" / "docs.parquet"


def test_a_run_that_chunks_nothing_exits_3_with_the_reason_last(tmp_path, capsys):
    """50 of 50 documents of a format no chunker knows: committed (report written), exit status 3."""
    docs = [{"id": f"d{i}", "content": f"Text {i}.", "content_format": "latex"} for i in range(50)]
    write_documents(tmp_path / "in" / "docs.parquet", docs)
    out = tmp_path / "out"
    assert main(["--input", str(tmp_path / "in" / "docs.parquet"), "--output", str(out)]) == 3
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == (
        "rechunk: 50 of 50 documents (100%) dead-lettered, over --max-dead-letter-fraction 0.1: exit status 3; "
        "most common reasons: unsupported_content_format 50"
    )
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"]["exit_status"] == 3 and report["verdict"]["max_dead_letter_fraction"] == 0.1
    assert (out / "report.html").is_file()


def test_formats_written_as_their_common_names_are_chunked(tmp_path, capsys):
    """``md``, ``HTML``, ``txt``: the formats' other names and letter case, chunked (exit status 0)."""
    names = ["md", "HTML", "txt", "Markdown", " htm "]
    docs = [{"id": f"d{i}", "content": f"# Title {i}\n\nText {i}.", "content_format": names[i % 5]} for i in range(50)]
    write_documents(tmp_path / "in" / "docs.parquet", docs)
    out = tmp_path / "out"
    assert main(["--input", str(tmp_path / "in" / "docs.parquet"), "--output", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["documents_dead_lettered"] == 0 and report["documents_chunked"] == 50


def test_a_glob_matching_three_copies_of_a_corpus_exits_3(tmp_path, capsys):
    """Every row of an id that occurs more than once is dead-lettered, and counts against the threshold."""
    for copy in ("a", "b", "c"):
        (tmp_path / "in" / copy).mkdir(parents=True)
        shutil.copy(SAMPLE, tmp_path / "in" / copy / "docs.parquet")
    assert main(["--input", f"{tmp_path}/in/*/docs.parquet", "--output", str(tmp_path / "out")]) == 3
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("rechunk: 21 of 21 documents (100%) dead-lettered, over --max-dead-letter-fraction 0.1")
    assert last.endswith("most common reasons: duplicate_document_id 21")


def test_a_threshold_of_1_never_exits_3(tmp_path, capsys):
    write_documents(tmp_path / "in" / "docs.parquet", [{"id": "a", "content": "x", "content_format": "latex"}])
    argv = ["--input", str(tmp_path / "in" / "docs.parquet"), "--output", str(tmp_path / "out")]
    assert main([*argv, "--max-dead-letter-fraction", "1"]) == 0
    assert "exit status" not in capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verdict"]["over_dead_letter_threshold"] is False
    assert report["verdict"]["dead_letter_fraction"] == 1.0


def test_a_bad_max_dead_letter_fraction_exits_2_before_the_pipeline(tmp_path, capsys):
    write_documents(tmp_path / "in" / "docs.parquet", [{"id": "a", "content": "x"}])
    argv = ["--input", str(tmp_path / "in" / "docs.parquet"), "--output", str(tmp_path / "out")]
    assert main([*argv, "--max-dead-letter-fraction", "10%"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "rechunk: error: --max-dead-letter-fraction must be a number from 0 to 1 (1: never exit 3 for dead "
        "letters), got '10%' (for 10% write 0.1)"
    ]
    assert not (tmp_path / "out").exists()
