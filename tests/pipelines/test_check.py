"""``rechunk check``: a finished run's output checked against its input, independently of the job.

Each test runs the job on a small input, then the check: no problem on the job's own output, and
the problem found once the output is edited."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from pipelines.check import main as check
from pipelines.rechunk import main as rechunk
from tests.conftest import REPO

SAMPLE = REPO / "sample" / "docs.parquet"


@pytest.mark.slow
def test_a_folder_with_a_column_map_has_no_problem_and_a_lost_document_is_found(tmp_path, capsys):
    """A run of renamed columns in a folder (``DIR/``, ``--column-map``): no problem; with one
    document's chunks removed from the output, that document is found."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    table = pq.read_table(SAMPLE)
    table = table.rename_columns(
        ["doc_id" if n == "id" else "body" if n == "content" else n for n in table.column_names]
    )
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(table.slice(0, 3), folder / "a.parquet")
    pq.write_table(table.slice(3), folder / "b.parquet")
    out = tmp_path / "out"
    mapping = "id=doc_id,content=body"
    assert rechunk(["--input", f"{folder}/", "--output", str(out), "--column-map", mapping]) == 0
    argv = ["--input", f"{folder}/", "--output", str(out), "--column-map", mapping]
    assert check(argv) == 0
    chunks = ds.dataset(str(out / "chunks")).to_table()
    first = chunks.column("document_id")[0].as_py()
    kept = chunks.filter(ds.field("document_id") != first)
    for path in (out / "chunks").glob("*.parquet"):
        path.unlink()
    pq.write_table(kept, out / "chunks" / "kept.parquet")
    capsys.readouterr()
    assert check(argv) == 1
    assert "1 documents neither chunked nor dead-lettered" in capsys.readouterr().out


@pytest.mark.slow
def test_the_input_is_read_as_the_job_reads_it(tmp_path, capsys):
    """Binary content (UTF-8 or not), integer ids, a duplicate id and a format in capitals: no
    problem, and ``documents`` counts input rows as the report's ``documents_read`` does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "id": pa.array([1, 2, 3, 3, 4], pa.int64()),
            "content": pa.array(
                [b"# A\n\nText one.", b"plain \xc3\xa9 text", b"dup", b"dup", b"\xff\xfe"], pa.binary()
            ),
            "content_format": [" Markdown ", "text", "text", "text", "text"],
        }
    )
    source = tmp_path / "in.parquet"
    pq.write_table(table, source)
    out = tmp_path / "out"
    assert rechunk(["--input", str(source), "--output", str(out), "--max-dead-letter-fraction", "1"]) == 0
    capsys.readouterr()
    assert check(["--input", str(source), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed[: printed.rindex("}") + 1])
    report = json.loads((out / "report.json").read_text())
    assert summary["documents"] == report["documents_read"] == 5
    assert summary["dead_letter_by_reason"] == {"duplicate_document_id": 2, "invalid_content": 1}


def test_spans_of_a_document_with_no_format_are_checked(tmp_path, capsys):
    """A null or blank ``content_format`` is read as ``text``: its chunks' spans and coverage are
    checked, so a lost span is found."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = "First paragraph here.\n\nSecond paragraph, kept.\n"
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "content": [text, text], "content_format": [None, " "]}), source)
    out = tmp_path / "out"
    argv = ["--input", str(source), "--output", str(out)]
    assert rechunk(argv) == 0
    assert check(argv) == 0
    chunks = pq.read_table(out / "chunks").to_pylist()
    for chunk in chunks:  # every chunk claims one character less of the document than its text
        metadata = json.loads(chunk["metadata"])
        start, end = metadata["structure"]["spans"][-1]
        metadata["structure"]["spans"][-1] = [start, end - 1]
        chunk["metadata"] = json.dumps(metadata)
    for path in (out / "chunks").glob("*.parquet"):
        path.unlink()
    pq.write_table(pa.Table.from_pylist(chunks), out / "chunks" / "edited.parquet")
    capsys.readouterr()
    assert check(argv) == 1
    printed = capsys.readouterr().out
    assert printed.count("text is not its spans") == 2


@pytest.mark.slow
def test_tokens_are_recounted_with_the_runs_tokenizer(tmp_path, capsys):
    """Tokens are counted as the report's tokenizer counts them (``utf8-bytes``; ``hf:`` from
    ``--tokenizer-json``, its hash checked), with no false "token_count != recount" problem, and
    a wrong ``token_count`` is found."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers, trainers

    out = tmp_path / "bytes"
    assert (
        rechunk(["--input", str(SAMPLE), "--output", str(out), "--tokenizer", "utf8-bytes", "--max-tokens", "300"]) == 0
    )
    assert check(["--input", str(SAMPLE), "--output", str(out)]) == 0
    _a_wrong_token_count_is_found(out, capsys)

    tok = HFTokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ["the cat sat on the mat"], trainers.WordLevelTrainer(special_tokens=["[UNK]"], show_progress=False)
    )
    (tmp_path / "tok").mkdir()
    tok.save(str(tmp_path / "tok" / "tokenizer.json"))
    out = tmp_path / "hf"
    assert (
        rechunk(
            [
                "--input",
                str(SAMPLE),
                "--output",
                str(out),
                "--tokenizer",
                f"hf:{tmp_path / 'tok'}",
                "--max-tokens",
                "200",
            ]
        )
        == 0
    )
    assert check(["--input", str(SAMPLE), "--output", str(out), "--tokenizer-json", str(tmp_path / "tok")]) == 0
    _refused(capsys, r"give its tokenizer\.json as --tokenizer-json", ["--input", str(SAMPLE), "--output", str(out)])
    other = tmp_path / "other.json"
    other.write_text((tmp_path / "tok" / "tokenizer.json").read_text() + "\n")
    _refused(
        capsys,
        "not the run's tokenizer",
        ["--input", str(SAMPLE), "--output", str(out), "--tokenizer-json", str(other)],
    )
    # a path that is not there: one line, no traceback
    _refused(
        capsys,
        r"neither a tokenizer\.json nor a folder holding one",
        ["--input", str(SAMPLE), "--output", str(out), "--tokenizer-json", str(tmp_path / "none")],
    )


@pytest.mark.slow
def test_input_files_are_listed_as_the_job_lists_them(tmp_path, capsys):
    """A folder holding Spark's ``_SUCCESS`` (the job skips it) and a ``**`` pattern (across
    folders, by Beam's matching) are read as the job reads them."""
    import shutil

    folder = tmp_path / "in" / "year=2024"
    folder.mkdir(parents=True)
    shutil.copy(SAMPLE, folder / "part-0.parquet")
    (folder / "_SUCCESS").write_bytes(b"")
    out = tmp_path / "out"
    assert rechunk(["--input", f"{folder}/", "--output", str(out)]) == 0
    assert check(["--input", f"{folder}/", "--output", str(out)]) == 0
    out2 = tmp_path / "out2"
    assert rechunk(["--input", f"{tmp_path / 'in'}/**.parquet", "--output", str(out2)]) == 0
    assert check(["--input", f"{tmp_path / 'in'}/**.parquet", "--output", str(out2)]) == 0
    _refused(capsys, "no document read", ["--input", f"{tmp_path / 'in'}/*.parquet", "--output", str(out2)], 1)


@pytest.mark.slow
def test_a_relative_pattern_is_read_as_the_job_reads_it(tmp_path, monkeypatch):
    """A relative pattern the job reads (``'my docs [[]v1]/*.parquet'``, or ``'*.parquet'``
    inside a folder named like a pattern) is read here too."""
    import shutil

    here = tmp_path / "proj [v1]"
    (here / "my docs [v1]").mkdir(parents=True)
    shutil.copy(SAMPLE, here / "my docs [v1]" / "docs.parquet")
    shutil.copy(SAMPLE, here / "docs.parquet")
    monkeypatch.chdir(here)
    for pattern, out in (("my docs [[]v1]/*.parquet", "out1"), ("my docs [[]v1]/", "out2"), ("*.parquet", "out3")):
        assert rechunk(["--input", pattern, "--output", str(tmp_path / out)]) == 0
        assert check(["--input", pattern, "--output", str(tmp_path / out)]) == 0, pattern


@pytest.mark.slow
def test_rechunk_check_runs_through_the_command_line_entry_point(tmp_path):
    """``rechunk check`` (``python -m pipelines.rechunk``, the console script's ``cli``): the figures on stdout and exit 0 on the
    job's output; exit 1 and a ``PROBLEM`` line once a chunk's ``token_count`` is wrong."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    assert rechunk(["--input", str(SAMPLE), "--output", str(out)]) == 0
    command = [sys.executable, "-m", "pipelines.rechunk", "check"]
    command += ["--input", str(SAMPLE), "--output", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)
    assert (
        figures["problems"] == 0
        and figures["chunks"] == json.loads((out / "report.json").read_text())["chunks_written"]
    )
    (shard, *_) = sorted((out / "chunks").glob("*.parquet"))
    table = pq.read_table(shard)
    i = table.schema.get_field_index("token_count")
    pq.write_table(table.set_column(i, "token_count", pc.add(table.column(i), 1)), shard)
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1
    assert any(line.startswith("PROBLEM ") and "token_count" in line for line in proc.stdout.splitlines())


def _a_wrong_token_count_is_found(out, capsys) -> None:
    """One more token in every chunk of the run's first shard: the check finds it (exit status 1)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    (shard, *_) = sorted((out / "chunks").glob("*.parquet"))
    table = pq.read_table(shard)
    i = table.schema.get_field_index("token_count")
    pq.write_table(table.set_column(i, "token_count", pc.add(table.column(i), 1)), shard)
    capsys.readouterr()
    assert check(["--input", str(SAMPLE), "--output", str(out)]) == 1
    assert "token_count" in capsys.readouterr().out


def _refused(capsys, message: str, argv: list[str], status: int = 2) -> None:
    """``rechunk check argv`` cannot be made: exit status 2 (a mistake in its options) or 1, and
    one line on stderr matching ``message``."""
    capsys.readouterr()
    assert check(argv) == status
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("rechunk check: error: ") and re.search(message, err), err


@pytest.mark.slow
def test_tokens_of_a_model_budget_are_recounted_with_the_models_prompt_and_special_tokens(tmp_path, capsys):
    """``hf-model:`` counts are recounted from ``--tokenizer-json`` with the model's default prompt
    (read beside it, and covered by the identity's digest) and its special tokens: a recount
    without them would find every chunk's ``token_count`` wrong."""
    import json

    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers, processors, trainers

    tok = HFTokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ["the cat sat on the mat query"],
        trainers.WordLevelTrainer(special_tokens=["[UNK]", "[CLS]", "[SEP]"], show_progress=False),
    )
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    model = tmp_path / "model"
    model.mkdir()
    tok.save(str(model / "tokenizer.json"))
    prompts = {"prompts": {"query": "query: "}, "default_prompt_name": "query"}
    (model / "config_sentence_transformers.json").write_text(json.dumps(prompts))
    out = tmp_path / "out"
    argv = ["--input", str(SAMPLE), "--output", str(out), "--tokenizer", f"hf-model:{model}", "--max-tokens", "200"]
    assert rechunk(argv) == 0
    assert check(["--input", str(SAMPLE), "--output", str(out), "--tokenizer-json", str(model)]) == 0
    # Another prompt beside the same tokenizer.json is another tokenizer.
    (model / "config_sentence_transformers.json").write_text(json.dumps({**prompts, "prompts": {"query": "q: "}}))
    _refused(
        capsys,
        "not the run's tokenizer",
        ["--input", str(SAMPLE), "--output", str(out), "--tokenizer-json", str(model)],
    )


@pytest.mark.slow
@pytest.mark.parametrize("recount", ["independent", "same-engine"])
def test_an_o200k_run_is_recounted_with_o200k(tmp_path, capsys, recount):
    """A run with ``tiktoken:o200k_base`` (either recount) passes the check, which counts with its
    own tiktoken encoding of the bpe-openai wheel's file; one wrong ``token_count`` is found."""

    config = tmp_path / "config.yaml"
    config.write_text(f"recount: {recount}\nchunkers: {{s: {{type: StructureAwareChunker}}}}\ndefault: s\n")
    out = tmp_path / "out"
    argv = ["--input", str(SAMPLE), "--output", str(out), "--config", str(config)]
    assert rechunk([*argv, "--tokenizer", "tiktoken:o200k_base", "--max-tokens", "200"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["tokenizer"] == "tiktoken:o200k_base:446a9538"
    assert report["recount"] == {
        "mode": recount,
        "chunk_engine": "bpe-openai",
        "recount_engine": "tiktoken" if recount == "independent" else "bpe-openai",
    }
    assert check(["--input", str(SAMPLE), "--output", str(out)]) == 0
    _a_wrong_token_count_is_found(out, capsys)


@pytest.mark.slow
def test_chunks_of_documents_the_input_lacks_are_a_problem_not_an_error(tmp_path, capsys):
    """Checked against part of its input, a run's other documents' chunks are one PROBLEM line."""
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    assert rechunk(["--input", str(SAMPLE), "--output", str(out)]) == 0
    part = tmp_path / "part.parquet"
    table = pq.read_table(SAMPLE)
    pq.write_table(table.slice(0, 3), part)
    capsys.readouterr()
    assert check(["--input", str(part), "--output", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    problems = [line for line in captured.out.splitlines() if line.startswith("PROBLEM ")]
    assert problems == [
        f"PROBLEM chunks of {len(table) - 3} documents that --input does not hold, e.g. "
        f"{sorted(table.column('id').to_pylist()[3:])[:3]} (is --input the run's whole input?)"
    ]


def test_a_truncated_gzip_ranks_file_is_a_one_line_error(tmp_path, monkeypatch):
    """A truncated gzip raises EOFError, which is neither OSError nor ValueError: it must still be
    the check's one-line error, not a traceback."""
    import gzip

    from pipelines import check as check_module

    data = tmp_path / "ranksbox" / "data"
    data.mkdir(parents=True)
    (tmp_path / "ranksbox" / "__init__.py").write_text("")
    whole = gzip.compress(b"".join(b"%d %d\n" % (i * 7919, i) for i in range(5000)))
    (data / "o200k_base.tiktoken.gz").write_bytes(whole[: len(whole) // 2])
    monkeypatch.syspath_prepend(str(tmp_path))
    sha256, _, pattern = check_module._ENCODINGS["o200k_base"]
    monkeypatch.setitem(check_module._ENCODINGS, "o200k_base", (sha256, ("ranksbox/data",), pattern))
    with pytest.raises(SystemExit, match=r"^cannot read o200k_base\.tiktoken: EOFError"):
        check_module._encoding("o200k_base")
