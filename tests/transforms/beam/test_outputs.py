"""The job's counters: increments added up per bundle report what one inc each would."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter

from transforms.beam.outputs import METRICS_NAMESPACE, BundleCounts


class _CountingDoFn(beam.DoFn):
    def start_bundle(self):
        self._counts = BundleCounts()

    def process(self, n):
        self._counts.add([("seen", 1), ("total", n), ("zero", 0)])
        yield n

    def finish_bundle(self):
        self._counts.flush()


def test_bundle_counts_report_the_sums_and_a_zero_counter():
    pipeline = beam.Pipeline()
    _ = pipeline | beam.Create(list(range(10))) | beam.ParDo(_CountingDoFn())
    result = pipeline.run()
    result.wait_until_finish()
    counters = {
        c.key.metric.name: c.committed
        for c in result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))["counters"]
    }
    assert counters == {"seen": 10, "total": 45, "zero": 0}


def test_flush_starts_again_from_nothing(monkeypatch):
    reported: list[tuple[str, int]] = []
    monkeypatch.setattr("transforms.beam.outputs.count", lambda increments: reported.extend(increments))
    counts = BundleCounts()
    counts.add([("a", 2), ("a", 3)])
    counts.flush()
    counts.flush()
    assert reported == [("a", 5)]
