"""Progress lines: documents done of the job's total, percent, rate and time left (a fake clock)."""

from __future__ import annotations

import pytest

from transforms.progress import ProgressLog, format_duration, progress_line


def _log(interval: float, total: int | None):
    now = [0.0]
    lines: list[str] = []
    return ProgressLog(interval, documents_total=total, clock=lambda: now[0], log=lines.append), now, lines


def test_progress_lines_give_the_total_percent_rate_and_time_left():
    progress, now, lines = _log(30, 1_000_000)
    now[0] = 5.0  # the worker waited (the duplicate count) before its first document
    progress.add(documents=1, chunks=4)
    now[0] = 34.9
    progress.add(documents=1, chunks=4)
    assert lines == []  # under 30 s since the first document
    now[0] = 35.0
    progress.add(documents=12_343, chunks=47_992)
    # 12,344 documents in the 30 s since the first: 411.5 a second; 987,655 left
    assert lines == [
        "progress: 12,345 of 1,000,000 documents (1.2%), 411 documents/s, 48,000 chunks, "
        "about 40 min 0 s left (this worker)"
    ]
    now[0] = 50.0
    progress.add(documents=10)
    assert len(lines) == 1  # 15 s since the last line
    now[0] = 65.0
    progress.add()
    assert lines[1].startswith("progress: 12,355 of 1,000,000 documents (1.2%), 206 documents/s, 48,000 chunks, ")


def test_without_a_total_the_line_gives_counts_and_rate_only():
    progress, now, lines = _log(10, None)
    progress.add(documents=1)
    now[0] = 10.0
    progress.add(documents=4, chunks=9)
    assert lines == ["progress: 5 documents, 0.4 documents/s, 9 chunks (this worker)"]


def test_the_time_left_is_unknown_until_a_rate_is_known_and_ends_at_the_total():
    assert (
        progress_line(0, 0, None, 10)
        == "progress: 0 of 10 documents (0.0%), rate unknown, 0 chunks, time left unknown (this worker)"
    )
    assert progress_line(3, 6, 0.0, 10).endswith(", time left unknown (this worker)")
    assert progress_line(10, 6, 2.0, 10) == (
        "progress: 10 of 10 documents (100.0%), 2.0 documents/s, 6 chunks, the job's total reached (this worker)"
    )
    assert progress_line(0, 0, None, 0).startswith("progress: 0 of 0 documents, ")


def test_a_worker_of_several_estimates_from_its_own_rate_against_the_jobs_total():
    """Two workers at 100 documents/s each: each line says the rest would take this worker alone
    (the remaining 1,800 at 100/s: 18 s), an upper bound of the job's 9 s."""
    assert progress_line(100, 0, 100.0, 2_000).endswith("about 19 s left (this worker)")


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0, "0 s"),
        (0.4, "0 s"),
        (46, "46 s"),
        (59.6, "1 min 0 s"),
        (286, "4 min 46 s"),
        (3599, "59 min 59 s"),
        (3600, "1 h 0 min"),
        (7500, "2 h 5 min"),
        (180_000, "50 h 0 min"),
        (-3, "0 s"),
    ],
)
def test_durations_read_as_people_say_them(seconds, text):
    assert format_duration(seconds) == text


def test_a_negative_interval_or_total_is_refused():
    with pytest.raises(ValueError, match="interval_seconds must be >= 0, got -1"):
        ProgressLog(-1)
    with pytest.raises(ValueError, match="documents_total must be >= 0, got -2"):
        ProgressLog(1, documents_total=-2)


def test_an_interval_of_0_logs_nothing():
    progress, now, lines = _log(0, 10)
    now[0] = 1e9
    progress.add(documents=5)
    assert lines == [] and progress.documents == 5


def test_the_jobs_total_is_the_rows_of_the_input_footers(tmp_path):
    """parse_job sums the matched files' rows from their Parquet footers, before the pipeline."""
    from pipelines.rechunk import parse_job
    from tests.conftest import write_documents

    for name, n in (("a", 3), ("b", 4)):
        write_documents(tmp_path / "in" / f"{name}.parquet", [{"id": f"{name}{i}", "content": "x"} for i in range(n)])
    job = parse_job(["--input", f"{tmp_path}/in/*.parquet", "--output", str(tmp_path / "out")])
    assert job.documents_total == 7
