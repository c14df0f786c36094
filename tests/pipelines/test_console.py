"""What the launcher prints of Beam's logs and of a runner's errors."""

from __future__ import annotations

import logging

from pipelines.console import BeamTracebackFilter
from pipelines.options import worker_error_line

WORKER_ERROR = """Traceback (most recent call last):
  File "apache_beam/runners/common.py", line 1569, in _invoke_bundle_method
  File "transforms/stores/pgvector.py", line 279, in upsert
transforms.stores.base.StoreError: table#chunks: upsert failed: violates check constraint "c"

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "apache_beam/runners/worker/sdk_worker.py", line 310, in _execute
transforms.stores.base.StoreError: table#chunks: upsert failed: violates check constraint "c" [while running 'Upsert']
"""


def _record(name: str, level: int, message: str, *, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            import sys

            exc_info = sys.exc_info()
    return logging.LogRecord(name, level, __file__, 1, message, (), exc_info)


def test_a_workers_traceback_gives_the_message_of_the_last_exception_it_names():
    assert worker_error_line(WORKER_ERROR) == (
        "table#chunks: upsert failed: violates check constraint \"c\" [while running 'Upsert']"
    )


def test_an_error_without_a_traceback_is_given_on_one_line():
    assert worker_error_line("no such file:\n  a.parquet", 200) == "no such file: a.parquet"
    assert worker_error_line("x" * 500, 10) == "x" * 10


def test_beams_tracebacks_are_left_out_and_its_warnings_and_other_errors_pass():
    keep = BeamTracebackFilter().filter
    assert not keep(_record("apache_beam.runners.common", logging.ERROR, "bundle failed", exc=True))
    forwarded = "Worker: severity: ERROR message: " + WORKER_ERROR
    assert not keep(_record("apache_beam.runners.portability.local_job_service", logging.ERROR, forwarded))
    assert keep(_record("apache_beam.runners.common", logging.WARNING, "a warning", exc=True))
    assert keep(_record("apache_beam.io.filesystem", logging.ERROR, "an error without a traceback"))
    assert keep(_record("rechunk", logging.ERROR, "ours", exc=True))
