"""The run's verdict: exit status 3 when the documents dead-lettered pass --max-dead-letter-fraction."""

from __future__ import annotations

import pytest

from pipelines.options import OptionError, parse_max_dead_letter_fraction
from pipelines.verdict import DEFAULT_MAX_DEAD_LETTER_FRACTION, percent, verdict, verdict_line


def _report(read: int, dead: int, reasons: dict[str, int] | None = None) -> dict:
    return {"documents_read": read, "documents_dead_lettered": dead, "dead_letter_by_reason": reasons or {}}


def test_a_run_that_dead_lettered_every_document_exits_3_and_says_why():
    report = _report(50, 50, {"unsupported_content_format": 50})
    report["verdict"] = verdict(report, 0.1)
    assert report["verdict"] == {
        "exit_status": 3,
        "dead_letter_fraction": 1.0,
        "max_dead_letter_fraction": 0.1,
        "over_dead_letter_threshold": True,
        "most_common_by_reason": {"unsupported_content_format": 50},
    }
    assert verdict_line(report) == (
        "rechunk: 50 of 50 documents (100%) dead-lettered, over --max-dead-letter-fraction 0.1: exit status 3; "
        "most common reasons: unsupported_content_format 50"
    )


def test_duplicates_of_a_corpus_matched_three_times_count_as_dead_lettered():
    """Every row of a duplicated id is dead-lettered: 1,097 of 1,098 is over any threshold under 1."""
    report = _report(1098, 1097, {"duplicate_document_id": 1097})
    report["verdict"] = verdict(report, DEFAULT_MAX_DEAD_LETTER_FRACTION)
    assert report["verdict"]["exit_status"] == 3
    assert verdict_line(report).startswith("rechunk: 1,097 of 1,098 documents (99.9%) dead-lettered, over ")


@pytest.mark.parametrize(
    "read, dead, limit, status",
    [
        (10, 1, 0.1, 0),  # at the threshold: not over it
        (10, 2, 0.1, 3),
        (1000, 101, 0.1, 3),
        (50, 50, 1.0, 0),  # 1: never
        (10, 1, 0.0, 3),  # 0: any document dead-lettered
        (10, 0, 0.0, 0),
        (0, 0, 0.0, 0),  # nothing read: fraction 0
    ],
)
def test_the_threshold_is_exceeded_only_by_a_larger_fraction(read, dead, limit, status):
    found = verdict(_report(read, dead), limit)
    assert found["exit_status"] == status and found["over_dead_letter_threshold"] == (status == 3)
    assert (verdict_line({**_report(read, dead), "verdict": found}) is None) == (status == 0)


def test_the_verdict_names_the_three_commonest_reasons_most_rows_first():
    reasons = {"b": 5, "a": 5, "c": 9, "d": 1}
    found = verdict(_report(20, 20, reasons), 0.1)
    assert list(found["most_common_by_reason"].items()) == [("c", 9), ("a", 5), ("b", 5)]


@pytest.mark.parametrize(
    "fraction, shown",
    [(1.0, "100%"), (0.0, "0%"), (1097 / 1098, "99.9%"), (0.9999, "99.99%"), (0.012345, "1.2%"), (1e-5, "0.001%")],
)
def test_percent_never_rounds_to_all_or_nothing(fraction, shown):
    assert percent(fraction) == shown


@pytest.mark.parametrize(
    "value, expected", [(None, DEFAULT_MAX_DEAD_LETTER_FRACTION), ("0", 0.0), ("1", 1.0), ("0.25", 0.25)]
)
def test_max_dead_letter_fraction_parses(value, expected):
    assert parse_max_dead_letter_fraction(value) == expected


@pytest.mark.parametrize(
    "value, hint",
    [("1.5", ""), ("-0.1", ""), ("nan", ""), ("abc", ""), ("10%", " (for 10% write 0.1)")],
)
def test_a_bad_max_dead_letter_fraction_is_one_option_error(value, hint):
    with pytest.raises(OptionError) as err:
        parse_max_dead_letter_fraction(value)
    assert str(err.value) == (
        "--max-dead-letter-fraction must be a number from 0 to 1 (1: never exit 3 for dead letters), "
        f"got {value!r}{hint}"
    )
