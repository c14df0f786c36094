"""Page chrome left in HTML chunks: this checkout against another (e.g. main), side by side.

    python benchmarks/html_main_content.py --html-dir DIR [--input docs.parquet] --before CHECKOUT
                                           [--libraries] [--out FILE.md]

Reads every ``.html`` file under ``--html-dir`` (grouped by the folders named in
:data:`GROUPS`, the rest as "other") and the ``content_format: html`` documents of ``--input``,
chunks each with ``StructureAwareChunker`` (``cl100k_base``, 512 tokens, the job's default), once
with the code of ``--before`` and once with this checkout's, each in a subprocess whose
``PYTHONPATH`` is that checkout, and prints per group: documents, chunks, tokens (of the chunks'
``text``), the rendering's headings, code blocks and table rows, and the page chrome found in the
chunks' text (:data:`CHROME`), before and after. With ``--libraries`` two more rows per group run
a main-content library first and this checkout's renderer on what it keeps: readability-lxml's
``Document.summary()`` and trafilatura's ``extract(output_format="html")`` (neither is a
dependency: ``pip install readability-lxml trafilatura``). CPU seconds are each side's own
(``time.process_time`` around normalizing and chunking), to be read as a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if "--measure" not in sys.argv:  # (a side's subprocess imports the checkout its PYTHONPATH names)
    sys.path.insert(0, str(REPO))

#: Groups of ``--html-dir`` files: (name, a path part that puts a file in it).
GROUPS = (
    ("Node.js API", "nodejs/api/"),
    ("Valgrind (DocBook)", "valgrind/html/"),
    ("libxslt / libxml2 (layout tables)", "libxslt"),
)
#: Page chrome counted in the chunks' text: (column name, regular expression, multiline).
CHROME = (
    ("Skip to content", r"Skip to content"),
    ("Other versions", r"Other versions"),
    ("copy at a code block's end", r"copy\n`{3,}"),
    ("title ending #", r"^#{1,6} .*#$"),
    ("nav link cell", r"^\|.*\| *(?:Next|Prev|Previous|Home|Up) *\|"),
    ("Main Menu", r"Main Menu"),
)


def _measure(args: argparse.Namespace) -> None:
    """One side: print the figures of every group as JSON (run in a subprocess)."""
    from transforms.chunkers import StructureAwareChunker
    from transforms.chunkers.base import ChunkingError
    from transforms.documents import Document
    from transforms.tokenizers import TiktokenTokenizer

    tokenizer = TiktokenTokenizer("cl100k_base")
    chunker = StructureAwareChunker(tokenizer=tokenizer, max_tokens=512)
    preparers: dict[str, Callable[[str], str] | None] = {"": None}
    if args.library == "readability":
        from readability import Document as Readable

        preparers = {"readability": lambda page: Readable(page).summary(html_partial=True)}
    elif args.library == "trafilatura":
        import trafilatura

        preparers = {
            "trafilatura": lambda page: (
                trafilatura.extract(
                    page, output_format="html", include_tables=True, include_formatting=True, favor_recall=True
                )
                or ""
            )
        }
    prepare = next(iter(preparers.values()))
    patterns = [(name, re.compile(rx, re.MULTILINE)) for name, rx in CHROME]
    totals: dict[str, dict[str, float]] = {}
    for groups, content in _documents(args):
        row: dict[str, float] = {"documents": 1}
        start = time.process_time()
        if prepare is not None:
            import logging

            logging.disable(logging.CRITICAL)
            try:
                content = prepare(content)
            except Exception:  # (a library's failure on a page counts as nothing kept)
                content = ""
        try:
            chunks = chunker.chunk(Document(id="d", content=content, content_format="html"), tokenizer_identity="t")
        except ChunkingError:
            chunks, row["refused"] = [], 1
        row["cpu"] = time.process_time() - start
        text = "".join(chunk.text for chunk in chunks)
        row["chunks"] = len(chunks)
        row["tokens"] = sum(tokenizer.count(chunk.text) for chunk in chunks)
        row["headings"] = len(re.findall(r"^#{1,6} ", text, re.MULTILINE))
        row["code blocks"] = len(re.findall(r"^`{3,}", text, re.MULTILINE)) // 2
        row["table rows"] = len(re.findall(r"^\|.*\|$", text, re.MULTILINE))
        for name, pattern in patterns:
            row[name] = len(pattern.findall(text))
        for group in groups:
            total = totals.setdefault(group, {})
            for key, value in row.items():
                total[key] = total.get(key, 0) + value
    json.dump(totals, sys.stdout)


def _documents(args: argparse.Namespace):
    """(groups, page) for every page measured, in a fixed order."""
    if args.html_dir:
        root = Path(args.html_dir)
        for path in sorted(p for p in root.rglob("*.html") if p.is_file()):
            group = next((name for name, part in GROUPS if part in path.resolve().as_posix()), "other")
            page = path.read_bytes().decode("utf-8", "replace")
            yield (group, "all HTML files of --html-dir"), page
    if args.input:
        from benchmarks.measurement import read_documents

        table = read_documents(args.input, ["content", "content_format"]).to_pydict()
        for content, content_format in zip(table["content"], table["content_format"], strict=True):
            if content_format == "html":
                yield ("--input (content_format html)",), content


def _side(checkout: Path, args: argparse.Namespace, library: str = "") -> dict:
    command = [sys.executable, str(REPO / "benchmarks" / "html_main_content.py"), "--measure"]
    if args.html_dir:
        command += ["--html-dir", str(args.html_dir)]
    if args.input:
        command += ["--input", str(args.input)]
    if library:
        command += ["--library", library]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), str(REPO)])}
    done = subprocess.run(command, env=env, cwd=checkout, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"html_main_content: the {checkout.name} side failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html-dir", type=Path, help="a folder of .html files (read recursively)")
    parser.add_argument("--input", type=Path, help="a Parquet file or folder of the job's input schema")
    parser.add_argument("--before", type=Path, help="the checkout to compare with (e.g. main)")
    parser.add_argument("--libraries", action="store_true", help="also readability-lxml and trafilatura rows")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--library", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        _measure(args)
        return
    if not (args.html_dir or args.input) or not args.before:
        parser.error("give --before and at least one of --html-dir and --input")
    from benchmarks.measurement import header, shown, write_markdown

    sides = [("before", _side(args.before.resolve(), args)), ("after", _side(REPO, args))]
    if args.libraries:
        sides += [(f"{name} + after", _side(REPO, args, name)) for name in ("readability", "trafilatura")]
    columns = ["documents", "chunks", "tokens", "headings", "code blocks", "table rows"] + [n for n, _ in CHROME]
    lines = header("lxml", "readability-lxml", "trafilatura")
    inputs = [f"--html-dir {shown(args.html_dir)}"] if args.html_dir else []
    inputs += [f"--input {shown(args.input)}"] if args.input else []
    lines += [f"Inputs: {', '.join(inputs)}; before: the checkout {shown(args.before)}.", ""]
    lines += ["| group | code | " + " | ".join(columns) + " | CPU s |", "|---|---|" + "---:|" * (len(columns) + 1)]
    order = [name for name, _ in GROUPS] + ["other", "all HTML files of --html-dir", "--input (content_format html)"]
    for group in sorted(sides[0][1], key=order.index):
        for name, figures in sides:
            row = figures.get(group, {})
            cells = [f"{int(row.get(column, 0)):,}" for column in columns]
            lines.append(f"| {group} | {name} | " + " | ".join(cells) + f" | {row.get('cpu', 0.0):.1f} |")
    write_markdown(args.out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
