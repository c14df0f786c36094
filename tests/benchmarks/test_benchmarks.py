"""The throughput benchmark runs on a tiny input (so that it cannot rot), and its checks of a
peer's chunks find what they are meant to find. Speed is not asserted: it is measured by the
benchmark itself, as ratios taken side by side."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import throughput

SAMPLE = REPO / "sample" / "docs.parquet"


def test_check_chunks_finds_budget_verbatim_and_lost_text():
    text = "alpha beta gamma\n\ndelta epsilon zeta"
    count = lambda t: len(t.split())  # noqa: E731 - a stand-in tokenizer: words
    clean = throughput._check_chunks(text, ["alpha beta gamma", "delta epsilon zeta"], count)
    assert clean == {"over_budget": 0, "not_verbatim": 0, "lost_chars": 0, "chunks": 2}
    bad = throughput._check_chunks(text, ["alpha beta", "delta epsilon\ufffd"], count)
    # "gamma" is covered by no chunk, "delta epsilon zeta" by none verbatim.
    assert bad["not_verbatim"] == 1
    assert bad["lost_chars"] == len("gamma") + len("deltaepsilonzeta")
    monkey = throughput.MAX_TOKENS
    try:
        throughput.MAX_TOKENS = 2
        assert throughput._check_chunks(text, ["alpha beta gamma"], count)["over_budget"] == 1
    finally:
        throughput.MAX_TOKENS = monkey


@pytest.mark.slow
def test_benchmark_runs_on_a_tiny_input(tmp_path, capsys):
    out = tmp_path / "result.md"
    assert (
        throughput.main(
            [
                "--input",
                str(SAMPLE),
                "--docling-input",
                str(SAMPLE),
                "--max-chars",
                "3000",
                "--rounds",
                "1",
                "--skip",
                "job,linear",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    table = out.read_text()
    for row in (
        "encode_ordinary",
        "encode_ordinary_batch",
        "TokenTextSplitter + validation",
        "RecursiveCharacterTextSplitter (tokens)",
        "StructureAwareChunker + validation",
        "encode_ordinary of the Markdown export",
        "DoclingChunker (hybrid)",
    ):
        assert f"| {row} |" in table, row
    peers = {
        "chonkie": "chonkie RecursiveChunker",
        "semchunk": "semchunk",
        "langchain_text_splitters": "LangChain TokenTextSplitter",
    }
    for module, row in peers.items():
        if importlib.util.find_spec(module) is not None:
            assert f"| {row} |" in table and "0 over 512" in table.split(f"| {row} |")[1].splitlines()[0]
    if importlib.util.find_spec("matplotlib") is not None:
        assert out.with_suffix(".png").stat().st_size > 1000


@pytest.mark.slow
def test_benchmark_job_rows_alone_on_a_tiny_input(tmp_path):
    """--skip chunkers,docling,peers,linear: only the whole-job rows, each a real run of the job."""
    out = tmp_path / "job.md"
    assert (
        throughput.main(
            [
                "--input",
                str(SAMPLE),
                "--rounds",
                "1",
                "--skip",
                "chunkers,docling,peers,linear",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    table = out.read_text()
    assert "### Text" not in table and "### Docling" not in table and "### Linear" not in table
    rows = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ")
        for line in table.splitlines()
        if line.startswith("| plain") or line.startswith("| job")
    }
    assert len(rows) == 3
    chunks = {name: cells[4] for name, cells in rows.items()}
    assert len(set(chunks.values())) == 1 and int(chunks["job, DirectRunner in_memory"].replace(",", "")) > 7
    # multi_processing: the launcher and its two workers each have a CPU figure
    workers = rows["job, DirectRunner multi_processing, 2 workers"][7].split(", ")
    assert len(workers) >= 3 and all(float(c) > 0 for c in workers)


@pytest.mark.slow
def test_incremental_benchmark_runs_on_a_tiny_input(tmp_path):
    """benchmarks/incremental.py end to end on the sample: it checks the incremental output against
    the full run's itself (it exits otherwise) and reports the wall and CPU fractions."""
    import incremental

    out = tmp_path / "incremental.md"
    incremental.main(
        [
            "--input",
            str(SAMPLE),
            "--changed",
            "0.5",
            "--removed",
            "1",
            "--rounds",
            "1",
            "--workdir",
            str(tmp_path / "work"),
            "--out",
            str(out),
            "--",
            "--max-tokens",
            "300",
        ]
    )
    text = out.read_text()
    assert "| incremental |" in text and "| start-up, incremental |" in text
    # 7 documents: every second one in id order edited (4), the second removed, 2 left unchanged
    assert "(6 documents), 4 changed (66.7%), 1 removed;" in text and "Skipped unchanged: 2;" in text
    assert "By CPU seconds" in text and "As the issue words its goal" in text
    # the job options after -- reach every run, the previous one included
    assert "job options: --max-tokens 300." in text
    for run in ("previous", "full0", "inc0", "tiny0", "tinyinc0"):
        assert json.loads((tmp_path / "work" / run / "report.json").read_text())["max_tokens"] == 300, run


@pytest.mark.slow
def test_job_phases_on_the_sample(tmp_path, capsys):
    import job_phases

    figures = job_phases.main(["--input", str(SAMPLE), "--output", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert figures["exit"] == 0 and (tmp_path / "out" / "report.json").is_file()
    assert len(figures["stages"]) > 5 and 0 < figures["outside"] <= figures["launcher"] <= figures["critical"] + 1e-6
    assert any("Route chunk and validate" in stage for stage in figures["stages"])
    assert "critical path" in printed


@pytest.mark.slow
def test_plain_loop_and_linear_probe(tmp_path):
    result = throughput.plain_loop(str(SAMPLE), str(tmp_path / "loop"))
    import pyarrow.parquet as pq

    written = pq.read_table(tmp_path / "loop" / "chunks.parquet")
    assert result["documents_read"] == 7 and result["chunks_written"] == written.num_rows > 7
    assert max(written.column("token_count").to_pylist()) <= 512
    probe = throughput.linear_probe("one run of letters", "TokenTextSplitter", 2000, 1, str(SAMPLE))
    assert probe["large_seconds"] > 0 and probe["large_mb"] == pytest.approx(0.02)
    json.dumps(probe)


@pytest.mark.slow
def test_side_by_side_runs_on_a_tiny_input(capsys):
    # This checkout against itself: every row runs, and validation rejects nothing (it raises).
    import structure_side_by_side

    # The script swaps the transforms modules in sys.modules; the rest of the session keeps its own.
    ours = lambda: [k for k in sys.modules if k == "transforms" or k.startswith("transforms.")]  # noqa: E731
    saved = {k: sys.modules[k] for k in ours()}
    try:
        assert (
            structure_side_by_side.main(
                [
                    "--baseline",
                    str(REPO),
                    "--input",
                    str(SAMPLE),
                    "--max-chars",
                    "3000",
                    "--rounds",
                    "1",
                    "--chunker",
                    "TokenTextSplitter",
                    "--chunker",
                    "RecursiveCharacterTextSplitter",
                ]
            )
            == 0
        )
    finally:
        for k in ours():
            del sys.modules[k]
        sys.modules.update(saved)
    table = capsys.readouterr().out
    for row in ("baseline: TokenTextSplitter + validation", "this checkout: RecursiveCharacterTextSplitter"):
        assert f"| {row} |" in table, row


@pytest.mark.slow
def test_benchmark_rows_picks_rows(tmp_path):
    out = tmp_path / "rows.md"
    assert (
        throughput.main(
            [
                "--input",
                str(SAMPLE),
                "--max-chars",
                "3000",
                "--rounds",
                "1",
                "--skip",
                "job,linear,docling",
                "--rows",
                "TokenTextSplitter,LangChain TokenTextSplitter",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    names = [line.split(" | ")[0].lstrip("| ") for line in out.read_text().splitlines() if line.startswith("| ")]
    expected = ["encode_ordinary", "encode_ordinary_batch", "TokenTextSplitter", "TokenTextSplitter + validation"]
    if importlib.util.find_spec("langchain_text_splitters") is not None:
        expected.append("LangChain TokenTextSplitter")
    assert names[names.index("encode_ordinary") :] == expected


@pytest.mark.slow
def test_chunker_memory_runs_on_a_tiny_input(capsys):
    import chunker_memory

    assert chunker_memory.main(["--input", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "normalized: peak +" in out and "bytes a character" in out


def test_memory_benchmarks_one_block_documents_are_one_block_each(tmp_path):
    """memory.py's one-block documents (Markdown ``table``, ``list``, ``code``; ``html-list``,
    ``html-table``, ``rst-list``) are what their rows claim: one block of the kind in their format,
    with many short children, of the size asked for."""
    import memory
    import pyarrow.parquet as pq

    from transforms.structure.normalizers import default_normalizers

    documents = memory.single_documents(str(SAMPLE), 20_000, tmp_path)
    cases = (
        ("table", "table"),
        ("list", "list"),
        ("code", "code"),
        ("html-list", "list"),
        ("html-table", "table"),
        ("rst-list", "list"),
    )
    for name, kind in cases:
        path, figures = documents[name]
        chars = figures["characters"]
        row = pq.read_table(path).to_pylist()[0]
        content = row["content"]
        assert len(content) == chars and 20_000 <= chars < 20_100
        assert row["content_format"] == (name.partition("-")[0] if "-" in name else "markdown")
        blocks = list(default_normalizers().normalize(content, row["content_format"]).blocks)
        assert [b.kind for b in blocks] == [kind], name
        assert kind == "code" or len(list(blocks[0].children)) > 500


def test_memory_benchmarks_plain_content_and_bmp_documents(tmp_path):
    """``--plain-content`` writes ``content`` without a dictionary page (the other columns keep
    theirs) and the default keeps one; ``markdown-bmp`` is ``markdown`` with each astral code point
    replaced by U+FFFD (same length, a 2-byte string where ``markdown`` is a 4-byte one); the figures
    give the UTF-8 size and the string's width."""
    import memory
    import pyarrow as pa
    import pyarrow.parquet as pq

    corpus = tmp_path / "corpus.parquet"
    text = "# T\n\nCaf\u00e9 \u2014 rocket \U0001f680 done.\n"
    pq.write_table(
        pa.table({"id": ["a"], "content": [text], "content_format": ["markdown"], "metadata": [None]}), corpus
    )
    for plain in (False, True):
        folder = tmp_path / f"plain-{plain}"
        folder.mkdir()
        documents = memory.single_documents(str(corpus), 5_000, folder, plain, {"markdown", "markdown-bmp"})
        assert set(documents) == {"tiny", "markdown", "markdown-bmp"}
        for name in documents:
            columns = pq.ParquetFile(documents[name][0]).metadata.row_group(0)
            dictionary = {
                columns.column(i).path_in_schema: columns.column(i).has_dictionary_page
                for i in range(columns.num_columns)
            }
            assert dictionary["content"] is not plain and dictionary["id"], (name, plain)
        original = pq.read_table(documents["markdown"][0]).column("content")[0].as_py()
        bmp = pq.read_table(documents["markdown-bmp"][0]).column("content")[0].as_py()
        assert len(bmp) == len(original) == documents["markdown"][1]["characters"]
        assert "\U0001f680" in original and "\U0001f680" not in bmp
        assert bmp == original.replace("\U0001f680", "\ufffd")
        assert documents["markdown"][1]["string_bytes_per_char"] == 4.0
        assert documents["markdown-bmp"][1]["string_bytes_per_char"] == 2.0
        assert documents["tiny"][1]["string_bytes_per_char"] == 1.0
        assert documents["markdown"][1]["utf8_bytes"] == len(original.encode())


@pytest.mark.slow
def test_packer_memory_runs_on_a_tiny_input(capsys):
    import packer_memory

    for kind in ("table", "list", "code"):
        assert packer_memory.main(["--kind", kind, "--rows", "2000"]) == 0
        assert "peak +" in capsys.readouterr().out


@pytest.mark.slow
def test_check_output_reads_a_folder_with_a_column_map_and_finds_a_lost_document(tmp_path, capsys):
    """check_output.py on a run of renamed columns in a folder (``DIR/``, ``--column-map``): no
    problem; with one document's chunks removed from the output, it finds that document."""
    import check_output
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from pipelines.rechunk import main as rechunk

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
    assert check_output.main(argv) == 0
    chunks = ds.dataset(str(out / "chunks")).to_table()
    first = chunks.column("document_id")[0].as_py()
    kept = chunks.filter(ds.field("document_id") != first)
    for path in (out / "chunks").glob("*.parquet"):
        path.unlink()
    pq.write_table(kept, out / "chunks" / "kept.parquet")
    capsys.readouterr()
    assert check_output.main(argv) == 1
    assert "1 documents neither chunked nor dead-lettered" in capsys.readouterr().out


@pytest.mark.slow
def test_check_output_reads_the_input_as_the_job_does(tmp_path, capsys):
    """Binary content (UTF-8 or not), integer ids, a duplicate id and a format in capitals: no
    problem, and ``documents`` counts input rows as the report's ``documents_read`` does."""
    import check_output
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.rechunk import main as rechunk

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
    assert rechunk(["--input", str(source), "--output", str(out)]) == 0
    capsys.readouterr()
    assert check_output.main(["--input", str(source), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed[: printed.rindex("}") + 1])
    report = json.loads((out / "report.json").read_text())
    assert summary["documents"] == report["documents_read"] == 5
    assert summary["dead_letter_by_reason"] == {"duplicate_document_id": 2, "invalid_content": 1}


@pytest.mark.slow
def test_check_output_checks_spans_of_a_document_with_no_format(tmp_path, capsys):
    """A null or blank ``content_format`` is read as ``text``: its chunks' spans and coverage are
    checked too, so a lost span is found."""
    import check_output
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.rechunk import main as rechunk

    text = "First paragraph here.\n\nSecond paragraph, kept.\n"
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "content": [text, text], "content_format": [None, " "]}), source)
    out = tmp_path / "out"
    argv = ["--input", str(source), "--output", str(out)]
    assert rechunk(argv) == 0
    assert check_output.main(argv) == 0
    chunks = pq.read_table(out / "chunks").to_pylist()
    for chunk in chunks:  # every chunk now claims one character less of the document than its text
        metadata = json.loads(chunk["metadata"])
        start, end = metadata["structure"]["spans"][-1]
        metadata["structure"]["spans"][-1] = [start, end - 1]
        chunk["metadata"] = json.dumps(metadata)
    for path in (out / "chunks").glob("*.parquet"):
        path.unlink()
    pq.write_table(pa.Table.from_pylist(chunks), out / "chunks" / "edited.parquet")
    capsys.readouterr()
    assert check_output.main(argv) == 1
    printed = capsys.readouterr().out
    assert printed.count("text is not its spans") == 2


def test_chunks_sha256_ignores_file_and_row_order_but_not_values(tmp_path):
    """benchmarks/chunks_sha256.py: the same rows split over files in another order hash alike;
    one changed value (of any column) changes the hash."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from chunks_sha256 import chunks_sha256

    rows = [{"chunk_id": f"c{i}", "text": f"text {i}", "token_count": i, "headings": ["A", str(i)]} for i in range(6)]
    for name, parts in (("a", [rows[:4], rows[4:]]), ("b", [rows[5:][::-1] + rows[:2], rows[2:5][::-1]])):
        (tmp_path / name / "chunks").mkdir(parents=True)
        for k, part in enumerate(parts):
            pq.write_table(pa.Table.from_pylist(part), tmp_path / name / "chunks" / f"part-{k}.parquet")
    first, second = chunks_sha256(tmp_path / "a"), chunks_sha256(tmp_path / "b")
    assert first == second and first[0] == 6 and first[1] == ["chunk_id", "headings", "text", "token_count"]
    for column, value in (("text", "text 3!"), ("token_count", 30), ("headings", ["A", "x"])):
        changed = [dict(r, **{column: value}) if r["chunk_id"] == "c3" else r for r in rows]
        (tmp_path / column / "chunks").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(changed), tmp_path / column / "chunks" / "part-0.parquet")
        assert chunks_sha256(tmp_path / column)[2] != first[2]


@pytest.mark.slow
def test_parquet_pages_benchmark_on_the_sample(tmp_path):
    """benchmarks/parquet_pages.py on the sample's chunks: both writers give every row back, and
    the job's writer leaves no dictionary on the text columns (so its file differs)."""
    import parquet_pages

    from pipelines.rechunk import main as rechunk

    assert rechunk(["--input", str(SAMPLE), "--output", str(tmp_path / "out")]) == 0
    rows = parquet_pages.main([str(tmp_path / "out" / "chunks"), "--rounds", "1", "--out", str(tmp_path / "t.md")])
    assert [r["rows"] for r in rows] == [rows[0]["rows"]] * 2 and rows[0]["rows"] > 7
    assert rows[0]["mb"] != rows[1]["mb"]
    assert "| the job's (text in plain pages) |" in (tmp_path / "t.md").read_text()


@pytest.mark.slow
def test_check_output_recounts_with_the_runs_tokenizer(tmp_path, capsys):
    """check_output.py counts with the report's tokenizer (``hf:`` from ``--tokenizer-json``, its
    hash checked), not always cl100k_base: a ``utf8-bytes`` run gives no false "token_count !=
    recount" problem, and a wrong ``token_count`` is still found."""
    import check_output
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers, trainers

    from pipelines.rechunk import main as rechunk

    out = tmp_path / "bytes"
    assert (
        rechunk(["--input", str(SAMPLE), "--output", str(out), "--tokenizer", "utf8-bytes", "--max-tokens", "300"]) == 0
    )
    assert check_output.main(["--input", str(SAMPLE), "--output", str(out)]) == 0
    (shard, *_) = sorted((out / "chunks").glob("*.parquet"))
    table = pq.read_table(shard)
    i = table.schema.get_field_index("token_count")
    pq.write_table(table.set_column(i, "token_count", pc.add(table.column(i), 1)), shard)
    capsys.readouterr()
    assert check_output.main(["--input", str(SAMPLE), "--output", str(out)]) == 1
    assert "token_count" in capsys.readouterr().out

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
    assert (
        check_output.main(["--input", str(SAMPLE), "--output", str(out), "--tokenizer-json", str(tmp_path / "tok")])
        == 0
    )
    with pytest.raises(SystemExit, match=r"give its tokenizer.json as --tokenizer-json"):
        check_output.main(["--input", str(SAMPLE), "--output", str(out)])
    other = tmp_path / "other.json"
    other.write_text((tmp_path / "tok" / "tokenizer.json").read_text() + "\n")
    with pytest.raises(SystemExit, match="not the run's tokenizer"):
        check_output.main(["--input", str(SAMPLE), "--output", str(out), "--tokenizer-json", str(other)])
    # a path that is not there is a one-line error, not a FileNotFoundError traceback
    with pytest.raises(SystemExit, match=r"neither a tokenizer.json nor a folder holding one"):
        check_output.main(["--input", str(SAMPLE), "--output", str(out), "--tokenizer-json", str(tmp_path / "none")])


@pytest.mark.slow
def test_check_output_lists_input_files_as_the_job_does(tmp_path, capsys):
    """check_output.py lists input files as the job does: a folder holding Spark's ``_SUCCESS``
    (the job skips it) and a ``**`` pattern are read, with no traceback."""
    import shutil

    import check_output

    from pipelines.rechunk import main as rechunk

    folder = tmp_path / "in" / "year=2024"
    folder.mkdir(parents=True)
    shutil.copy(SAMPLE, folder / "part-0.parquet")
    (folder / "_SUCCESS").write_bytes(b"")
    out = tmp_path / "out"
    assert rechunk(["--input", f"{folder}/", "--output", str(out)]) == 0
    assert check_output.main(["--input", f"{folder}/", "--output", str(out)]) == 0
    out2 = tmp_path / "out2"
    assert rechunk(["--input", f"{tmp_path / 'in'}/**.parquet", "--output", str(out2)]) == 0
    assert check_output.main(["--input", f"{tmp_path / 'in'}/**.parquet", "--output", str(out2)]) == 0
    with pytest.raises(SystemExit, match="no document read"):
        check_output.main(["--input", f"{tmp_path / 'in'}/*.parquet", "--output", str(out2)])


@pytest.mark.slow
def test_check_output_reads_a_relative_pattern_as_the_job_does(tmp_path, monkeypatch):
    """A relative pattern the job reads (``'my docs [[]v1]/*.parquet'``, or ``'*.parquet'`` inside a
    folder named like a pattern) is read by check_output.py too."""
    import shutil

    import check_output

    from pipelines.rechunk import main as rechunk

    here = tmp_path / "proj [v1]"
    (here / "my docs [v1]").mkdir(parents=True)
    shutil.copy(SAMPLE, here / "my docs [v1]" / "docs.parquet")
    shutil.copy(SAMPLE, here / "docs.parquet")
    monkeypatch.chdir(here)
    for pattern, out in (("my docs [[]v1]/*.parquet", "out1"), ("my docs [[]v1]/", "out2"), ("*.parquet", "out3")):
        assert rechunk(["--input", pattern, "--output", str(tmp_path / out)]) == 0
        assert check_output.main(["--input", pattern, "--output", str(tmp_path / out)]) == 0, pattern
