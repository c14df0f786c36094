"""Peak memory of the job: the corpus once and four times over, and single 50 MB documents.

    python benchmarks/memory.py [--corpus ../shared/data/corpus/docs.parquet] [--copies 1 4]
                                [--document-mb 50] [--only corpus|documents] [--documents NAME ...] [--work DIR] [-- JOB OPTIONS]

Every row is a fresh ``python -m pipelines.rechunk`` with the default runner (the in_memory
FnApiRunner: the whole job in one process), measured by ``benchmarks/measure_job.py``: wall time,
the job process's peak RSS (its VmHWM, no peak missed) and the report's counts. Inputs are written to a
temporary folder (``--work``, removed afterwards unless given), never to the repository.

(a) ``corpus xN``: the corpus concatenated N times, each copy's ids suffixed ``#k`` (fresh ids,
    so nothing is a duplicate), in row groups of 256 rows like the original. Memory must not
    grow with N.
(b) single documents of ``--document-mb`` million characters, each alone in its file:
    ``markdown`` (the corpus's real Markdown documents joined by blank lines), ``letters`` (one
    run of a-z without whitespace: a single pre-token), ``words`` (random words of 1 to 10
    letters on one line), and three Markdown documents that are one huge block of short children:
    ``table`` (a pipe table of rows like ``| 7 | word |``), ``list`` (a bullet list of one-word
    items) and ``code`` (one fenced code block of lines like ``x = 7``); the same for HTML and
    reStructuredText: ``html`` and ``rst`` (the corpus's real pages of that format joined, when it
    has any), ``html-list`` (one ``<ul>`` of one-word ``<li>``), ``html-table`` (one ``<table>``
    of two short cells a row) and ``rst-list`` (a bullet list of one-word items). ``tiny`` (one
    short Markdown document) gives the constant: the job's own footprint. The figure to read is
    ``(peak - tiny) / size``: the bound asked for is 3.

Prints a Markdown table (and a JSON line per run on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from measure_job import measure  # noqa: E402

_SCHEMA_COLUMNS = ("id", "content", "content_format", "metadata")


def _write(path: Path, columns: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(c, pa.string()) for c in _SCHEMA_COLUMNS])
    pq.write_table(pa.table(columns, schema=schema), path, compression="zstd", row_group_size=256)


def corpus_copies(corpus: str, copies: int, path: Path) -> int:
    """The corpus ``copies`` times with fresh ids; returns its characters."""
    import pyarrow.parquet as pq

    table = pq.read_table(corpus, columns=list(_SCHEMA_COLUMNS))
    ids = table.column("id").to_pylist()
    columns = {name: table.column(name).to_pylist() * copies for name in _SCHEMA_COLUMNS if name != "id"}
    columns["id"] = [f"{i}#{k}" for k in range(copies) for i in ids]
    _write(path, columns)
    return sum(len(c) for c in columns["content"] if c)


def repeat_to_size(head: str, line, chars: int, tail: str = "") -> str:
    """``head``, then ``line(i)`` for i = 0, 1, ... up to ``chars`` code points in all, then ``tail``
    (also used by ``html_big_gen.py`` and ``rst_big_blocks.py``)."""
    parts, total, i = [head], len(head) + len(tail), 0
    while total < chars:
        parts.append(line(i))
        total += len(parts[-1])
        i += 1
    parts.append(tail)
    return "".join(parts)


def single_documents(corpus: str, chars: int, folder: Path) -> dict[str, tuple[Path, int]]:
    """The single documents of (b); name -> (path, characters)."""
    import pyarrow.parquet as pq

    table = pq.read_table(corpus, columns=["content", "content_format"])
    pairs = list(zip(table.column("content").to_pylist(), table.column("content_format").to_pylist()))

    def joined(fmt: str) -> str:
        """The corpus's documents of one format joined by blank lines up to ``chars``, or ``""``."""
        sources = [c for c, f in pairs if f == fmt and c is not None]
        parts, total = [], 0
        while sources and total < chars:
            parts.append(sources[len(parts) % len(sources)])
            total += len(parts[-1]) + 2
        return "\n\n".join(parts)[:chars]

    rng = random.Random(4)
    vocabulary = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 10)))
                  for _ in range(5000)]
    words, total = [], 0
    while total < chars:
        words.append(rng.choice(vocabulary))
        total += len(words[-1]) + 1
    documents = {
        "tiny": ("# Tiny\n\nA short document.\n", "markdown"),
        "markdown": (joined("markdown"), "markdown"),
        "letters": (("abcdefghijklmnopqrstuvwxyz" * (chars // 26 + 1))[:chars], "text"),
        "words": (" ".join(words)[:chars], "text"),
        "table": (repeat_to_size("| n | word |\n|---|---|\n", lambda i: f"| {i % 10} | {vocabulary[i % 5000]} |\n", chars),
                  "markdown"),
        "list": (repeat_to_size("", lambda i: f"- {vocabulary[i % 5000]}\n", chars), "markdown"),
        "code": (repeat_to_size("```python\n", lambda i: f"x = {i % 10}\n", chars, "```\n"), "markdown"),
        "html": (joined("html"), "html"),
        "html-list": (repeat_to_size("<ul>\n", lambda i: f"<li>{vocabulary[i % 5000]}</li>\n", chars, "</ul>\n"), "html"),
        "html-table": (repeat_to_size("<table>\n<tr><th>n</th><th>word</th></tr>\n",
                               lambda i: f"<tr><td>{i % 10}</td><td>{vocabulary[i % 5000]}</td></tr>\n", chars,
                               "</table>\n"), "html"),
        "rst": (joined("rst"), "rst"),
        "rst-list": (repeat_to_size("", lambda i: f"- {vocabulary[i % 5000]}\n", chars), "rst"),
    }
    out = {}
    for name, (content, fmt) in documents.items():
        if not content:  # the corpus has no document of that format
            continue
        path = folder / f"{name}.parquet"
        _write(path, {"id": [name], "content": [content], "content_format": [fmt], "metadata": [None]})
        out[name] = (path, len(content))
    return out


def _row(label: str, path: Path, chars: int, work: Path, job_options: list[str], tiny_mib: float | None) -> dict:
    out = work / f"out-{label.replace(' ', '_')}"
    shutil.rmtree(out, ignore_errors=True)
    result = measure(label, ["--input", str(path), "--output", str(out), *job_options],
                     cwd=REPO, stdout=open(os.devnull, "w"))
    result["characters"] = chars
    if tiny_mib is not None and chars:
        result["over_tiny_per_char"] = round((result["high_water_mib"] - tiny_mib) * 2**20 / chars, 2)
    print(json.dumps(result), file=sys.stderr)
    shutil.rmtree(out, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "data" / "corpus" / "docs.parquet"))
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--document-mb", type=float, default=50.0, help="millions of characters per document")
    parser.add_argument("--only", choices=("corpus", "documents"))
    parser.add_argument("--documents", nargs="+", metavar="NAME",
                        help="only these single documents (markdown letters words table list code html html-list html-table rst rst-list; tiny always runs)")
    parser.add_argument("--work", help="folder for the inputs and outputs (default: a temporary one, removed)")
    parser.add_argument("job_options", nargs=argparse.REMAINDER, help="after --: options for every job run")
    args = parser.parse_args()
    job_options = [a for a in args.job_options if a != "--"]
    work = Path(args.work or tempfile.mkdtemp(prefix="rechunk-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        if args.only != "corpus":
            documents = single_documents(args.corpus, int(args.document_mb * 1_000_000), work)
            path, chars = documents.pop("tiny")
            tiny = _row("tiny", path, chars, work, job_options, None)
            rows.append(tiny)
            for name, (path, chars) in documents.items():
                if args.documents and name not in args.documents:
                    continue
                rows.append(_row(f"{name} {args.document_mb:g} M", path, chars, work, job_options, tiny["high_water_mib"]))
        if args.only != "documents":
            for copies in args.copies:
                path = work / f"corpus-x{copies}.parquet"
                chars = corpus_copies(args.corpus, copies, path)
                rows.append(_row(f"corpus x{copies}", path, chars, work, job_options, None))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print("| input | characters | documents | chunks | dead letter | wall s | peak RSS MiB | (peak - tiny) / characters |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['label']} | {r['characters']:,} | {r.get('documents_read', '?')} | {r.get('chunks_written', '?'):,} | "
              f"{sum(r.get('dead_letter_by_reason', {}).values())} | {r['wall_seconds']} | {r['high_water_mib']} | "
              f"{r.get('over_tiny_per_char', '')} |")


if __name__ == "__main__":
    main()
