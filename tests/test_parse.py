"""rechunk parse: raw files of each offline format into the chunk job's input, a dead letter by
reason, stable ids, no network, and parse then chunk with every file accounted for."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

pytest.importorskip("docling", reason="rechunk[parse] (docling-slim) is not installed")

from docling_core.types.doc import DoclingDocument  # noqa: E402

from pipelines.rechunk import main  # noqa: E402
from tests.conftest import read_output  # noqa: E402
from transforms.parsing import (  # noqa: E402
    PDF_MODELS_HINT,
    FileConverter,
    ParseFailure,
    document_id,
    file_format,
    pattern_base,
)

# What each good file must yield in its Markdown export (a phrase from its body, table or slide).
EXPECTED_TEXT = {
    "page.html": ["# Lighthouses", "Keepers lived on the rock", "| Name", "Bell Rock"],
    "notes.md": ["# Tide tables", "Spring tides", "| Port", "Leith"],
    "report.docx": ["Quarterly report", "Sales rose by a tenth", "North"],
    "deck.pptx": ["Launch plan", "Beta in March"],
    "sheet.xlsx": ["Region", "Orders", "1250"],
    "sub/deep.md": ["# Deep file", "nested folder"],
}
# Files that must be dead-lettered, and the reason.
EXPECTED_DEAD = {
    "corrupt.docx": "conversion_failed",
    "truncated.pptx": "conversion_failed",
    "empty.html": "empty_file",
    "notes.txt": "unsupported_file_format",
    "big.md": "file_too_large",
    "locked.xlsx": "encrypted_file",
    "scan.pdf": "pdf_models_missing",
}
MAX_FILE_BYTES = 100_000


def make_raw_files(folder: Path) -> Path:
    """Small real files of each offline format (made with python-docx, python-pptx, openpyxl) and
    files that must be dead-lettered."""
    import docx
    import openpyxl
    import pptx

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "page.html").write_text(
        "<html><body><h1>Lighthouses</h1><p>Keepers lived on the rock for weeks at a time.</p>"
        "<table><tr><th>Name</th><th>Built</th></tr><tr><td>Bell Rock</td><td>1810</td></tr></table>"
        "</body></html>",
        encoding="utf-8",
    )
    (folder / "notes.md").write_text(
        "# Tide tables\n\nSpring tides follow the full and new moon.\n\n| Port | High water |\n|---|---|\n| Leith | 06:12 |\n",
        encoding="utf-8",
    )
    (folder / "sub").mkdir(exist_ok=True)
    (folder / "sub" / "deep.md").write_text("# Deep file\n\nA file in a nested folder.\n", encoding="utf-8")
    document = docx.Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Sales rose by a tenth over the quarter.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Region", "Change"
    table.cell(1, 0).text, table.cell(1, 1).text = "North", "+12%"
    document.save(folder / "report.docx")
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Launch plan"
    slide.placeholders[1].text = "Beta in March\nLaunch in May"
    deck.save(folder / "deck.pptx")
    book = openpyxl.Workbook()
    book.active.append(["Region", "Orders"])
    book.active.append(["West", 1250])
    book.save(folder / "sheet.xlsx")

    (folder / "corrupt.docx").write_bytes(b"PK\x03\x04 this is not really a zip archive")
    (folder / "truncated.pptx").write_bytes((folder / "deck.pptx").read_bytes()[:2000])
    (folder / "empty.html").write_bytes(b"")
    (folder / "notes.txt").write_text("plain text is not a format rechunk parse converts\n")
    (folder / "big.md").write_text("# Big\n\n" + "word " * (MAX_FILE_BYTES // 5 + 10))
    (folder / "locked.xlsx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
    return folder


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> Path:
    return make_raw_files(tmp_path_factory.mktemp("raw") / "raw")


def _parse(raw: Path, out: Path, *extra: str) -> dict:
    assert main(["parse", "--input", f"{raw}/**", "--output", str(out), "--max-file-bytes", str(MAX_FILE_BYTES), *extra]) == 0
    return json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def parsed(raw, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("parsed")
    _parse(raw, out)
    return out


def test_parse_job_converts_every_offline_format_and_dead_letters_the_rest(raw, parsed):
    report = json.loads((parsed / "report.json").read_text())
    rows = {r["id"]: r for r in read_output(parsed, "parsed")}
    dead = {r["document_id"]: r for r in read_output(parsed, "dead_letter")}
    assert sorted(rows) == sorted(EXPECTED_TEXT)
    assert {k: v["reason"] for k, v in dead.items()} == EXPECTED_DEAD
    for doc_id, row in rows.items():
        assert row["content_format"] == "docling"
        document = DoclingDocument.model_validate_json(row["content"])
        markdown = document.export_to_markdown()
        for phrase in EXPECTED_TEXT[doc_id]:
            assert phrase in markdown, (doc_id, phrase, markdown)
        metadata = json.loads(row["metadata"])
        assert metadata == {
            "source_path": str(raw / doc_id),
            "size_bytes": (raw / doc_id).stat().st_size,
            "file_format": file_format(doc_id),
        }
    for doc_id, row in dead.items():
        assert row["path"] == str(raw / doc_id)
        assert row["size_bytes"] == (raw / doc_id).stat().st_size
        assert row["detail"]
    assert dead["scan.pdf"]["detail"] == PDF_MODELS_HINT
    assert "pip install" in dead["scan.pdf"]["detail"]
    assert dead["big.md"]["detail"].endswith(f"> max {MAX_FILE_BYTES:,} (--max-file-bytes)")
    assert report["files_read"] == len(EXPECTED_TEXT) + len(EXPECTED_DEAD)
    assert report["files_parsed"] == len(EXPECTED_TEXT)
    assert report["files_dead_lettered"] == report["dead_letter_rows"] == len(EXPECTED_DEAD)
    assert report["dead_letter_by_reason"] == {
        "conversion_failed": 2, "empty_file": 1, "encrypted_file": 1, "file_too_large": 1,
        "pdf_models_missing": 1, "unsupported_file_format": 1,
    }
    assert report["parsed_by_format"] == {"docx": 1, "html": 1, "markdown": 2, "pptx": 1, "xlsx": 1}
    assert report["files_by_format"] == {
        "docx": 2, "html": 2, "markdown": 3, "other": 1, "pdf": 1, "pptx": 2, "xlsx": 2,
    }


def test_markdown_output_and_ids_stable_across_runs(raw, parsed, tmp_path):
    _parse(raw, tmp_path / "again")
    first = sorted((r["id"], r["content"], r["metadata"]) for r in read_output(parsed, "parsed"))
    second = sorted((r["id"], r["content"], r["metadata"]) for r in read_output(tmp_path / "again", "parsed"))
    assert first == second
    report = _parse(raw, tmp_path / "md", "--content-format", "markdown")
    rows = {r["id"]: r for r in read_output(tmp_path / "md", "parsed")}
    assert report["content_format"] == "markdown"
    assert sorted(rows) == sorted(EXPECTED_TEXT)
    for doc_id, row in rows.items():
        assert row["content_format"] == "markdown"
        for phrase in EXPECTED_TEXT[doc_id]:
            assert phrase in row["content"], (doc_id, phrase)


@pytest.mark.parametrize("content_format", ["docling", "markdown"])
def test_parse_then_chunk_accounts_for_every_file(raw, tmp_path, content_format):
    _parse(raw, tmp_path / "parse", "--content-format", content_format)
    assert main(["--input", str(tmp_path / "parse" / "parsed" / "*.parquet"), "--output", str(tmp_path / "chunks")]) == 0
    chunk_report = json.loads((tmp_path / "chunks" / "report.json").read_text())
    chunks = read_output(tmp_path / "chunks", "chunks")
    chunked_ids = {c["document_id"] for c in chunks}
    parse_dead = {r["document_id"] for r in read_output(tmp_path / "parse", "dead_letter")}
    chunk_dead = {r["document_id"] for r in read_output(tmp_path / "chunks", "dead_letter")}
    assert chunk_report["documents_read"] == len(EXPECTED_TEXT)
    assert chunked_ids == set(EXPECTED_TEXT) and not chunk_dead
    assert chunked_ids | parse_dead == set(EXPECTED_TEXT) | set(EXPECTED_DEAD)
    text = {doc_id: " ".join(c["text"] for c in chunks if c["document_id"] == doc_id) for doc_id in chunked_ids}
    assert "Sales rose by a tenth" in text["report.docx"]
    assert "Beta in March" in text["deck.pptx"]


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
    assert outcomes == {**{k: "ok" for k in EXPECTED_TEXT}, **EXPECTED_DEAD}


def test_ids_are_paths_under_the_pattern_base():
    assert pattern_base("gs://bkt/raw/**/*.docx") == "gs://bkt/raw/"
    assert pattern_base("/data/raw/*") == "/data/raw/"
    assert pattern_base("/data/raw/a.md") == "/data/raw/"
    assert pattern_base("/data/r[ab]w/x.md") == "/data/"
    assert document_id("gs://bkt/raw/sub/a.docx", "gs://bkt/raw/") == "sub/a.docx"
    assert document_id("/data/raw/sub/a.docx", "/data/raw/") == "sub/a.docx"
    assert file_format("X/Report.DOCX") == "docx" and file_format("x/README") is None


def test_converter_checks_its_options():
    with pytest.raises(ValueError, match="content_format must be one of .*got 'pdf'"):
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
    assert "no file matches" in _error(capsys, ["parse", "--input", f"{tmp_path}/none/*", "--output", str(tmp_path / "o")])


def test_output_of_another_run_is_refused(capsys, raw, parsed):
    assert "parsed/ already holds files" in _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(parsed)])


def test_gs_input_gives_the_same_ids_and_content_as_local(raw, parsed, gcs):
    """The same tree on gs:// (a local GCS emulator) parses to the same ids, contents and reasons;
    only metadata's source_path differs."""
    import pyarrow.parquet as pq
    from apache_beam.io.filesystems import FileSystems

    for path in sorted(p for p in raw.rglob("*") if p.is_file()):
        gcs.upload(path, f"parse-raw/{path.relative_to(raw)}")
    out = gcs.url("parse-out")
    assert main(["parse", "--input", gcs.url("parse-raw/**"), "--output", out,
                 "--max-file-bytes", str(MAX_FILE_BYTES)]) == 0

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


def test_without_docling_the_job_says_what_to_install(capsys, raw, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "docling.backend.html_backend", None)  # import fails as if not installed
    line = _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "o")])
    assert line == "rechunk parse: error: rechunk parse needs Docling's converters: pip install 'rechunk[parse]'"


def test_pdf_artifacts_path_without_the_pdf_pipeline_is_an_option_error(capsys, raw, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "docling.document_converter", None)
    line = _error(capsys, ["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "o"),
                           "--pdf-artifacts-path", str(tmp_path)])
    assert line == f"rechunk parse: error: --pdf-artifacts-path: {PDF_MODELS_HINT}"
