"""report.html: one self-contained page (no script, no outside resource), every text escaped,
checked as parsed HTML and as rendered by headless Chromium (Debian's package)."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipelines.report_html import render_report_html, write_report_html

PLANTED = '<script>document.title="pwned"</script><img src=x onerror="document.title=1">'
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def _report(**changes) -> dict:
    report = {
        "documents_read": 1098,
        "documents_chunked": 1,
        "documents_partially_rejected": 0,
        "documents_dead_lettered": 1097,
        "documents_skipped_unchanged": 0,
        "chunks_written": 12,
        "chunks_rejected": 0,
        "dead_letter_by_reason": {"duplicate_document_id": 1096, PLANTED: 1},
        "dead_letter_rows": 1097,
        "chunks_by_chunker": {"StructureAwareChunker": 9, PLANTED: 3},
        "structure": {"merged_chunks": 2, "split_chunks": 0},
        "model": {"calls": 0, "cache_hits": 0, "fallbacks": 0},
        "incremental": {"previous": f"/runs/{PLANTED}", "documents_new": 1, "documents_changed": 0},
        "token_count": {"min": 3, "p50": 120, "p95": 500, "max": 510},
        "token_histogram": {"bucket_tokens": 16, "chunks": [1, 0, 0, 0, 0, 0, 0, 4, 3] + [0] * 21 + [2, 2]},
        "tokenizer": f"hf:/models/{PLANTED}:0123abcd",
        "max_tokens": 512,
        "wall_seconds": 12.5,
        "version": "0.2.0",
        "output": {"chunks": "/runs/night/chunks/", "dead_letter": f"/runs/night/{PLANTED}/"},
        "verdict": {
            "exit_status": 3,
            "dead_letter_fraction": 0.999089,
            "max_dead_letter_fraction": 0.1,
            "over_dead_letter_threshold": True,
            "most_common_by_reason": {"duplicate_document_id": 1096, PLANTED: 1},
        },
        PLANTED: PLANTED,  # a key this page does not know
    }
    report.update(changes)
    return report


class _Elements(HTMLParser):
    """The start tags of a page with their attributes, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parsed(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    return parser


def test_untrusted_text_in_the_report_is_escaped_everywhere():
    """Reason codes, chunker names, paths, the tokenizer and unknown keys come from the run's input
    and configuration: the page shows them as text, and no element or attribute comes of them."""
    page = render_report_html(_report())
    parsed = _parsed(page)
    assert not [tag for tag, _ in parsed.tags if tag in ("script", "img")]
    assert not [attrs for _, attrs in parsed.tags if "onerror" in attrs]
    text = "".join(parsed.text)
    assert text.count(PLANTED) == 6  # two reasons (table, verdict), chunker, previous, tokenizer, folder
    assert text.count(json.dumps(PLANTED)) == 2  # the unknown key and its value, as JSON
    assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in page


def test_the_page_needs_nothing_outside_itself():
    """No script, stylesheet, font, image or frame to fetch, and a policy forbidding them."""
    page = render_report_html(_report())
    parsed = _parsed(page)
    tags = {tag for tag, _ in parsed.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "image", "use", "audio", "video"}
    assert not [a for _, attrs in parsed.tags for a in attrs if a in ("src", "href", "xlink:href", "srcset")]
    assert "url(" not in page and "@import" not in page
    policy = [attrs["content"] for tag, attrs in parsed.tags if tag == "meta" and attrs.get("http-equiv")]
    assert policy and "default-src 'none'" in policy[0] and "script-src" not in policy[0]


def test_the_histogram_has_a_bar_per_bucket_and_the_verdict_says_why():
    report = _report()
    page = render_report_html(report)
    bars = [attrs for tag, attrs in _parsed(page).tags if tag == "rect" and attrs.get("class") == "bar"]
    assert len(bars) == len(report["token_histogram"]["chunks"]) == 32
    heights = [float(b["height"]) for b in bars]
    assert heights[7] == max(heights) and heights[1] == 0.0 and heights[8] == pytest.approx(heights[7] * 3 / 4)
    assert "Exit status 3: 1,097 of 1,098 documents (99.9%) dead-lettered, over --max-dead-letter-fraction 0.1" in page


def test_a_report_without_chunks_or_sections_still_renders():
    page = render_report_html({"documents_read": 0, "token_histogram": {"bucket_tokens": 16, "chunks": [0] * 32}})
    assert "No chunk written." in page and "<rect" not in page
    assert render_report_html({}).startswith("<!DOCTYPE html>")


def test_the_page_is_written_whole_under_its_name(tmp_path):
    write_report_html(_report(), str(tmp_path / "report.html"))
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == render_report_html(_report())


def _chromium(url: str, profile: Path, *flags: str) -> subprocess.CompletedProcess:
    """Headless Chromium, offline: no network services, no proxy, every host name unresolved."""
    assert CHROMIUM is not None
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-proxy-server",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={profile}",
        *flags,
        url,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install chromium)")
def test_a_real_runs_report_html_renders_offline_in_chromium(tmp_path, capsys):
    """A run's report.html, opened offline by Chromium: its histogram's bars are the report's
    buckets; a planted script (in the untrusted text of another report) does not run."""
    from pipelines.rechunk import main
    from tests.conftest import REPO

    out = tmp_path / "out"
    assert main(["--input", str(REPO / "sample" / "docs.parquet"), "--output", str(out)]) == 0
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    dom = _chromium((out / "report.html").as_uri(), tmp_path / "profile", "--dump-dom").stdout
    bars = [attrs for tag, attrs in _parsed(dom).tags if tag == "rect" and attrs.get("class") == "bar"]
    assert len(bars) == len(report["token_histogram"]["chunks"]) and sum(report["token_histogram"]["chunks"]) == 20
    assert "Committed, exit status 0" in dom

    write_report_html(_report(), str(tmp_path / "planted.html"))
    dom = _chromium((tmp_path / "planted.html").as_uri(), tmp_path / "profile", "--dump-dom").stdout
    parsed = _parsed(dom)
    titles = [t for t in parsed.text if t.startswith("rechunk report")]
    assert titles[0] == "rechunk report: /runs/night"  # no planted script set document.title
    assert not [tag for tag, _ in parsed.tags if tag in ("script", "img")]
    assert PLANTED in "".join(parsed.text)
