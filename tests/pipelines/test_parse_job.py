"""rechunk parse: raw files of each offline format into the chunk job's input (text files as they
are, office files through Docling, PDFs from their text layer), a dead letter by reason, stable
ids, no network, and parse then chunk with every file accounted for."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from pathlib import Path

import pytest

pytest.importorskip("docling", reason="rechunk[parse] (docling-slim) is not installed")

from docling_core.types.doc import DoclingDocument

from pipelines.rechunk import main
from tests.conftest import read_output
from tests.support.pdf_files import image_pdf, text_pdf
from transforms.parsing import (
    PARSE_INSTALL_HINT,
    PDF_MODELS_HINT,
    PDF_OCR_HINT,
    ConverterProcess,
    FileConverter,
    ParseFailure,
    document_id,
    file_format,
    pattern_base,
)

# The text files: read as they are, each its own content format.
PAGE_HTML = (
    "<html><body><h1>Lighthouses</h1><p>Keepers lived on the rock for weeks at a time.</p>"
    "<table><tr><th>Name</th><th>Built</th></tr><tr><td>Bell Rock</td><td>1810</td></tr></table>"
    "</body></html>"
)
TIDES_MD = "# Tide tables\n\nSpring tides follow the full and new moon.\n\n| Port | High water |\n|---|---|\n| Leith | 06:12 |\n"
TEXT_FILES = {
    "page.html": ("html", PAGE_HTML),
    "notes.md": ("markdown", TIDES_MD),
    "sub/deep.md": ("markdown", "# Deep file\n\nA file in a nested folder.\n"),
    "notes.txt": ("text", "Plain text notes.\n\nA second paragraph.\n"),
    "guide.rst": ("rst", "Guide\n=====\n\nRead the tide tables first.\n"),
}
# What each file converted to a DoclingDocument must yield in its Markdown export.
EXPECTED_TEXT = {
    "report.docx": ["Quarterly report", "Sales rose by a tenth", "North"],
    "deck.pptx": ["Launch plan", "Beta in March"],
    "sheet.xlsx": ["Region", "Orders", "1250"],
    "manual.pdf": ["Harbour manual", "Enter on the flood tide", "Moorings are free"],
}
PARSED = {*TEXT_FILES, *EXPECTED_TEXT}
# Files that must be dead-lettered, and the reason.
EXPECTED_DEAD = {
    "corrupt.docx": "conversion_failed",
    "truncated.pptx": "conversion_failed",
    "empty.html": "empty_file",
    "notes.rtf": "unsupported_file_format",
    "big.md": "file_too_large",
    "locked.xlsx": "encrypted_file",
    "scan.pdf": "pdf_no_text_layer",
    "latin1.txt": "invalid_utf8",
}
MAX_FILE_BYTES = 100_000


def make_raw_files(folder: Path) -> Path:
    """Small real files of each offline format (made with python-docx, python-pptx, openpyxl) and
    files that must be dead-lettered."""
    import docx
    import openpyxl
    import pptx

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sub").mkdir(exist_ok=True)
    for name, (_, text) in TEXT_FILES.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    (folder / "manual.pdf").write_bytes(
        text_pdf([["Harbour manual", "Enter on the flood tide,\nnever on the ebb."], ["Moorings are free in winter."]])
    )
    document = docx.Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Sales rose by a tenth over the quarter.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Region", "Change"
    table.cell(1, 0).text, table.cell(1, 1).text = "North", "+12%"
    document.save(str(folder / "report.docx"))
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Launch plan"
    slide.placeholders[1].text = "Beta in March\nLaunch in May"
    deck.save(str(folder / "deck.pptx"))
    book = openpyxl.Workbook()
    book.active.append(["Region", "Orders"])
    book.active.append(["West", 1250])
    book.save(folder / "sheet.xlsx")

    (folder / "corrupt.docx").write_bytes(b"PK\x03\x04 this is not really a zip archive")
    (folder / "truncated.pptx").write_bytes((folder / "deck.pptx").read_bytes()[:2000])
    (folder / "empty.html").write_bytes(b"")
    (folder / "notes.rtf").write_text("{\\rtf1 rich text is not a format rechunk parse converts}\n")
    (folder / "latin1.txt").write_bytes("café au lait".encode("latin-1"))
    (folder / "big.md").write_text("# Big\n\n" + "word " * (MAX_FILE_BYTES // 5 + 10))
    (folder / "locked.xlsx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)
    (folder / "scan.pdf").write_bytes(image_pdf(2))
    return folder


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> Path:
    return make_raw_files(tmp_path_factory.mktemp("raw") / "raw")


def _parse(raw: Path, out: Path, *extra: str) -> dict:
    assert (
        main(["parse", "--input", f"{raw}/**", "--output", str(out), "--max-file-bytes", str(MAX_FILE_BYTES), *extra])
        == 0
    )
    return json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def parsed(raw, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("parsed")
    _parse(raw, out)
    return out


@pytest.mark.slow
def test_parse_job_converts_every_offline_format_and_dead_letters_the_rest(raw, parsed):
    report = json.loads((parsed / "report.json").read_text())
    rows = {r["id"]: r for r in read_output(parsed, "parsed")}
    dead = {r["document_id"]: r for r in read_output(parsed, "dead_letter")}
    assert sorted(rows) == sorted(PARSED)
    assert {k: v["reason"] for k, v in dead.items()} == EXPECTED_DEAD
    for doc_id, (fmt, text) in TEXT_FILES.items():
        assert (rows[doc_id]["content_format"], rows[doc_id]["content"]) == (fmt, text)
    for doc_id, row in rows.items():
        if doc_id in TEXT_FILES:
            continue
        assert row["content_format"] == "docling"
        document = DoclingDocument.model_validate_json(row["content"])
        markdown = document.export_to_markdown()
        for phrase in EXPECTED_TEXT[doc_id]:
            assert phrase in markdown, (doc_id, phrase, markdown)
        metadata = json.loads(row["metadata"])
        assert metadata == {
            "source_path": str(raw / doc_id),
            "size_bytes": (raw / doc_id).stat().st_size,
            "file_format": TEXT_FILES[doc_id][0] if doc_id in TEXT_FILES else file_format(doc_id),
        }
    for doc_id, row in dead.items():
        assert row["path"] == str(raw / doc_id)
        assert row["size_bytes"] == (raw / doc_id).stat().st_size
        assert row["detail"]
    assert dead["scan.pdf"]["detail"] == f"no text on any of its 2 pages; {PDF_OCR_HINT}"
    assert "pip install" in dead["scan.pdf"]["detail"]
    assert dead["latin1.txt"]["detail"].startswith("not UTF-8 at byte 3; re-encode the file as UTF-8")
    assert dead["big.md"]["detail"].endswith(f"> max {MAX_FILE_BYTES:,} (--max-file-bytes)")
    assert report["files_read"] == len(PARSED) + len(EXPECTED_DEAD)
    assert report["files_parsed"] == len(PARSED)
    assert report["files_dead_lettered"] == report["dead_letter_rows"] == len(EXPECTED_DEAD)
    assert report["dead_letter_by_reason"] == {
        "conversion_failed": 2,
        "empty_file": 1,
        "encrypted_file": 1,
        "file_too_large": 1,
        "invalid_utf8": 1,
        "pdf_no_text_layer": 1,
        "unsupported_file_format": 1,
    }
    assert report["parsed_by_format"] == {
        "docx": 1,
        "html": 1,
        "markdown": 2,
        "pdf": 1,
        "pptx": 1,
        "rst": 1,
        "text": 1,
        "xlsx": 1,
    }
    assert report["parsed_by_content_format"] == {"docling": 4, "html": 1, "markdown": 2, "rst": 1, "text": 1}
    assert report["files_by_format"] == {
        "docx": 2,
        "html": 2,
        "markdown": 3,
        "other": 1,
        "pdf": 2,
        "pptx": 2,
        "rst": 1,
        "text": 2,
        "xlsx": 2,
    }


@pytest.mark.slow
def test_markdown_output_and_ids_stable_across_runs(raw, parsed, tmp_path):
    _parse(raw, tmp_path / "again")
    first = sorted((r["id"], r["content"], r["metadata"]) for r in read_output(parsed, "parsed"))
    second = sorted((r["id"], r["content"], r["metadata"]) for r in read_output(tmp_path / "again", "parsed"))
    assert first == second
    report = _parse(raw, tmp_path / "md", "--content-format", "markdown")
    rows = {r["id"]: r for r in read_output(tmp_path / "md", "parsed")}
    assert report["content_format"] == "markdown"
    assert sorted(rows) == sorted(PARSED)
    for doc_id, row in rows.items():
        if doc_id in TEXT_FILES:  # text files keep their own format
            assert (row["content_format"], row["content"]) == TEXT_FILES[doc_id]
            continue
        assert row["content_format"] == "markdown"
        for phrase in EXPECTED_TEXT[doc_id]:
            assert phrase in row["content"], (doc_id, phrase)


@pytest.mark.slow
@pytest.mark.parametrize("content_format", ["docling", "markdown"])
def test_parse_then_chunk_accounts_for_every_file(raw, tmp_path, content_format):
    _parse(raw, tmp_path / "parse", "--content-format", content_format)
    assert (
        main(["--input", str(tmp_path / "parse" / "parsed" / "*.parquet"), "--output", str(tmp_path / "chunks")]) == 0
    )
    chunk_report = json.loads((tmp_path / "chunks" / "report.json").read_text())
    chunks = read_output(tmp_path / "chunks", "chunks")
    chunked_ids = {c["document_id"] for c in chunks}
    parse_dead = {r["document_id"] for r in read_output(tmp_path / "parse", "dead_letter")}
    chunk_dead = {r["document_id"] for r in read_output(tmp_path / "chunks", "dead_letter")}
    assert chunk_report["documents_read"] == len(PARSED)
    assert chunked_ids == PARSED and not chunk_dead
    assert chunked_ids | parse_dead == PARSED | set(EXPECTED_DEAD)
    text = {doc_id: " ".join(c["text"] for c in chunks if c["document_id"] == doc_id) for doc_id in chunked_ids}
    assert "Sales rose by a tenth" in text["report.docx"]
    assert "Beta in March" in text["deck.pptx"]
    # Text files are chunked from the file itself: offsets into its text (HTML's from a rendering).
    for chunk in chunks:
        if chunk["document_id"] in TEXT_FILES and chunk["document_id"] != "page.html":
            source = TEXT_FILES[chunk["document_id"]][1]
            assert source[chunk["start_offset"] : chunk["end_offset"]] == chunk["text"]
    assert "Read the tide tables first." in text["guide.rst"] and "A second paragraph." in text["notes.txt"]
    # The PDF's chunks carry its pages (a DoclingDocument; its Markdown export has none).
    pdf_pages = sorted(c["page_no"] for c in chunks if c["document_id"] == "manual.pdf")
    assert pdf_pages == ([1] if content_format == "docling" else [None])
    assert "Moorings are free in winter." in text["manual.pdf"]


def test_converter_never_opens_a_socket(raw, monkeypatch):
    """Every file, the PDF included, is converted or refused with no network connection attempted."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network connection attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    converter = FileConverter(max_file_bytes=MAX_FILE_BYTES)
    outcomes = {}
    for path in sorted(p for p in raw.rglob("*") if p.is_file()):
        doc_id = document_id(str(path), f"{raw}/")
        try:
            converter.convert(path=str(path), doc_id=doc_id, data=path.read_bytes())
            outcomes[doc_id] = "ok"
        except ParseFailure as failure:
            outcomes[doc_id] = failure.reason
    assert outcomes == {**dict.fromkeys(PARSED, "ok"), **EXPECTED_DEAD}


def test_ids_are_paths_under_the_pattern_base():
    assert pattern_base("gs://bkt/raw/**/*.docx") == "gs://bkt/raw/"
    assert pattern_base("/data/raw/*") == "/data/raw/"
    assert pattern_base("/data/raw/a.md") == "/data/raw/"
    assert pattern_base("/data/r[ab]w/x.md") == "/data/"
    assert pattern_base("/data/raw{1,2}/*.md") == "/data/raw{1,2}/"  # no brace expansion in Beam's patterns
    assert document_id("gs://bkt/raw/sub/a.docx", "gs://bkt/raw/") == "sub/a.docx"
    assert document_id("/data/raw/sub/a.docx", "/data/raw/") == "sub/a.docx"
    assert file_format("X/Report.DOCX") == "docx" and file_format("x/README") is None


def test_converter_checks_its_options():
    with pytest.raises(ValueError, match=r"content_format must be one of .*got 'pdf'"):
        FileConverter(content_format="pdf")
    with pytest.raises(ValueError, match="max_file_bytes must be a positive integer, got 0"):
        FileConverter(max_file_bytes=0)


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("rechunk parse: error: ")
    return err[0]


@pytest.mark.parametrize(
    "argv_tail, message",
    [
        (["--content-format", "html"], "--content-format must be one of docling, markdown, got 'html'"),
        (["--max-file-bytes", "0"], "--max-file-bytes must be a positive integer (bytes), got '0'"),
        (["--max-file-bytes", "ten"], "--max-file-bytes must be a positive integer (bytes), got 'ten'"),
        (["--max-tokens", "5"], "unrecognized option --max-tokens"),
        (["--pdf-artifacts-path", "/no/such/dir"], "--pdf-artifacts-path /no/such/dir: no such local directory"),
    ],
)
def test_option_mistakes(capsys, raw, tmp_path, argv_tail, message):
    line = _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "o"), *argv_tail])
    assert message in line


def test_a_directory_is_not_a_pattern(capsys, raw, tmp_path):
    line = _error(capsys, ["parse", "--input", str(raw), "--output", str(tmp_path / "o")])
    assert f"--input {raw}: is a directory; give a file pattern such as {raw}/**" in line


def test_help_and_the_chunk_jobs_command_line(capsys):
    assert main(["parse", "--help"]) == 0
    assert "rechunk parse --input PATTERN --output DIR" in capsys.readouterr().out
    assert main(["--help"]) == 0
    assert "rechunk parse --input PATTERN" in capsys.readouterr().out


def test_missing_and_unmatched_input(capsys, tmp_path):
    assert "--input is required" in _error(capsys, ["parse", "--output", str(tmp_path / "o")])
    assert "--output is required" in _error(capsys, ["parse", "--input", "x/*"])
    assert "no file matches" in _error(
        capsys, ["parse", "--input", f"{tmp_path}/none/*", "--output", str(tmp_path / "o")]
    )


@pytest.mark.parametrize("flag", ["--input", "--output"])
def test_a_url_missing_a_slash_is_an_option_error(capsys, raw, tmp_path, monkeypatch, flag):
    """``rechunk parse --input 'gs:/b/*.md'`` is checked as given, before it is made absolute: an
    option error, not a local folder ``gs:`` read (or "no file matches")."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gs:" / "b").mkdir(parents=True)
    (tmp_path / "gs:" / "b" / "a.md").write_text("# T\n\nhello\n")
    argv = ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "o")]
    argv[argv.index(flag) + 1] = "gs:/b/*.md" if flag == "--input" else "gs:/b/o"
    assert "a local path starting with gs:, did you mean gs://...?" in _error(capsys, argv)
    assert not (tmp_path / "o").exists() and not (tmp_path / "gs:" / "b" / "o").exists()


@pytest.mark.slow
def test_output_of_another_run_is_refused(capsys, raw, parsed):
    assert "parsed/ already holds files" in _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(parsed)])


@pytest.mark.slow
def test_gs_input_gives_the_same_ids_and_content_as_local(raw, parsed, gcs):
    """The same tree on gs:// (a local GCS emulator) parses to the same ids, contents and reasons;
    only metadata's source_path differs."""
    import pyarrow.parquet as pq
    from apache_beam.io.filesystems import FileSystems

    for path in sorted(p for p in raw.rglob("*") if p.is_file()):
        gcs.upload(path, f"parse-raw/{path.relative_to(raw)}")
    out = gcs.url("parse-out")
    assert (
        main(["parse", "--input", gcs.url("parse-raw/**"), "--output", out, "--max-file-bytes", str(MAX_FILE_BYTES)])
        == 0
    )

    def rows(sub: str) -> list[dict]:
        found = []
        for m in FileSystems.match([f"{out}/{sub}/*.parquet"])[0].metadata_list:
            with FileSystems.open(m.path) as f:
                found += pq.read_table(f).to_pylist()
        return found

    remote = {r["id"]: r for r in rows("parsed")}
    local = {r["id"]: r for r in read_output(parsed, "parsed")}
    assert sorted(remote) == sorted(local)
    for doc_id, row in remote.items():
        assert row["content"] == local[doc_id]["content"]
        assert json.loads(row["metadata"])["source_path"] == gcs.url(f"parse-raw/{doc_id}")
    assert sorted((r["document_id"], r["reason"]) for r in rows("dead_letter")) == sorted(EXPECTED_DEAD.items())


def test_without_docling_a_file_it_converts_is_an_option_error_naming_it(capsys, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "docling.backend.html_backend", None)  # import fails as if not installed
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "notes.md").write_text("# Notes\n\nText.\n")
    (raw / "slides.pptx").write_bytes(b"PK")
    line = _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "o")])
    assert line == (
        f"rechunk parse: error: --input {raw}/*: {raw}/slides.pptx is converted by Docling; {PARSE_INSTALL_HINT}"
    )
    assert "pip install -e '.[parse]'" in line and not (tmp_path / "o").exists()


def test_without_docling_text_files_are_parsed(tmp_path, monkeypatch):
    import sys

    for module in ("docling", "docling.backend.html_backend", "docling.document_converter"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "notes.md").write_text("# Notes\n\nText.\n")
    (raw / "readme.txt").write_text("Plain words.\n")
    out = tmp_path / "o"
    assert main(["parse", "--input", f"{raw}/*", "--output", str(out)]) == 0
    rows = {r["id"]: (r["content"], r["content_format"]) for r in read_output(out, "parsed")}
    assert rows == {"notes.md": ("# Notes\n\nText.\n", "markdown"), "readme.txt": ("Plain words.\n", "text")}


def test_pdf_artifacts_path_without_the_pdf_pipeline_is_an_option_error(capsys, raw, tmp_path, monkeypatch):
    import sys

    models = tmp_path / "models"
    models.mkdir()
    (models / "model.safetensors").write_bytes(b"0")
    monkeypatch.setitem(sys.modules, "docling.document_converter", None)
    line = _error(
        capsys, ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "o"), "--pdf-artifacts-path", str(models)]
    )
    assert line == f"rechunk parse: error: --pdf-artifacts-path: {PDF_MODELS_HINT}"


@pytest.mark.parametrize("module", ["docling_parse", "torch"])
def test_pdf_artifacts_path_without_the_pdf_backend_or_torch_is_an_option_error(
    capsys, raw, tmp_path, monkeypatch, module
):
    """Docling imports its PDF backend and torch only at the first PDF: missing, every PDF would be
    dead-lettered with an ImportError. Checked before the job starts instead."""
    import sys

    models = tmp_path / "models"
    models.mkdir()
    (models / "model.safetensors").write_bytes(b"0")
    monkeypatch.setitem(sys.modules, module, None)
    line = _error(
        capsys, ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "o"), "--pdf-artifacts-path", str(models)]
    )
    assert line == f"rechunk parse: error: --pdf-artifacts-path: {PDF_MODELS_HINT}"


def test_empty_pdf_artifacts_path_is_an_option_error(capsys, raw, tmp_path):
    (tmp_path / "models").mkdir()
    line = _error(
        capsys,
        [
            "parse",
            "--input",
            f"{raw}/*",
            "--output",
            str(tmp_path / "o"),
            "--pdf-artifacts-path",
            str(tmp_path / "models"),
        ],
    )
    assert f"--pdf-artifacts-path {tmp_path}/models: empty; fetch Docling's models there" in line


# --- Hostile inputs: names, links, encodings, pathological files, option mistakes -----------------

# File names a folder of real files holds (relative path -> its Markdown/HTML body's heading).
ODD_NAMES = {
    "with space.md": "Space",
    "ünïcödé 日本.md": "Unicode",
    "a#b.md": "Hash",
    "what?.md": "Question",
    "st*r.md": "Star",
    "br[1].md": "Bracket",
    "new\nline.md": "Newline",
    "x" * 240 + ".md": "Long",
    "UPPER.HTML": "Upper",
    "short.htm": "Htm",
    "long.markdown": "Markdown extension",
    "dir.md/inner.md": "Inside a directory named like a file",
    "link.md": "Space",  # a symlink to "with space.md": followed, its own id
}


def _write_odd_tree(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "dir.md").mkdir()
    for name, heading in ODD_NAMES.items():
        if name == "link.md":
            continue
        if name.lower().endswith((".html", ".htm")):
            (folder / name).write_text(f"<html><body><h1>{heading}</h1><p>body of {heading}</p></body></html>")
        else:
            (folder / name).write_text(f"# {heading}\n\nbody of {heading}\n")
    (folder / "link.md").symlink_to("with space.md")
    (folder / "loop").symlink_to(".")  # a symlink to a directory is not followed: no endless walk
    (folder / "dangling.md").symlink_to("no-such-file")  # not a file: never listed
    # Bytes that are not UTF-8 text: NUL, invalid UTF-8, UTF-16 with a BOM, Latin-1 declared in HTML.
    (folder / "nul.md").write_bytes(b"# NUL\x00 and \xff\xfe invalid UTF-8\n\nbody\n")
    (folder / "utf16.html").write_bytes("<html><body><h1>UTF-16</h1><p>été</p></body></html>".encode("utf-16"))
    (folder / "latin1.html").write_bytes(
        '<html><head><meta charset="iso-8859-1"></head><body><p>café naïve</p></body></html>'.encode("latin-1")
    )
    (folder / "zero.md").write_bytes(b"")


@pytest.mark.slow
def test_odd_file_names_links_and_encodings_parse_then_chunk(tmp_path):
    """Every listed file is accounted for under its own relative path as id (spaces, unicode, glob
    characters, a newline, 240 characters), and the chunk job takes every row parse wrote. Text
    files that are not UTF-8 are dead-lettered; HTML sent to Docling (--format-for) is read in the
    encoding it declares."""
    raw = tmp_path / "raw"
    _write_odd_tree(raw)
    report = _parse(raw, tmp_path / "parse")
    rows = {r["id"]: r for r in read_output(tmp_path / "parse", "parsed")}
    dead = {r["document_id"]: r["reason"] for r in read_output(tmp_path / "parse", "dead_letter")}
    assert sorted(rows) == sorted(ODD_NAMES)
    assert dead == {
        "zero.md": "empty_file",
        "nul.md": "invalid_utf8",
        "utf16.html": "invalid_utf8",
        "latin1.html": "invalid_utf8",
    }
    assert report["files_read"] == len(rows) + len(dead) == report["files_parsed"] + report["files_dead_lettered"]
    for doc_id, row in rows.items():
        assert json.loads(row["metadata"])["source_path"] == f"{raw}/{doc_id}"
        assert row["content"] == (raw / doc_id).read_text(encoding="utf-8")
        assert f"body of {ODD_NAMES[doc_id]}" in row["content"], (doc_id, row["content"])

    report = _parse(raw, tmp_path / "docling", "--format-for", "html=docling,htm=docling")
    assert report["format_for"] == {"htm": "docling", "html": "docling"}
    html = {
        r["id"]: r for r in read_output(tmp_path / "docling", "parsed") if r["id"].lower().endswith(("html", "htm"))
    }
    assert sorted(html) == ["UPPER.HTML", "latin1.html", "short.htm", "utf16.html"]
    assert {r["content_format"] for r in html.values()} == {"docling"}
    assert "été" in DoclingDocument.model_validate_json(html["utf16.html"]["content"]).export_to_markdown()
    assert "café naïve" in DoclingDocument.model_validate_json(html["latin1.html"]["content"]).export_to_markdown()

    assert (
        main(["--input", str(tmp_path / "parse" / "parsed" / "*.parquet"), "--output", str(tmp_path / "chunks")]) == 0
    )
    chunk_report = json.loads((tmp_path / "chunks" / "report.json").read_text())
    chunked = {c["document_id"] for c in read_output(tmp_path / "chunks", "chunks")}
    assert chunk_report["documents_read"] == len(rows)
    assert chunked == set(rows) and not read_output(tmp_path / "chunks", "dead_letter")


def _deep_html(levels: int) -> bytes:
    return ("<html><body>" + "<div>" * levels + "deep" + "</div>" * levels + "</body></html>").encode()


NOTES_MD = b"# Notes\n\nA short file after a pathological one.\n"


@pytest.mark.slow
def test_a_conversion_that_runs_too_long_is_stopped_and_the_next_file_converts():
    """Docling spends hours on 100,000 nested <div>; the converter process is killed at the bound,
    the file is a conversion_timeout failure, and a new process converts the next file."""
    converter = ConverterProcess(max_file_seconds=3, content_format="markdown", format_for={"html": "docling"})
    try:
        converter.start()
        first = converter._process.pid
        with pytest.raises(ParseFailure) as failure:
            converter.convert(path="/raw/deep.html", doc_id="deep.html", data=_deep_html(100_000))
        assert failure.value.reason == "conversion_timeout"
        assert "3 s (--max-file-seconds)" in failure.value.detail
        row = converter.convert(path="/raw/notes.md", doc_id="notes.md", data=NOTES_MD)
        assert "A short file after a pathological one." in row["content"]
        assert converter._process.pid != first
    finally:
        converter.close()


@pytest.mark.slow
def test_a_converter_process_that_dies_fails_that_file_only():
    converter = ConverterProcess(max_file_seconds=120, content_format="markdown", format_for={"html": "docling"})
    try:
        converter.start()
        pid = converter._process.pid
        threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
        with pytest.raises(ParseFailure) as failure:
            converter.convert(path="/raw/deep.html", doc_id="deep.html", data=_deep_html(100_000))
        assert failure.value.reason == "conversion_failed"
        assert f"exit code -{int(signal.SIGKILL)}" in failure.value.detail
        assert "A short file" in converter.convert(path="/raw/notes.md", doc_id="notes.md", data=NOTES_MD)["content"]
    finally:
        converter.close()


def test_converter_process_checks_its_options():
    with pytest.raises(ValueError, match="max_file_seconds must be a positive number, got 0"):
        ConverterProcess(max_file_seconds=0)
    with pytest.raises(ValueError, match=r"content_format must be one of .*got 'pdf'"):
        ConverterProcess(content_format="pdf")
    with pytest.raises(ParseFailure, match="file_too_large"):
        ConverterProcess(max_file_bytes=10).check("/raw/a.md", 11)  # refused without a child process


def _zip_bomb_docx(path: Path) -> None:
    """A real DOCX plus a member that inflates to 200 MB (Docling's own limit is 128 MB)."""
    import io
    import zipfile

    import docx

    good = io.BytesIO()
    document = docx.Document()
    document.add_paragraph("hello")
    document.save(good)
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bomb:
        for item in source.infolist():
            bomb.writestr(item, source.read(item.filename))
        with bomb.open("word/junk.bin", "w", force_zip64=True) as member:
            for _ in range(200):
                member.write(b"\0" * (1 << 20))


@pytest.mark.slow
def test_pathological_office_files_are_converted_or_dead_lettered(tmp_path):
    """Zip bomb, renamed text, formulas and 30 sheets (some empty), a slide with no text, a deck
    with no slides: each is a row or a ParseFailure with a reason, never an exception."""
    import openpyxl
    import pptx

    _zip_bomb_docx(tmp_path / "bomb.docx")
    (tmp_path / "renamed.docx").write_text("plain text saved as .docx\n")
    (tmp_path / "renamed.xlsx").write_text("a,b\n1,2\n")
    book = openpyxl.Workbook()
    book.active.append(["a", "b", "sum"])
    book.active.append([1, 2, "=A2+B2"])
    for i in range(30):
        sheet = book.create_sheet(f"S{i}")
        if i % 2 == 0:
            sheet.append([f"sheet {i}", i])
    book.save(tmp_path / "formulas.xlsx")
    deck = pptx.Presentation()
    deck.slides.add_slide(deck.slide_layouts[6])
    deck.save(tmp_path / "blank.pptx")
    pptx.Presentation().save(tmp_path / "noslides.pptx")

    converter = FileConverter(content_format="markdown")
    outcomes = {}
    for path in sorted(tmp_path.iterdir()):
        try:
            row = converter.convert(path=str(path), doc_id=path.name, data=path.read_bytes())
            outcomes[path.name] = ("ok", row["content"])
        except ParseFailure as failure:
            outcomes[path.name] = (failure.reason, failure.detail)
    assert outcomes["bomb.docx"][0] == "conversion_failed" and "exceeding" in outcomes["bomb.docx"][1]
    assert outcomes["renamed.docx"][0] == outcomes["renamed.xlsx"][0] == "conversion_failed"
    assert outcomes["noslides.pptx"][0] == "conversion_failed"
    assert outcomes["blank.pptx"] == ("ok", "")  # parsed; the chunk job dead-letters it as empty_document
    assert outcomes["formulas.xlsx"][0] == "ok" and "sheet 28" in outcomes["formulas.xlsx"][1]


def test_a_file_that_vanishes_or_grows_after_matching(tmp_path):
    from apache_beam.io.fileio import ReadableFile
    from apache_beam.io.filesystem import FileMetadata

    from transforms.beam.parse import _read_at_most

    gone = tmp_path / "gone.md"
    with pytest.raises(ParseFailure) as failure:
        _read_at_most(ReadableFile(FileMetadata(str(gone), 10)), 100)
    assert failure.value.reason == "unreadable_file"
    grown = tmp_path / "grown.md"
    grown.write_bytes(b"x" * 101)  # matched at 10 bytes, 101 when read
    with pytest.raises(ParseFailure) as failure:
        _read_at_most(ReadableFile(FileMetadata(str(grown), 10)), 100)
    assert failure.value.reason == "file_too_large" and "grew after matching" in failure.value.detail
    assert _read_at_most(ReadableFile(FileMetadata(str(grown), 101)), 101) == b"x" * 101
    # A huge --max-file-bytes is no allocation of that size (read(n) would raise MemoryError).
    assert _read_at_most(ReadableFile(FileMetadata(str(grown), 101)), 10**15) == b"x" * 101
    big = tmp_path / "big.md"
    big.write_bytes(b"y" * (20 * 1024 * 1024 + 3))  # more than one block
    assert _read_at_most(ReadableFile(FileMetadata(str(big), 0)), 10**15) == big.read_bytes()
    with pytest.raises(ParseFailure, match="file_too_large"):
        _read_at_most(ReadableFile(FileMetadata(str(big), 0)), 20 * 1024 * 1024 + 2)


@pytest.mark.parametrize(
    "argv_tail, message",
    [
        (["--format-for", "mdx"], "--format-for: expected EXT=FORMAT (e.g. mdx=markdown), got 'mdx'"),
        (["--format-for", "mdx=markdown,"], "--format-for: expected EXT=FORMAT (e.g. mdx=markdown), got ''"),
        (["--format-for", "mdx=markdown,MDX=text"], "--format-for: .mdx is given twice in 'mdx=markdown,MDX=text'"),
        (
            ["--format-for", "md=latex"],
            "--format-for md=latex: the format must be one of markdown, text, rst, html, docling",
        ),
        (["--format-for", "docx=text"], "--format-for docx=text: .docx files are always converted"),
        (["--format-for", "a", "--format-for", "b"], "--format-for is given 2 times; give it once"),
        (["--output", "OTHER"], "--output is given 2 times; give it once"),
        (["--input=OTHER"], "--input is given 2 times; give it once"),
        (["--max-file-seconds", "0"], "--max-file-seconds must be a positive number of seconds, got '0'"),
        (["--max-file-seconds", "nan"], "--max-file-seconds must be a positive number of seconds, got 'nan'"),
        (["--max-file-seconds", "soon"], "--max-file-seconds must be a positive number of seconds, got 'soon'"),
        (["--max-file-bytes", "-1"], "--max-file-bytes must be a positive integer (bytes), got '-1'"),
        (["stray.md"], "unrecognized argument stray.md (an option's value? quote a pattern"),
    ],
)
def test_more_option_mistakes(capsys, raw, tmp_path, argv_tail, message):
    line = _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "o"), *argv_tail])
    assert message in line


def test_output_inside_the_input_pattern_is_refused(capsys, raw, monkeypatch):
    line = _error(capsys, ["parse", "--input", f"{raw}/**", "--output", f"{raw}/out"])
    assert f"--output {raw}/out: inside --input {raw}/**" in line
    monkeypatch.chdir(raw.parent)
    line = _error(capsys, ["parse", "--input", f"{raw.name}/**", "--output", f"{raw.name}/sub/out/"])
    assert "inside --input" in line


def test_unreachable_cloud_storage_fails_at_once(capsys, tmp_path, monkeypatch):
    """gs:// with no service to answer: one line within seconds, not Beam's minutes of retries."""
    from tests.conftest import free_ports

    (port,) = free_ports(1)  # nothing listens there
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    line = _error(capsys, ["parse", "--input", "gs://bkt/raw/**", "--output", str(tmp_path / "o")])
    assert f"--input gs://bkt/raw/**: cannot reach Cloud Storage at 127.0.0.1:{port}" in line


@pytest.mark.slow
def test_converter_process_does_not_run_the_callers_main_module_again(tmp_path):
    """A pipeline script without ``if __name__ == "__main__"`` (common in Beam examples): the
    converter process is a fresh interpreter, so the script's top level runs once."""
    import subprocess
    import sys

    from tests.conftest import REPO

    marker = tmp_path / "runs.txt"
    script = tmp_path / "pipeline_script.py"
    script.write_text(
        "from transforms.parsing import ConverterProcess\n"
        f"open({str(marker)!r}, 'a').write('ran\\n')\n"
        "converter = ConverterProcess(max_file_seconds=120, content_format='markdown')\n"
        "row = converter.convert(path='/raw/notes.md', doc_id='notes.md', data=b'# Notes\\n\\nbody text\\n')\n"
        "converter.close()\n"
        "print(row['content'])\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert "body text" in done.stdout
    assert marker.read_text() == "ran\n"


def test_output_that_cannot_be_a_directory_is_an_option_error(capsys, raw, tmp_path):
    (tmp_path / "afile").write_text("x")
    line = _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "afile" / "sub")])
    assert f"--output {tmp_path}/afile/sub: cannot create the directory" in line
    line = _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "afile")])
    assert f"--output {tmp_path}/afile: is a file, not a directory" in line


def test_a_second_run_into_an_output_another_run_holds_is_refused(capsys, tmp_path):
    from pipelines import commit

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "notes.md").write_text("# Notes\n\nText.\n")
    out = tmp_path / "o"
    out.mkdir()
    run_id = commit.take_lock(str(out), ("parsed", "dead_letter"))  # held by this live process
    line = _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(out)])
    assert line.startswith(f"rechunk parse: error: --output {out}: another run is writing there")
    assert not list((out / "parsed").iterdir())
    commit.release_lock(str(out), run_id)
    assert main(["parse", "--input", f"{raw}/*", "--output", str(out)]) == 0
    assert not (out / commit.LOCK_NAME).exists()  # released when the run ends
    assert [r["id"] for r in read_output(out, "parsed")] == ["notes.md"]
    # Once a run has written there, the output is another run's, lock or not.
    line = _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(out)])
    assert (
        line
        == f"rechunk parse: error: --output {out}: parsed/ already holds files from another run; choose an empty directory"
    )
