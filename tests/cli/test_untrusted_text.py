"""Text from the input, the options and the configuration reaches the terminal escaped, bounded,
and with anything that looks like a credential hidden."""

from __future__ import annotations

import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.check import main as check_main
from pipelines.console import ERROR_LINE_CHARS, EscapingFormatter, shown
from pipelines.rechunk import main
from tests.conftest import REPO, write_documents

KEY = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zA"
TERMINAL_CONTROLS = ["\x1b[31m", "\x1b]0;owned\x07", "\u202e", "\x9b", "\x00", "\u2066"]
SAMPLE = REPO / "sample" / "docs.parquet"


def _is_safe(line: str) -> bool:
    return all(c.isprintable() for c in line)


@pytest.mark.parametrize("control", TERMINAL_CONTROLS)
def test_controls_and_bidirectional_marks_are_shown_as_escapes(control):
    text = shown(f"id{control}end")
    assert _is_safe(text) and text.startswith("id\\") and text.endswith("end")


def test_a_long_text_is_cut_with_the_rest_counted():
    text = shown("x" * 10_000_000)
    assert len(text) < ERROR_LINE_CHARS + 40 and text.endswith(f"({10_000_000 - ERROR_LINE_CHARS:,} more characters)")


@pytest.mark.parametrize(
    "secret",
    [
        KEY,
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MGFiY2RlZg12",
    ],
)
def test_credentials_are_hidden(secret):
    assert secret not in shown(f"--config x: api_key_env {secret}") and "[hidden:" in shown(secret)


@pytest.mark.parametrize(
    "kept",
    [
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",  # a digest
        "/tmp/pytest-of-root/pytest-3/test_a_run_that_chunks_nothing0/in/docs.parquet",
        "tiktoken:cl100k_base:223921b7",
    ],
)
def test_digests_paths_and_names_are_shown_as_they_are(kept):
    assert shown(kept) == kept


def test_an_input_column_name_with_controls_is_escaped_in_the_error(tmp_path, capsys):
    """A file without ``content`` whose columns are named by an attacker: the option error names them safely."""
    name = "body\x1b]0;owned\x07\x1b[2J" + "x" * 5000
    pq.write_table(pa.table({"id": ["a"], name: ["text"]}), tmp_path / "docs.parquet")
    assert main(["--input", str(tmp_path / "docs.parquet"), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and _is_safe(err.rstrip("\n")) and len(err) <= ERROR_LINE_CHARS + 60


def test_a_file_name_with_controls_is_escaped_in_the_error(tmp_path, capsys):
    path = tmp_path / "in\x1b[31m\u202e"
    path.mkdir()
    (path / "bad.parquet").write_bytes(b"not parquet")
    assert main(["--input", f"{path}/*.parquet", "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and _is_safe(err.rstrip("\n")) and "\\x1b[31m\\u202e" in err


def test_a_configuration_value_with_controls_and_a_key_is_escaped_and_hidden(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"chunkers": {f"c\x1b[31m{KEY}": {"type": "Nope"}}, "default": "c"}))
    assert main(["--input", str(SAMPLE), "--output", str(tmp_path / "out"), "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert _is_safe(err.rstrip("\n")) and KEY not in err and "chunkers.c\\x1b[" in err


def test_a_key_given_as_the_name_of_its_variable_is_refused_and_not_echoed(tmp_path, capsys):
    config = {
        "models": {
            "remote": {
                "type": "OpenAIEmbedder",
                "params": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": KEY},
            }
        },
        "chunkers": {"semantic": {"type": "EmbeddingSemanticChunker", "params": {"embeddings": "remote"}}},
        "default": "semantic",
    }
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    assert main(["--input", str(SAMPLE), "--output", str(tmp_path / "out"), "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "api_key_env must be the name of an environment variable" in err and KEY not in err
    assert KEY[8:20] not in err


def test_check_problem_lines_escape_document_ids(tmp_path, capsys):
    """``rechunk check`` names documents with neither chunks nor dead-letter rows: their ids are escaped."""
    docs = [{"id": "ok", "content": "Some text."}]
    write_documents(tmp_path / "in" / "docs.parquet", docs)
    out = tmp_path / "out"
    assert main(["--input", str(tmp_path / "in" / "docs.parquet"), "--output", str(out)]) == 0
    write_documents(tmp_path / "in" / "docs.parquet", [*docs, {"id": "evil\x1b]0;owned\x07\u202e", "content": "x"}])
    assert check_main(["--input", str(tmp_path / "in" / "docs.parquet"), "--output", str(out)]) == 1
    problems = [line for line in capsys.readouterr().out.splitlines() if line.startswith("PROBLEM")]
    assert problems and all(_is_safe(line) for line in problems) and "\\x1b]0;owned\\x07\\u202e" in problems[0]


def test_log_entries_are_escaped_line_by_line():
    record = logging.LogRecord("rechunk", logging.WARNING, __file__, 1, "document %s: \x1b[2J", ("a\u202eb",), None)
    text = EscapingFormatter("%(message)s").format(record)
    assert _is_safe(text) and text == "document a\\u202eb: \\x1b[2J"
