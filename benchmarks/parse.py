"""Files per second per format of ``rechunk parse``, dead-letter rows by reason, then the chunk job.

    python benchmarks/parse.py [--input sample/docs.parquet] [--files-per-format 40]
                               [--work DIR] [--out FILE.md] [--direct_running_mode in_memory ...]
    python benchmarks/parse.py --plain DIR [--plain DIR ...] [--files-per-format 150] [--pdfs 40]
                               [--work DIR] [--out FILE.md]

With ``--plain``: the Markdown, text, reST, HTML and PDF files found under each ``DIR`` (sorted
by path, at most ``--files-per-format`` of each format, none over 5 MB), plus ``--pdfs``
text-layer PDFs of 10 pages each written from the Markdown files' lines, are copied into one
raw folder and parsed twice, side by side in one run: as ``rechunk parse`` reads them (text files
as they are, PDFs' text layers with PDFium) and with ``--format-for`` sending Markdown and HTML
to Docling. It prints per format the files, MB, converter seconds, files and MB per second of
both, and the ratio; every file must end parsed or dead-lettered in both runs (exit 1 otherwise).

Builds a raw folder from real documents of ``--input`` (a Parquet file or folder; it needs at
least one Markdown and one HTML document), in ``--work`` (default: a temporary folder, removed
afterwards): Markdown and HTML documents written as
they are; DOCX, PPTX and XLSX made from the Markdown documents with python-docx, python-pptx and
openpyxl: headings and paragraphs, one slide per section, one sheet row per line), plus broken
files (corrupt, truncated, empty, unsupported, encrypted, too large, a PDF without models), runs
``rechunk parse`` on it in-process, then the chunk job on its output, and prints a Markdown table:
per format the files, bytes, seconds inside the converter (Beam counter ``convert_us``, summed
over workers) and files per second over those seconds, plus both jobs' wall seconds and the dead
letter by reason. Every file must end parsed or dead-lettered, every parsed document chunked or
dead-lettered: the script exits 1 otherwise. ``--out`` writes the table as Markdown; options it
does not know go to both jobs. The DOCX, PPTX and XLSX writers and Docling come with the ``parse``
extra (``pip install -e '.[parse]'``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.measurement import SAMPLE, header, read_documents, shown, write_markdown  # noqa: E402

MAX_FILE_BYTES = 5_000_000


def _blocks(markdown: str) -> list[tuple[int, str]]:
    """(heading level or 0, text) blocks of a Markdown document, blank-line separated."""
    blocks = []
    for block in re.split(r"\n\s*\n", markdown):
        block = block.strip()
        if not block:
            continue
        heading = re.match(r"^(#{1,6})\s+(.*)", block)
        if heading and "\n" not in block:
            blocks.append((len(heading.group(1)), heading.group(2)))
        else:
            blocks.append((0, block))
    return blocks


def _clean(text: str) -> str:
    # XML 1.0 cannot hold most control characters (python-docx and openpyxl refuse them).
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", " ", text)


def build_raw(corpus: Path, folder: Path, per_format: int) -> None:
    """``per_format`` files of each format made from ``corpus``'s documents, and the broken files, in ``folder``.

    Raises:
        SystemExit: ``corpus`` has no Markdown or no HTML document.
    """
    import docx
    import openpyxl
    import pptx

    rows = read_documents(corpus, columns=["content", "content_format"]).to_pylist()
    markdown = [r for r in rows if r["content_format"] == "markdown" and r["content"]]
    html = [r for r in rows if r["content_format"] == "html" and r["content"]]
    if not markdown or not html:
        raise SystemExit(f"parse: {corpus} needs a Markdown and an HTML document to build the raw files from")
    folder.mkdir(parents=True)
    for i in range(per_format):
        md = _clean(markdown[i % len(markdown)]["content"])
        (folder / f"md-{i:04d}.md").write_text(md, encoding="utf-8")
        (folder / f"html-{i:04d}.html").write_text(html[i % len(html)]["content"], encoding="utf-8")
        blocks = _blocks(md)[:300]
        document = docx.Document()
        for level, text in blocks:
            document.add_heading(text[:200], level=min(level, 9)) if level else document.add_paragraph(text)
        document.save(str(folder / f"docx-{i:04d}.docx"))
        deck = pptx.Presentation()
        slide = None
        for level, text in blocks:
            if level or slide is None:
                if len(deck.slides) >= 30:
                    break
                slide = deck.slides.add_slide(deck.slide_layouts[1])
                slide.shapes.title.text = text[:200] if level else "Introduction"
                body = slide.placeholders[1].text_frame
                if level:
                    continue
            body.add_paragraph().text = text[:1000]
        deck.save(str(folder / f"pptx-{i:04d}.pptx"))
        book = openpyxl.Workbook()
        sheet = book.active
        sheet.append(["line", "text"])
        for n, line in enumerate(md.splitlines()[:500], 1):
            if line.strip():
                sheet.append([n, line[:2000]])
        book.save(folder / f"xlsx-{i:04d}.xlsx")
    good = folder / "docx-0000.docx"
    (folder / "bad-corrupt.docx").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    (folder / "bad-truncated.pptx").write_bytes((folder / "pptx-0000.pptx").read_bytes()[:3000])
    (folder / "bad-empty.md").write_bytes(b"")
    (folder / "bad-unsupported.rtf").write_text("{\\rtf1 hello}")
    (folder / "bad-encrypted.xlsx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512)
    (folder / "bad-too-large.md").write_text("# Big\n\n" + "word " * (MAX_FILE_BYTES // 5 + 1))
    (folder / "bad-no-models.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    assert good.exists()


def _parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--input", default=str(SAMPLE), help="a Parquet file or folder of documents (default: sample/docs.parquet)"
    )
    parser.add_argument("--files-per-format", type=int, default=40)
    parser.add_argument("--work", help="folder for the raw files and both outputs (default: a temporary one, removed)")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    parser.add_argument("--plain", action="append", help="a folder of Markdown/text/reST/HTML/PDF files (repeatable)")
    parser.add_argument("--pdfs", type=int, default=40, help="with --plain: text-layer PDFs to write (10 pages each)")
    return parser.parse_known_args(argv)


PLAIN_EXTENSIONS = ("md", "markdown", "txt", "text", "rst", "rest", "html", "htm", "pdf")
#: ``--format-for`` of the Docling run: the text formats Docling has a converter for.
DOCLING_FOR = "md=docling,markdown=docling,html=docling,htm=docling,xhtml=docling"


def build_plain(folders: list[str], raw: Path, per_format: int, pdfs: int) -> None:
    """Copy the files of :data:`PLAIN_EXTENSIONS` found under ``folders`` into ``raw`` (at most
    ``per_format`` per format, sorted by path, none over 5 MB nor empty), then write ``pdfs``
    text-layer PDFs of 10 pages from the Markdown files' lines."""
    from tests.support.pdf_files import text_pdf
    from transforms.parsing import file_format

    raw.mkdir(parents=True)
    taken: dict[str, int] = {}
    lines: list[str] = []
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            extension = path.name.rsplit(".", 1)[-1].lower() if "." in path.name else ""
            if extension not in PLAIN_EXTENSIONS or not path.is_file() or path.is_symlink():
                continue
            size = path.stat().st_size
            fmt = file_format(path.name) or "other"
            if not 0 < size <= MAX_FILE_BYTES or taken.get(fmt, 0) >= per_format:
                continue
            taken[fmt] = taken.get(fmt, 0) + 1
            target = raw / f"{fmt}-{taken[fmt]:04d}.{extension}"
            shutil.copyfile(path, target)
            if fmt == "markdown" and len(lines) < pdfs * 400:
                text = path.read_text(encoding="utf-8", errors="replace")
                lines += [
                    " ".join(line.split())[:90].encode("latin-1", "replace").decode("latin-1")
                    for line in text.splitlines()
                    if line.strip()
                ]
    for i in range(pdfs):
        start = (i * 400) % max(1, len(lines) - 400) if lines else 0
        chunk = lines[start : start + 400] or ["No text."]
        pages = [["\n".join(chunk[p * 40 + q * 5 : p * 40 + q * 5 + 5]) for q in range(8)] for p in range(10)]
        (raw / f"pdf-made-{i:04d}.pdf").write_bytes(text_pdf(pages, font_size=9, leading=11, paragraph_gap=8))


def _rate(amount: float, seconds: float) -> str:
    """``amount`` per second, with three significant digits or more."""
    if not seconds:
        return "-"
    rate = amount / seconds
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def plain_main(args: argparse.Namespace, beam_args: list[str]) -> int:
    """``--plain``: parse the same folder as rechunk reads it and through Docling; one table."""
    from pipelines.rechunk import main as rechunk_main

    work = Path(args.work or tempfile.mkdtemp(prefix="rechunk-parse-plain-"))
    shutil.rmtree(work, ignore_errors=True)
    reports, walls = {}, {}
    try:
        build_plain(args.plain, work / "raw", args.files_per_format, args.pdfs)
        sizes: dict[str, int] = {}
        from transforms.parsing import file_format

        for path in (work / "raw").iterdir():
            fmt = file_format(path.name) or "other"
            sizes[fmt] = sizes.get(fmt, 0) + path.stat().st_size
        code = 0
        for name, extra in (("rechunk", []), ("docling", ["--format-for", DOCLING_FOR])):
            started = time.monotonic()
            code |= rechunk_main(
                [
                    "parse",
                    "--input",
                    f"{work}/raw/*",
                    "--output",
                    f"{work}/{name}",
                    "--max-file-bytes",
                    str(MAX_FILE_BYTES),
                    *extra,
                    *beam_args,
                ]
            )
            walls[name] = time.monotonic() - started
            reports[name] = json.loads((work / name / "report.json").read_text())
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    lines = header("apache-beam", "docling-slim", "docling-core", "pypdfium2", "marko", "beautifulsoup4")
    lines += [
        f"Files from {', '.join(f'`{shown(f)}`' for f in args.plain)} (at most {args.files_per_format} per format) and "
        f"{args.pdfs} text-layer PDFs of 10 pages written by the script; job options: {' '.join(beam_args) or 'none (in_memory)'}.",
        "",
        "| format | files | MB | rechunk: converter s | files/s | MB/s | Docling: converter s | files/s | MB/s | speed-up |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    ours, theirs = reports["rechunk"], reports["docling"]
    for fmt, files in ours["files_by_format"].items():
        mb = sizes.get(fmt, 0) / 1e6
        cells = []
        for report in (ours, theirs):
            seconds = report["convert_seconds_by_format"].get(fmt, 0)
            cells += [f"{seconds:.3f}", _rate(files, seconds), _rate(mb, seconds)]
        docling_used = fmt in ("markdown", "html")
        if not docling_used:
            cells[3:6] = ["(same path)", "", ""]
        a, b = ours["convert_seconds_by_format"].get(fmt, 0), theirs["convert_seconds_by_format"].get(fmt, 0)
        ratio = f"{b / a:,.0f}x" if docling_used and a else "-"
        lines.append(f"| {fmt} | {files} | {mb:.2f} | " + " | ".join(cells) + f" | {ratio} |")
    for name, report in (("rechunk", ours), ("Docling", theirs)):
        lines += [
            "",
            f"{name} run: {report['files_read']} files, {report['files_parsed']} parsed, wall {walls[name.lower()]:.1f} s; "
            f"documents by content format: {json.dumps(report['parsed_by_content_format'])}; dead letter by reason: "
            f"{json.dumps(report['dead_letter_by_reason'])}",
        ]
    accounted = all(r["files_parsed"] + r["files_dead_lettered"] == r["files_read"] for r in reports.values())
    lines += ["", f"Every file accounted for: {accounted}."]
    write_markdown(args.out, "\n".join(lines))
    return 0 if code == 0 and accounted else 1


def _run_jobs(work: Path, beam_args: list[str]) -> tuple[int, float, float]:
    """``rechunk parse`` on ``work/raw``, then the chunk job on its output: exit status, both walls."""
    from pipelines.rechunk import main as rechunk_main

    started = time.monotonic()
    code = rechunk_main(
        [
            *("parse", "--input", f"{work}/raw/*", "--output", f"{work}/parse"),
            *("--max-file-bytes", str(MAX_FILE_BYTES), *beam_args),
        ]
    )
    parse_wall = time.monotonic() - started
    started = time.monotonic()
    code |= rechunk_main(["--input", f"{work}/parse/parsed/*.parquet", "--output", f"{work}/chunks", *beam_args])
    return code, parse_wall, time.monotonic() - started


def _table(work: Path, parse: dict, chunk: dict, parse_wall: float, chunk_wall: float) -> list[str]:
    from transforms.parsing import file_format

    sizes: dict[str, int] = {}
    for path in (work / "raw").iterdir():
        fmt = file_format(path.name) or "other"
        if path.stat().st_size <= MAX_FILE_BYTES:  # a larger file is never read
            sizes[fmt] = sizes.get(fmt, 0) + path.stat().st_size
    lines = ["| format | files | parsed | MB | converter s | files/s | MB/s |", "|---|---|---|---|---|---|---|"]
    for fmt, files in parse["files_by_format"].items():
        seconds = parse["convert_seconds_by_format"].get(fmt, 0)
        mb = sizes.get(fmt, 0) / 1e6
        rate = f"{files / seconds:.1f}" if seconds else "-"
        mbps = f"{mb / seconds:.2f}" if seconds else "-"
        lines.append(
            f"| {fmt} | {files} | {parse['parsed_by_format'].get(fmt, 0)} | {mb:.2f} | {seconds:.2f} | {rate} | {mbps} |"
        )
    return lines + [
        "",
        f"parse job: {parse['files_read']} files, {parse['files_parsed']} parsed, wall {parse_wall:.1f} s "
        f"(report {parse['wall_seconds']} s); dead letter by reason: {json.dumps(parse['dead_letter_by_reason'])}",
        "",
        f"chunk job: {chunk['documents_read']} documents, {chunk['documents_chunked']} chunked, "
        f"{chunk['chunks_written']} chunks, wall {chunk_wall:.1f} s; dead letter by reason: "
        f"{json.dumps(chunk['dead_letter_by_reason'])}",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table (and write it to ``--out``); 1 if a file is unaccounted for."""
    args, beam_args = _parse_args(argv)
    if args.plain:
        return plain_main(args, beam_args)
    work = Path(args.work or tempfile.mkdtemp(prefix="rechunk-parse-"))
    shutil.rmtree(work, ignore_errors=True)
    try:
        started = time.monotonic()
        build_raw(Path(args.input), work / "raw", args.files_per_format)
        print(f"built {work / 'raw'} in {time.monotonic() - started:.1f} s", file=sys.stderr)
        code, parse_wall, chunk_wall = _run_jobs(work, beam_args)
        parse = json.loads((work / "parse" / "report.json").read_text())
        chunk = json.loads((work / "chunks" / "report.json").read_text())
        lines = header("apache-beam", "docling", "docling-slim", "docling-core")
        lines += [
            f"Raw files built from `{shown(args.input)}`, {args.files_per_format} per format; "
            f"job options: {' '.join(beam_args) or 'none (in_memory)'}.",
            "",
            *_table(work, parse, chunk, parse_wall, chunk_wall),
        ]
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    accounted = (
        parse["files_parsed"] + parse["files_dead_lettered"] == parse["files_read"]
        and chunk["documents_read"] == parse["files_parsed"]
        and chunk["documents_chunked"] + chunk["documents_dead_lettered"] == chunk["documents_read"]
    )
    lines += ["", f"Every file accounted for: {accounted}."]
    write_markdown(args.out, "\n".join(lines))
    return 0 if code == 0 and accounted else 1


if __name__ == "__main__":
    sys.exit(main())
