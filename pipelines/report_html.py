"""report.html: the run's report as one self-contained page a person reads in a browser.

Beam-free but for the write. :func:`render_report_html` turns a report (``pipelines.report``'s
dict, as in report.json) into HTML with its CSS inline and its histogram as inline SVG: no
script, no font, no image, no link to anything outside the file, so it opens offline, from a
bucket's download or a mail attachment. A Content-Security-Policy in the page forbids scripts and
every outside resource as well. Every text from the report (paths, chunker names, reason codes,
the tokenizer's identity, keys not known here) is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pipelines.storage import write_atomic
from pipelines.verdict import percent

__all__ = ["render_report_html", "write_report_html"]

#: Keys the page shows in its own sections; any other key of the report goes under "More figures".
_SHOWN = frozenset(
    (
        "documents_read",
        "documents_chunked",
        "documents_partially_rejected",
        "documents_dead_lettered",
        "documents_skipped_unchanged",
        "chunks_written",
        "chunks_rejected",
        "dead_letter_rows",
        "dead_letter_by_reason",
        "chunks_by_chunker",
        "structure",
        "model",
        "incremental",
        "embedding",
        "vector_store",
        "token_count",
        "token_histogram",
        "tokenizer",
        "max_tokens",
        "wall_seconds",
        "version",
        "output",
        "verdict",
    )
)

_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2430;
       background: #f6f7f9; margin: 0; }
main { max-width: 980px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #d8dde4; padding-bottom: 4px; }
.sub { color: #5a6472; margin: 0 0 16px; overflow-wrap: anywhere; }
.verdict { padding: 12px 16px; border-radius: 6px; font-weight: 600; overflow-wrap: anywhere; }
.ok { background: #e3f4e8; border: 1px solid #8ccf9f; color: #0f5223; }
.bad { background: #fde8e8; border: 1px solid #e59a9a; color: #7a1212; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 14px; }
.card { background: #fff; border: 1px solid #d8dde4; border-radius: 6px; padding: 8px 14px; min-width: 130px; }
.card b { display: block; font-size: 22px; font-variant-numeric: tabular-nums; }
.card span { color: #5a6472; font-size: 13px; }
table { border-collapse: collapse; background: #fff; border: 1px solid #d8dde4; min-width: 360px; }
th, td { text-align: left; padding: 4px 12px; border-bottom: 1px solid #eceff3; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { overflow-wrap: anywhere; max-width: 460px; font-family: ui-monospace, Menlo, Consolas, monospace;
          font-size: 13px; }
.meter { display: inline-block; height: 10px; background: #4b7bd1; border-radius: 2px; vertical-align: middle; }
.dl .meter { background: #d0574b; }
.none { color: #5a6472; font-style: italic; }
svg { background: #fff; border: 1px solid #d8dde4; border-radius: 6px; max-width: 100%; height: auto; }
svg text { font: 12px system-ui, sans-serif; fill: #3a4350; }
svg rect.bar { fill: #4b7bd1; }
svg .mark { stroke-width: 1.5; stroke-dasharray: 4 3; }
pre { background: #fff; border: 1px solid #d8dde4; padding: 10px; overflow-x: auto; font-size: 12px; }
footer { margin-top: 32px; color: #5a6472; font-size: 13px; overflow-wrap: anywhere; }
"""

# No script, no outside resource of any kind: only the page's own styles.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def _e(value: Any) -> str:
    """``value`` as escaped text (quotes too: safe in an attribute)."""
    return html.escape(str(value), quote=True)


def _n(value: Any) -> str:
    """A count thousands-separated, a float as given; anything else escaped as text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _e("—" if value is None else value)
    return f"{value:,}" if isinstance(value, int) else _e(f"{value:,.3f}".rstrip("0").rstrip("."))


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else empty (a report written by hand may lack a section)."""
    return value if isinstance(value, Mapping) else {}


def render_report_html(report: Mapping[str, Any]) -> str:
    """The page for ``report`` (a report.json dict): a complete HTML document, as text.

    Sections: the verdict, the document and chunk counts, the token-count histogram (an SVG bar
    per bucket of ``token_histogram``), dead-letter rows by reason, chunks by chunker, the
    structure and model counters, the incremental run, timings and settings, and any other key of
    the report as JSON. Missing keys are shown as absent, never an error.
    """
    output = _mapping(report.get("output"))
    where = output.get("chunks", "")
    title = f"rechunk report: {str(where).removesuffix('/chunks/')}" if where else "rechunk report"
    body = "\n".join(
        [
            f"<h1>{_e(title)}</h1>",
            f'<p class="sub">rechunk {_e(report.get("version", "?"))} · tokenizer {_e(report.get("tokenizer", "?"))}'
            f" · budget {_n(report.get('max_tokens'))} tokens · {_n(report.get('wall_seconds'))} s</p>",
            _verdict_section(report),
            _cards(report),
            _histogram_section(report),
            _bars_section("Dead-letter rows by reason", _mapping(report.get("dead_letter_by_reason")), "rows", "dl"),
            _bars_section("Chunks by chunker", _mapping(report.get("chunks_by_chunker")), "chunks", ""),
            _table_section("Structure chunkers", _mapping(report.get("structure"))),
            _table_section("Model-backed chunkers", _mapping(report.get("model"))),
            _incremental_section(report.get("incremental")),
            _store_section(report.get("embedding"), report.get("vector_store")),
            _timing_section(report),
            _table_section("Folders written", output, names=True),
            _more_section(report),
            "<footer>Every figure here is in report.json beside this page (docs/output.md says what each means).</footer>",
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style></head>\n"
        f"<body><main>\n{body}\n</main></body></html>\n"
    )


def _verdict_section(report: Mapping[str, Any]) -> str:
    """The banner: committed, or over the dead-letter threshold and why."""
    found = _mapping(report.get("verdict"))
    read, dead = report.get("documents_read", 0), report.get("documents_dead_lettered", 0)
    limit = found.get("max_dead_letter_fraction")
    fraction = found.get("dead_letter_fraction")
    share = percent(fraction) if isinstance(fraction, (int, float)) and 0 <= fraction <= 1 else "?"
    if found.get("over_dead_letter_threshold"):
        reasons = ", ".join(f"{_e(k)} {_n(v)}" for k, v in _mapping(found.get("most_common_by_reason")).items())
        return (
            f'<div class="verdict bad">Exit status {_n(found.get("exit_status"))}: {_n(dead)} of {_n(read)} '
            f"documents ({_e(share)}) dead-lettered, over --max-dead-letter-fraction {_n(limit)}. "
            f"Most common reasons: {reasons or 'none'}.</div>"
        )
    return (
        f'<div class="verdict ok">Committed, exit status {_n(found.get("exit_status", 0))}: {_n(dead)} of {_n(read)} '
        f"documents ({_e(share)}) dead-lettered, within --max-dead-letter-fraction {_n(limit)}.</div>"
    )


def _cards(report: Mapping[str, Any]) -> str:
    """The counts, one card each."""
    cards = (
        ("documents_read", "documents read"),
        ("documents_chunked", "chunked"),
        ("documents_dead_lettered", "dead-lettered"),
        ("documents_partially_rejected", "partly rejected"),
        ("documents_skipped_unchanged", "kept unchanged"),
        ("chunks_written", "chunks written"),
        ("chunks_rejected", "chunks rejected"),
        ("dead_letter_rows", "dead-letter rows"),
    )
    items = "".join(
        f'<div class="card"><b>{_n(report.get(key))}</b><span>{_e(label)}</span></div>' for key, label in cards
    )
    return f'<h2>Counts</h2><div class="cards">{items}</div>'


def _histogram_section(report: Mapping[str, Any]) -> str:
    """The token-count histogram of the written chunks, with p50, p95 and the budget marked."""
    histogram = _mapping(report.get("token_histogram"))
    counts = [c if isinstance(c, int) and c >= 0 else 0 for c in histogram.get("chunks", [])]
    width = histogram.get("bucket_tokens")
    stats = _mapping(report.get("token_count"))
    line = ", ".join(f"{name} {_n(stats.get(name))}" for name in ("min", "p50", "p95", "max"))
    head = f"<h2>Tokens per chunk</h2><p>{line} · budget {_n(report.get('max_tokens'))}</p>"
    if not counts or not isinstance(width, int) or width < 1 or not sum(counts):
        return head + '<p class="none">No chunk written.</p>'
    return head + _histogram_svg(counts, width, stats, report.get("max_tokens"))


def _histogram_svg(counts: list[int], width: int, stats: Mapping[str, Any], budget: Any) -> str:
    """An SVG bar chart: one ``rect.bar`` per bucket (``width`` tokens each), a tooltip on each."""
    left, top, plot_w, plot_h = 56, 46, 860, 220
    span = len(counts) * width  # tokens from 0 to the last bucket's end
    peak = max(counts)
    step = plot_w / len(counts)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {left + plot_w + 24} {top + plot_h + 44}" '
        f'width="{left + plot_w + 24}" height="{top + plot_h + 44}" role="img" '
        f'aria-label="chunks by token count, {len(counts)} buckets of {width} tokens">'
    ]
    for i, count in enumerate(counts):
        h = plot_h * count / peak
        x = left + i * step
        parts.append(
            f'<rect class="bar" x="{x + 0.5:.1f}" y="{top + plot_h - h:.1f}" width="{max(step - 1, 0.5):.1f}" '
            f'height="{h:.1f}"><title>{i * width + 1:,}–{(i + 1) * width:,} tokens: {count:,} chunk{"" if count == 1 else "s"}</title></rect>'
        )
    x_axis = top + plot_h
    parts.append(f'<line x1="{left}" y1="{x_axis}" x2="{left + plot_w}" y2="{x_axis}" stroke="#8a94a3"/>')
    for tick in range(5):
        tokens = round(span * tick / 4)
        x = left + plot_w * tick / 4
        parts.append(f'<text x="{x:.1f}" y="{x_axis + 16}" text-anchor="middle">{tokens:,}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{x_axis + 36}" text-anchor="middle">tokens per chunk</text>')
    parts.append(f'<text x="{left - 6}" y="{top + 10}" text-anchor="end">{peak:,}</text>')
    parts.append(f'<text x="{left - 6}" y="{x_axis}" text-anchor="end">0</text>')
    parts.append(
        f'<text x="14" y="{top + plot_h / 2:.0f}" transform="rotate(-90 14 {top + plot_h / 2:.0f})" '
        'text-anchor="middle">chunks</text>'
    )
    # The marks' labels above the plot: p50's left of its line, p95's right of it (each turned
    # to stay inside the chart), the budget's on a row of its own above them.
    for name, color, anchor, row in (
        ("p50", "#1f8a4c", "end", 0),
        ("p95", "#c26b00", "start", 0),
        ("budget", "#b3261e", "end", 1),
    ):
        mark = budget if name == "budget" else stats.get(name)
        if isinstance(mark, int) and not isinstance(mark, bool) and 0 <= mark <= span:
            x = left + plot_w * mark / span
            label = f"{name} {mark:,}"
            wide = 7 * len(label)
            if anchor == "start" and x + wide > left + plot_w + 20:
                anchor = "end"
            elif anchor == "end" and x - wide < 0:
                anchor = "start"
            y = top - 4 - 16 * row
            parts.append(
                f'<line class="mark" x1="{x:.1f}" y1="{y - 10}" x2="{x:.1f}" y2="{x_axis}" stroke="{color}"/>'
                f'<text x="{x + (-3 if anchor == "end" else 3):.1f}" y="{y}" text-anchor="{anchor}" '
                f'style="fill:{color}">{label}</text>'
            )
    parts.append("</svg>")
    return "\n".join(parts)


def _bars_section(title: str, values: Mapping[str, Any], unit: str, kind: str) -> str:
    """A table of name -> count, most first, each with a bar scaled to the largest."""
    head = f"<h2>{_e(title)}</h2>"
    rows = sorted(((str(k), v) for k, v in values.items() if isinstance(v, int)), key=lambda kv: (-kv[1], kv[0]))
    if not rows:
        return head + f'<p class="none">No {_e(unit)}.</p>'
    peak = max(v for _, v in rows) or 1
    body = "".join(
        f'<tr><td class="name">{_e(name)}</td><td class="n">{_n(count)}</td>'
        f'<td><span class="meter" style="width:{240 * count / peak:.0f}px"></span></td></tr>'
        for name, count in rows
    )
    return head + f'<table class="{_e(kind)}"><tr><th>name</th><th>{_e(unit)}</th><th></th></tr>{body}</table>'


def _table_section(title: str, values: Mapping[str, Any], *, names: bool = False) -> str:
    """A two-column table of ``values`` (``names``: values are paths, shown in monospace)."""
    head = f"<h2>{_e(title)}</h2>"
    if not values:
        return head + '<p class="none">None.</p>'
    cell = "name" if names else "n"
    body = "".join(f'<tr><td>{_e(k)}</td><td class="{cell}">{_n(v)}</td></tr>' for k, v in values.items())
    return head + f"<table>{body}</table>"


def _incremental_section(incremental: Any) -> str:
    """What ``--previous`` kept, or that the run had none."""
    if not isinstance(incremental, Mapping):
        return '<h2>Incremental run</h2><p class="none">No --previous: every document was chunked.</p>'
    rows = _rows(incremental.items())
    return f"<h2>Incremental run</h2><table>{rows}</table>"


def _store_section(embedding: Any, store: Any) -> str:
    """What was embedded and what the vector store holds now, or that no store is configured."""
    if not isinstance(store, Mapping) and not isinstance(embedding, Mapping):
        return '<h2>Vector store</h2><p class="none">No embedding: and vector_store: in the configuration.</p>'
    items = [*_mapping(embedding).items(), *_mapping(store).items()]
    return f"<h2>Embedding and vector store</h2><table>{_rows(items)}</table>"


def _rows(items: Iterable[tuple[Any, Any]]) -> str:
    """Table rows of name and value; text values in monospace."""
    return "".join(
        f'<tr><td>{_e(k)}</td><td class="{"n" if isinstance(v, (int, float)) else "name"}">{_n(v)}</td></tr>'
        for k, v in items
    )


def _timing_section(report: Mapping[str, Any]) -> str:
    """The wall time and the documents and chunks per second over it."""
    seconds = report.get("wall_seconds")
    items: list[tuple[str, Any]] = [("wall time (s), option checks and start-up included", seconds)]
    if isinstance(seconds, (int, float)) and seconds > 0:
        for key, label in (("documents_read", "documents/s"), ("chunks_written", "chunks/s")):
            value = report.get(key)
            if isinstance(value, int):
                items.append((label, round(value / seconds, 1)))
    return f"<h2>Timings</h2><table>{_rows(items)}</table>"


def _more_section(report: Mapping[str, Any]) -> str:
    """Keys of the report this page has no section for, as escaped JSON."""
    rest = {k: v for k, v in report.items() if k not in _SHOWN}
    if not rest:
        return ""
    text = json.dumps(rest, indent=2, ensure_ascii=False, default=str)
    return f"<h2>More figures</h2><pre>{_e(text)}</pre>"


def write_report_html(report: Mapping[str, Any], path: str) -> None:
    """Write :func:`render_report_html` of ``report`` to ``path`` (UTF-8), whole or not at all
    (:func:`pipelines.storage.write_atomic`).

    Raises:
        OSError: The file cannot be written; no file is left at ``path``.
    """
    write_atomic(path, render_report_html(report).encode("utf-8"))
