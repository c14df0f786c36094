"""Peak memory of the job: the input once and several times over, and single huge documents.

    python benchmarks/memory.py [--input sample/docs.parquet] [--copies 1 4]
                                [--document-mb 50] [--only corpus|documents] [--documents NAME ...]
                                [--plain-content] [--dead-letter] [--work DIR] [--out FILE.md]
                                [-- JOB OPTIONS]

Every row is a fresh ``python -m pipelines.rechunk`` with the default runner (the in_memory
FnApiRunner: the whole job in one process), measured by ``measurement.measure_process``: wall
time, the job process's peak RSS (its VmHWM, no peak missed) and the report's counts. Inputs are
written to a temporary folder (``--work``, removed afterwards unless given), never to the repository.

(a) ``corpus xN``: the corpus concatenated N times, each copy's ids suffixed ``#k`` (fresh ids,
    so nothing is a duplicate), in row groups of 256 rows like the original. Memory must not
    grow with N.
(b) single documents of ``--document-mb`` million characters (built from the documents of ``--input``), each alone in its file:
    ``markdown`` (the corpus's real Markdown documents joined by blank lines), ``markdown-bmp``
    (the same with every code point above U+FFFF replaced by U+FFFD, so that CPython stores the
    string at 2 bytes a character instead of 4, PEP 393; likewise ``rst-bmp``), ``letters`` (one
    run of a-z without whitespace: a single pre-token), ``words`` (random words of 1 to 10
    letters on one line), and three Markdown documents that are one huge block of short children:
    ``table`` (a pipe table of rows like ``| 7 | word |``), ``list`` (a bullet list of one-word
    items) and ``code`` (one fenced code block of lines like ``x = 7``); the same for HTML and
    reStructuredText: ``html`` and ``rst`` (the corpus's real pages of that format joined, when it
    has any), ``html-list`` (one ``<ul>`` of one-word ``<li>``), ``html-table`` (one ``<table>``
    of two short cells a row) and ``rst-list`` (a bullet list of one-word items). ``tiny`` (one
    short Markdown document) gives the constant: the job's own footprint. The figures to read are
    ``(peak - tiny)`` per character and per byte of the content's UTF-8: the bound asked for is 3.
    Also printed: the UTF-8 bytes and the Python string's own bytes per character
    (``sys.getsizeof`` over the length: 1, 2 or 4, PEP 393).

``--dead-letter`` runs each single document a second time with ``--max-document-chars`` at half
its length, so that it is dead-lettered whole (``document_too_large``, its content the row's
``payload``): the rejection path's peak beside the chunking path's, on the same document.

``--plain-content`` writes the single documents' ``content`` column in plain pages
(``use_dictionary`` for every other column only): pyarrow's default writer keeps a huge first value
in the column's dictionary page, and reading that page holds one more copy of the document
(apache/arrow#38245); the job's own Parquet sink writes its text columns that way. The default
keeps pyarrow's default writer. The corpus copies of (a) are always written with the default.

Prints a Markdown table (and a JSON line per run on stderr); ``--out`` writes it as Markdown.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.measurement import (  # noqa: E402
    SAMPLE,
    header,
    job_command,
    job_input,
    job_options,
    measure_process,
    read_documents,
    shown,
    write_markdown,
)
from pipelines.options import DEFAULT_MAX_DOCUMENT_CHARS  # noqa: E402

_SCHEMA_COLUMNS = ("id", "content", "content_format", "metadata")


def _write(path: Path, columns: dict, plain_content: bool = False) -> None:
    """``columns`` (name -> list of str or None, the four of the contract) as one Parquet file, zstd,
    row groups of 256 rows; ``plain_content``: ``content`` in plain pages (no dictionary)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(c, pa.string()) for c in _SCHEMA_COLUMNS])
    dictionary = [c for c in _SCHEMA_COLUMNS if c != "content"] if plain_content else True
    pq.write_table(
        pa.table(columns, schema=schema), path, compression="zstd", row_group_size=256, use_dictionary=dictionary
    )


def corpus_copies(corpus: str, copies: int, path: Path) -> int:
    """The corpus ``copies`` times with fresh ids; returns its characters."""
    table = read_documents(corpus, columns=list(_SCHEMA_COLUMNS))
    ids = table.column("id").to_pylist()
    columns = {name: table.column(name).to_pylist() * copies for name in _SCHEMA_COLUMNS if name != "id"}
    columns["id"] = [f"{i}#{k}" for k in range(copies) for i in ids]
    _write(path, columns)
    return sum(len(c) for c in columns["content"] if c)


def repeat_to_size(head: str, line, chars: int, tail: str = "") -> str:
    """``head``, then ``line(i)`` for i = 0, 1, ... up to ``chars`` code points in all, then ``tail``
    (also used by ``rst_big_blocks.py``)."""
    parts, total, i = [head], len(head) + len(tail), 0
    while total < chars:
        parts.append(line(i))
        total += len(parts[-1])
        i += 1
    parts.append(tail)
    return "".join(parts)


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def bmp_only(text: str) -> str:
    """``text`` with every code point above U+FFFF replaced by U+FFFD (same length in code points)."""
    return _ASTRAL.sub("\ufffd", text)


def string_width(text: str) -> float:
    """The Python string's own bytes per code point (``sys.getsizeof`` less the empty string's
    header, over the length): 1, 2 or 4 (PEP 393), to one decimal. Take it before the string goes
    through the C API's UTF-8 conversion (``PyUnicode_AsUTF8AndSize``: pyarrow, PyO3), which keeps a
    UTF-8 copy in a non-ASCII string and counts in ``sys.getsizeof``."""
    return round((sys.getsizeof(text) - sys.getsizeof("")) / max(len(text), 1), 1)


def single_documents(
    corpus: str, chars: int, folder: Path, plain_content: bool = False, names: set[str] | None = None
) -> dict[str, tuple[Path, dict]]:
    """The single documents of (b) (only ``tiny`` and ``names``, if given), written to ``folder``;
    name -> (path, figures: ``characters``, ``utf8_bytes``, ``string_bytes_per_char``)."""
    table = read_documents(corpus, columns=["content", "content_format"])
    pairs = list(zip(table.column("content").to_pylist(), table.column("content_format").to_pylist()))

    def joined(fmt: str) -> str:
        """The corpus's documents of one format joined by blank lines up to ``chars``, or ``""``."""
        sources = [c for c, f in pairs if f == fmt and c is not None]
        parts: list[str] = []
        total = 0
        while sources and total < chars:
            parts.append(sources[len(parts) % len(sources)])
            total += len(parts[-1]) + 2
        return "\n\n".join(parts)[:chars]

    rng = random.Random(4)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 10))) for _ in range(5000)
    ]
    words, total = [], 0
    while total < chars:
        words.append(rng.choice(vocabulary))
        total += len(words[-1]) + 1

    def md_table(i: int) -> str:
        return f"| {i % 10} | {vocabulary[i % 5000]} |\n"

    def html_row(i: int) -> str:
        return f"<tr><td>{i % 10}</td><td>{vocabulary[i % 5000]}</td></tr>\n"

    # name -> (a function building the content, its format); built and written one at a time
    documents = {
        "tiny": (lambda: "# Tiny\n\nA short document.\n", "markdown"),
        "markdown": (lambda: joined("markdown"), "markdown"),
        "markdown-bmp": (lambda: bmp_only(joined("markdown")), "markdown"),
        "letters": (lambda: ("abcdefghijklmnopqrstuvwxyz" * (chars // 26 + 1))[:chars], "text"),
        "words": (lambda: " ".join(words)[:chars], "text"),
        "table": (lambda: repeat_to_size("| n | word |\n|---|---|\n", md_table, chars), "markdown"),
        "list": (lambda: repeat_to_size("", lambda i: f"- {vocabulary[i % 5000]}\n", chars), "markdown"),
        "code": (lambda: repeat_to_size("```python\n", lambda i: f"x = {i % 10}\n", chars, "```\n"), "markdown"),
        "html": (lambda: joined("html"), "html"),
        "html-list": (
            lambda: repeat_to_size("<ul>\n", lambda i: f"<li>{vocabulary[i % 5000]}</li>\n", chars, "</ul>\n"),
            "html",
        ),
        "html-table": (
            lambda: repeat_to_size("<table>\n<tr><th>n</th><th>word</th></tr>\n", html_row, chars, "</table>\n"),
            "html",
        ),
        "rst": (lambda: joined("rst"), "rst"),
        "rst-bmp": (lambda: bmp_only(joined("rst")), "rst"),
        "rst-list": (lambda: repeat_to_size("", lambda i: f"- {vocabulary[i % 5000]}\n", chars), "rst"),
    }
    out = {}
    for name, (build, fmt) in documents.items():
        if names is not None and name != "tiny" and name not in names:
            continue
        content = build()
        if not content:  # the corpus has no document of that format
            continue
        path = folder / f"{name}.parquet"
        # the width first: handing a non-ASCII string to Arrow caches its UTF-8 in the string object
        figures = {
            "characters": len(content),
            "utf8_bytes": len(content.encode("utf-8", "surrogatepass")),
            "string_bytes_per_char": string_width(content),
        }
        _write(path, {"id": [name], "content": [content], "content_format": [fmt], "metadata": [None]}, plain_content)
        out[name] = (path, figures)
        del content
    return out


def _row(label: str, path: Path, figures: dict, work: Path, options: list[str], tiny_mib: float | None) -> dict:
    """One job run on ``path``: ``measure_process``'s figures, ``figures`` (``characters``, and for a
    single document ``utf8_bytes`` and ``string_bytes_per_char``) and, given ``tiny_mib``, the peak
    above it in bytes per character and per UTF-8 byte."""
    out = work / f"out-{label.replace(' ', '_')}"
    shutil.rmtree(out, ignore_errors=True)
    result = {
        "label": label,
        **measure_process(job_command("--input", job_input(path), "--output", str(out), *options), out),
    }
    result.update(figures)
    if tiny_mib is not None and figures["characters"]:
        above = (result["high_water_mib"] - tiny_mib) * 2**20
        result["over_tiny_per_char"] = round(above / figures["characters"], 2)
        if figures.get("utf8_bytes"):
            result["over_tiny_per_utf8_byte"] = round(above / figures["utf8_bytes"], 2)
    print(json.dumps(result), file=sys.stderr)
    shutil.rmtree(out, ignore_errors=True)
    return result


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--input", default=str(SAMPLE), help="a Parquet file or folder of documents (default: sample/docs.parquet)"
    )
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4], help="the input this many times over")
    parser.add_argument("--document-mb", type=float, default=50.0, help="millions of characters per document")
    parser.add_argument("--only", choices=("corpus", "documents"))
    parser.add_argument(
        "--documents",
        nargs="+",
        metavar="NAME",
        help="only these single documents (markdown markdown-bmp letters words table list code html "
        "html-list html-table rst rst-bmp rst-list; tiny always runs)",
    )
    parser.add_argument(
        "--plain-content",
        action="store_true",
        help="write the single documents' content in plain pages (no dictionary page)",
    )
    parser.add_argument(
        "--dead-letter",
        action="store_true",
        help="also run each single document over --max-document-chars (dead-lettered whole)",
    )
    parser.add_argument("--work", help="folder for the inputs and outputs (default: a temporary one, removed)")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    parser.add_argument("job_options", nargs=argparse.REMAINDER, help="after --: options for every job run")
    return parser.parse_args(argv)


def _measure_rows(args: argparse.Namespace, work: Path, options: list[str]) -> list[dict]:
    rows = []
    if args.only != "corpus":
        documents = single_documents(
            args.input,
            int(args.document_mb * 1_000_000),
            work,
            args.plain_content,
            set(args.documents) if args.documents else None,
        )
        path, figures = documents.pop("tiny")
        tiny = _row("tiny", path, figures, work, options, None)
        rows.append(tiny)
        for name, (path, figures) in documents.items():
            label = f"{name} {args.document_mb:g} M"
            # a document over the default --max-document-chars is chunked all the same here
            limit = max(figures["characters"], DEFAULT_MAX_DOCUMENT_CHARS)
            chunked = [*options, "--max-document-chars", str(limit)]
            rows.append(_row(label, path, figures, work, chunked, tiny["high_water_mib"]))
            if args.dead_letter:
                # the same document over --max-document-chars: dead-lettered whole, as document_too_large
                rejected = [*options, "--max-document-chars", str(figures["characters"] // 2)]
                rows.append(_row(f"{label}, dead-lettered", path, figures, work, rejected, tiny["high_water_mib"]))
    if args.only != "documents":
        for copies in args.copies:
            path = work / f"corpus-x{copies}.parquet"
            chars = corpus_copies(args.input, copies, path)
            rows.append(_row(f"input x{copies}", path, {"characters": chars}, work, options, None))
    return rows


def _table(rows: list[dict]) -> list[str]:
    lines = [
        "| input | characters | UTF-8 bytes | string bytes / char | documents | chunks | dead letter | wall s "
        "| peak RSS MiB | (peak - tiny) / characters | (peak - tiny) / UTF-8 bytes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        utf8 = format(r["utf8_bytes"], ",") if "utf8_bytes" in r else ""
        lines.append(
            f"| {r['label']} | {r['characters']:,} | {utf8} | {r.get('string_bytes_per_char', '')} | "
            f"{r.get('documents_read', '?')} | {r.get('chunks_written', 0):,} | "
            f"{sum(r.get('dead_letter_by_reason', {}).values())} | {r['seconds']:.1f} | {r['high_water_mib']:.0f} | "
            f"{r.get('over_tiny_per_char', '')} | {r.get('over_tiny_per_utf8_byte', '')} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table (and write it to ``--out``); 1 if a job run failed."""
    args = _parse_args(argv)
    options = job_options(args.job_options)
    work = Path(args.work or tempfile.mkdtemp(prefix="rechunk-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        rows = _measure_rows(args, work, options)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    lines = header("apache-beam", "pyarrow")
    lines += [
        f"Input: `{shown(args.input)}`; job options: {' '.join(options) or 'none (in_memory)'}. Peak RSS is the job "
        "process's VmHWM; the bound asked for a single document is 3 bytes above `tiny` per UTF-8 byte.",
        "",
        *_table(rows),
    ]
    write_markdown(args.out, "\n".join(lines))
    return 1 if any(r["exit"] != 0 for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
