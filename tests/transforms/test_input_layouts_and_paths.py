"""Hostile inputs for the job's own Parquet read (``ReadParquetRows``) and what surrounds it:
row-group layouts, schemas that differ file by file, odd paths, Beam's runtime type checks."""

from __future__ import annotations

import json

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipelines.rechunk import main
from tests.conftest import REPO, read_output
from transforms.beam import AdmitDocuments, ReadDocuments
from transforms.beam.read import _ReadRowGroupsDoFn, _RowGroupRangesDoFn


def _invalid_utf8(items: list[bytes]) -> pa.Array:
    offsets = np.cumsum([0] + [len(b) for b in items]).astype(np.int32)
    return pa.Array.from_buffers(
        pa.string(), len(items), [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(items))]
    )


def test_a_file_of_many_row_groups_has_its_footer_parsed_once_per_range(tmp_path, monkeypatch):
    """A range of row groups opens the file and parses its footer once, not once per row group (a
    file of n row groups would cost n footers of n row groups: 8,000 one-row row groups, 145 s)."""
    path = tmp_path / "tiny.parquet"
    rows = [{"id": f"d{i:03d}", "content": f"document {i}"} for i in range(300)]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=1)
    parsed = []
    init = pq.ParquetFile.__init__

    def spy(self, source, *args, metadata=None, **kwargs):
        if metadata is None:
            parsed.append(source)
        init(self, source, *args, metadata=metadata, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "__init__", spy)
    metadata = FileSystems.match([str(path)])[0].metadata_list[0]
    ranges = list(_RowGroupRangesDoFn().process(metadata))
    assert [r[:3] for r in ranges] == [(str(path), 0, 300)] and len(parsed) == 1
    parsed.clear()
    assert list(_ReadRowGroupsDoFn(None, {}).process(ranges[0])) == rows
    assert len(parsed) == 1  # one footer for the range, not one per row group


@pytest.fixture
def mixed(tmp_path):
    """Files whose schemas differ (string, large_string, string_view, dictionary, binary, int ids,
    nested extra columns, invalid UTF-8, no column at all) and layouts (one-row row groups, empty
    row groups, none),
    with the rows a reader must give, renamed to the contract's names."""
    folder = tmp_path / "in [x] ü"
    folder.mkdir()
    expected = []

    def write(name, table, **kwargs):
        pq.write_table(table, folder / name, **kwargs)
        expected.extend(table.to_pylist() if name != "invalid.parquet" else [])

    write(
        "plain.parquet",
        pa.table({"id": [f"p{i}" for i in range(12)], "content": [f"plain {i}" for i in range(12)]}),
        row_group_size=1,
    )
    write(
        "large.parquet",
        pa.table(
            {
                "id": pa.array(["l0", "l1"], pa.large_string()),
                "content": pa.array(["large 0", "large 1"], pa.large_string()),
                "n": [1, 2],
            }
        ),
    )
    write(
        "view.parquet",
        pa.table({"id": pa.array(["v0"], pa.string_view()), "content": pa.array(["view 0"], pa.string_view())}),
    )
    write("binary.parquet", pa.table({"id": pa.array([b"b0", b"b1"]), "content": pa.array([b"bin 0", None])}))
    write(
        "ints.parquet",
        pa.table(
            {"id": pa.array([7, None], pa.int64()), "content": ["seven", "no id"], "meta": pa.array([{"a": 1}, None])}
        ),
    )
    dictionary = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, None], pa.int32()), _invalid_utf8([b"dict 0", b"dict \xff"])
    )
    pq.write_table(
        pa.table({"id": pa.array(["k0", "k1", "k2"]).dictionary_encode(), "content": dictionary}),
        folder / "dict.parquet",
    )
    expected += [
        {"id": "k0", "content": "dict 0"},
        {"id": "k1", "content": b"dict \xff"},
        {"id": "k2", "content": None},
    ]
    pq.write_table(
        pa.table({"id": ["u0", "u1"], "content": _invalid_utf8([b"ok", b"\xed\xa0\x80 surrogate"])}),
        folder / "invalid.parquet",
    )
    expected += [{"id": "u0", "content": "ok"}, {"id": "u1", "content": b"\xed\xa0\x80 surrogate"}]
    schema = pa.schema([("id", pa.string()), ("content", pa.string())])
    with pq.ParquetWriter(folder / "holes.parquet", schema) as writer:  # empty row groups between rows
        for i in range(3):
            writer.write_table(schema.empty_table())
            writer.write_table(pa.table({"id": [f"h{i}"], "content": [f"hole {i}"]}, schema=schema))
    expected += [{"id": f"h{i}", "content": f"hole {i}"} for i in range(3)]
    with pq.ParquetWriter(folder / "none.parquet", schema):
        pass
    pq.write_table(pa.table({"a": [1]}).drop_columns(["a"]), folder / "no column.parquet")  # a row group of no column
    return folder, expected


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")  # Beam's regex of "[[]"
@pytest.mark.parametrize("mode", ["in_memory", "multi_processing"])
def test_files_of_differing_schemas_and_layouts_give_every_row_once(mixed, mode):
    folder, expected = mixed
    options = PipelineOptions(runner="DirectRunner", direct_running_mode=mode, direct_num_workers=2)
    # The folder's name holds "[x]": a glob character class unless escaped as "[[]".
    pattern = str(folder).replace("[", "[[]") + "/*.parquet"
    with BeamTestPipeline(options=options) as p:
        assert_that(p | ReadDocuments(pattern), equal_to(expected))


def _layouts(folder, rows: list[dict]) -> list[str]:
    """The same rows as Parquet in four layouts: one row group, one-row row groups, row groups of
    3 over 4 files, and 7 files of varied row-group sizes. Returns the four patterns."""
    table = pa.Table.from_pylist(rows)
    patterns = []
    layouts = [("one", 1, [10**6]), ("single", 1, [1]), ("four", 4, [3]), ("seven", 7, [1, 2, 5, 1000])]
    for name, files, sizes in layouts:
        (folder / name).mkdir(parents=True)
        per = -(-table.num_rows // files)
        for i in range(files):
            pq.write_table(
                table.slice(i * per, per), folder / name / f"part {i}.parquet", row_group_size=sizes[i % len(sizes)]
            )
        patterns.append(str(folder / name / "*.parquet"))
    return patterns


@pytest.mark.slow
def test_chunk_ids_and_dead_letters_do_not_depend_on_the_row_group_layout(tmp_path):
    rows = pq.read_table(REPO / "sample" / "docs.parquet").to_pylist()
    rows += [
        {"id": "dup", "content": "a", "content_format": None, "metadata": None},
        {"id": "dup", "content": "b", "content_format": None, "metadata": None},
        {"id": None, "content": "no id", "content_format": None, "metadata": None},
        {"id": "nul", "content": None, "content_format": "text", "metadata": "[1]"},
    ]
    outcomes = []
    for i, pattern in enumerate(_layouts(tmp_path / "in", rows)):
        out = tmp_path / f"out{i}"
        mode = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"] if i == 2 else []
        argv = [
            "--input",
            pattern,
            "--output",
            str(out),
            "--progress-seconds",
            "0",
            "--max-dead-letter-fraction",
            "1",
        ]
        assert main([*argv, *mode]) == 0
        chunks = sorted((c["chunk_id"], c["document_id"], c["chunk_index"]) for c in read_output(out, "chunks"))
        dead = sorted(
            (d["document_id"] or "", d["reason"], d["payload"] or "") for d in read_output(out, "dead_letter")
        )
        report = json.loads((out / "report.json").read_text())
        figures = {
            k: report[k]
            for k in (
                "documents_read",
                "documents_chunked",
                "documents_dead_lettered",
                "chunks_written",
                "dead_letter_by_reason",
            )
        }
        outcomes.append((chunks, dead, figures))
    assert outcomes[0][2]["documents_read"] == len(rows) and len(outcomes[0][1]) == 4
    assert all(outcome == outcomes[0] for outcome in outcomes[1:])


@pytest.mark.slow
def test_runtime_type_checks_pass_dead_letter_rows(tmp_path):
    """Beam's runtime type checks check a ParDo's tagged outputs against its main output's hint:
    admission's ParDo, hinted ``Document``, failed the job on its first dead-letter row."""
    options = PipelineOptions(runner="DirectRunner", performance_runtime_type_check=True)
    # beam.Pipeline: Beam's TestPipeline runs a copy through the runner API, which drops the hints.
    with beam.Pipeline(options=options) as p:
        identity = p | "identity" >> beam.Create(["tok"])
        rows = p | "rows" >> beam.Create([{"id": "a", "content": "x"}, {"id": "b", "content": None}])
        admitted = rows | AdmitDocuments(identity)
        assert_that(admitted.documents | "ids" >> beam.Map(lambda d: d.id), equal_to(["a"]), label="documents")
        assert_that(
            admitted.dead_letter | "reasons" >> beam.Map(lambda d: d.reason),
            equal_to(["null_content"]),
            label="dead letter",
        )


@pytest.mark.slow
def test_an_input_folder_with_a_trailing_slash_reads_its_files(tmp_path, capsys):
    """Beam's match reads "DIR/" as "DIR/*"; the check did, but the workers' absolute path
    dropped the "/" and the job failed mid-pipeline reading the folder itself as a file."""
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "content": ["first", "second"]}), folder / "docs.parquet")
    out = tmp_path / "out"
    assert main(["--input", f"{folder}/", "--output", str(out), "--progress-seconds", "0"]) == 0
    assert sorted(c["document_id"] for c in read_output(out, "chunks")) == ["a", "b"]


@pytest.mark.slow
def test_an_input_folder_skips_hidden_files_and_markers(tmp_path, capsys):
    """A Spark or Hadoop output folder holds ``_SUCCESS`` and ``.*.crc`` files, and a folder opened
    in macOS's Finder gains a ``.DS_Store``: with ``DIR/``, names starting with ``.`` or ``_`` are
    skipped, as pyarrow's datasets and Spark skip them (no "not a readable Parquet file" option
    error); other files are still checked."""
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "content": ["first", "second"]}), folder / "part-00000.parquet")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / ".part-00000.parquet.crc").write_bytes(b"crc\x00")
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    out = tmp_path / "out"
    assert main(["--input", f"{folder}/", "--output", str(out), "--progress-seconds", "0"]) == 0
    assert sorted(c["document_id"] for c in read_output(out, "chunks")) == ["a", "b"]
    (folder / "notes.txt").write_text("not parquet")
    assert main(["--input", f"{folder}/", "--output", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--input {folder}/: {folder}/notes.txt is not a readable Parquet file" in err[0]
    markers = tmp_path / "markers"
    markers.mkdir()
    (markers / "_SUCCESS").write_bytes(b"")
    assert main(["--input", f"{markers}/", "--output", str(tmp_path / "out3")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"rechunk: error: --input {markers}/: no file matches (names starting with . or _ are skipped)"
    )


@pytest.mark.slow
def test_a_relative_pattern_that_starts_with_a_glob_reads_its_files(tmp_path, monkeypatch, capsys):
    """Beam lists a relative pattern from the folder before its first glob character: for
    '*.parquet' or 'in[1]/x.parquet' that is no folder, yet the command line's check finds the
    files the workers, given the absolute pattern, read (no "no file matches", exit 2)."""
    folder = tmp_path / "in1"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a"], "content": ["first"]}), folder / "a.parquet")
    pq.write_table(pa.table({"id": ["b"], "content": ["second"]}), folder / "b.parquet")
    monkeypatch.chdir(folder)
    assert main(["--input", "*.parquet", "--output", str(tmp_path / "out"), "--progress-seconds", "0"]) == 0
    assert sorted(c["document_id"] for c in read_output(tmp_path / "out", "chunks")) == ["a", "b"]
    monkeypatch.chdir(tmp_path)
    assert main(["--input", "in[1]/b.parquet", "--output", str(tmp_path / "out2"), "--progress-seconds", "0"]) == 0
    assert [c["document_id"] for c in read_output(tmp_path / "out2", "chunks")] == ["b"]
    # A folder named without its "/" still gets the hint, in the words it was given.
    assert main(["--input", "in1", "--output", str(tmp_path / "out3")]) == 2
    assert capsys.readouterr().err.strip().endswith("; for the files in a folder write in1/")


@pytest.mark.slow
def test_an_input_folder_whose_name_holds_an_unclosed_bracket_reads_its_files(tmp_path):
    """Beam reads a "[" that no "]" closes literally: "data[2024/" reads its files as "data[2024/*"
    (the "]" of "data[2024/[!._]*" must not close it, or nothing matches). A closed set in the
    folder's name stays a set."""
    for name, ident in (("data[2024", "a"), ("d1", "b"), ("d2", "c")):
        (tmp_path / name).mkdir()
        pq.write_table(pa.table({"id": [ident], "content": ["text"]}), tmp_path / name / "x.parquet")
    assert main(["--input", f"{tmp_path}/data[2024/", "--output", str(tmp_path / "o1"), "--progress-seconds", "0"]) == 0
    assert [c["document_id"] for c in read_output(tmp_path / "o1", "chunks")] == ["a"]
    assert main(["--input", f"{tmp_path}/d[12]/", "--output", str(tmp_path / "o2"), "--progress-seconds", "0"]) == 0
    assert sorted(c["document_id"] for c in read_output(tmp_path / "o2", "chunks")) == ["b", "c"]


@pytest.mark.slow
def test_relative_paths_under_a_current_folder_named_like_a_pattern(tmp_path, monkeypatch, capsys):
    """The workers get relative paths made absolute, which Beam reads as patterns: run from a folder
    "proj [v1]", --input docs.parquet has its folder written literally (no "No files found" in the
    workers); --output out and --previous prev there are option errors (not a failure in the
    job's last step with beam-temp files left, or in the workers)."""
    folder = tmp_path / "proj [v1]"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a"], "content": ["first"]}), folder / "docs.parquet")
    monkeypatch.chdir(folder)
    out = tmp_path / "out"
    assert main(["--input", "docs.parquet", "--output", str(out), "--progress-seconds", "0"]) == 0
    assert [c["document_id"] for c in read_output(out, "chunks")] == ["a"]
    capsys.readouterr()
    literal = str(tmp_path / "proj [[]v1]" / "docs.parquet")  # the folder's name, as a pattern
    assert main(["--input", literal, "--output", "out2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rechunk: error: --output out2: the current folder {folder} holds * ? [ ] {{ }}")
    assert not (folder / "out2").exists()
    (folder / "prev").symlink_to(out)
    assert main(["--input", literal, "--output", str(tmp_path / "o3"), "--previous", "prev"]) == 2
    assert capsys.readouterr().err.strip().startswith("rechunk: error: --previous prev: the current folder")


def test_an_output_inside_an_unnormalized_input_folder_is_refused(tmp_path, capsys):
    """The inside-the-input check compares normalized paths: DIR/../DIR/ is DIR/."""
    folder = tmp_path / "d"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a"], "content": ["first"]}), folder / "a.parquet")
    assert main(["--input", f"{folder}/../d/", "--output", str(folder)]) == 2
    assert "inside --input" in capsys.readouterr().err


def test_names_that_are_not_utf8_are_one_option_error(tmp_path, capsys):
    """A local name of bytes that are not UTF-8 (Python holds them as surrogates) is one option
    error for both jobs, not a UnicodeEncodeError traceback in Beam's graph: a file in --input
    DIR/, the --input or --output folder, a raw file of rechunk parse."""
    import os

    folder = tmp_path / "in"
    folder.mkdir()
    odd = os.fsdecode(b"caf\xe9.parquet")  # Latin-1, as an old archive names it
    pq.write_table(pa.table({"id": ["a"], "content": ["first"]}), folder / "plain.parquet")
    os.rename(folder / "plain.parquet", folder / odd)  # (pyarrow itself cannot write to such a name)
    assert main(["--input", f"{folder}/", "--output", str(tmp_path / "o1")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"rechunk: error: --input {folder}/: the name {folder}/caf\\xe9.parquet is not UTF-8; "
        "Beam takes file names as UTF-8 text, rename it"
    )
    assert main(["--input", str(folder / odd), "--output", str(tmp_path / "o2")]) == 2
    assert "is not UTF-8" in capsys.readouterr().err
    out = str(tmp_path / os.fsdecode(b"out\xff"))
    pq.write_table(pa.table({"id": ["a"], "content": ["first"]}), folder / "ok.parquet")
    assert main(["--input", str(folder / "ok.parquet"), "--output", out]) == 2
    assert "--output " in capsys.readouterr().err and not os.path.exists(out)
    from tokenizers import Tokenizer, models

    tok = tmp_path / os.fsdecode(b"tok\xff")
    tok.mkdir()
    Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")).save(str(tmp_path / "tokenizer.json"))
    os.rename(tmp_path / "tokenizer.json", tok / "tokenizer.json")
    assert (
        main(["--input", str(folder / "ok.parquet"), "--output", str(tmp_path / "o3"), "--tokenizer", f"hf:{tok}"]) == 2
    )
    assert "--tokenizer hf:" in capsys.readouterr().err
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / os.fsdecode(b"r\xe9sum\xe9.md")).write_text("# Title\n\ntext\n")
    assert main(["parse", "--input", f"{raw}/*", "--output", str(tmp_path / "p")]) == 2
    assert "r\\xe9sum\\xe9.md is not UTF-8" in capsys.readouterr().err


def test_a_folder_on_a_filesystem_beam_lacks_is_named_as_given(tmp_path, capsys):
    """--input file:///DIR/ names the folder as given, not the job's own pattern (DIR/[!._]*)."""
    assert main(["--input", f"file://{tmp_path}/", "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith(f"rechunk: error: --input file://{tmp_path}/: no Beam filesystem for this path")
        and "[!._]" not in err
    )


@pytest.mark.parametrize("name", ["out [1]", "out*", "out?", "out{a,b}"])
def test_an_output_folder_named_like_a_pattern_is_an_option_error(tmp_path, capsys, name):
    """Beam's file sinks find their own files by pattern: "out [1]" failed the job at its end."""
    docs = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": ["a"], "content": ["text"]}), docs)
    assert main(["--input", str(docs), "--output", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"rechunk: error: --output {tmp_path / name}: a directory, not a pattern")


def test_a_parse_output_folder_named_like_a_pattern_is_an_option_error(tmp_path, capsys):
    pytest.importorskip("docling", reason="the parse job checks its extra first")
    from pipelines.parse import main as parse_main

    (tmp_path / "a.md").write_text("# Title\n\nSome text.\n")
    assert parse_main(["--input", str(tmp_path / "*.md"), "--output", str(tmp_path / "out [1]")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--output" in err[0] and "a directory, not a pattern" in err[0]


@pytest.mark.slow
def test_gs_files_read_as_local_ones(gcs, mixed, tmp_path):
    """Through Beam's GCS filesystem (the emulator): the same rows, and a file over Beam's split
    size cut into the same ranges of row groups as on local disk."""
    folder, expected = mixed
    big = tmp_path / "big.parquet"
    rows = [{"id": f"g{i:02d}", "content": f"{i:02d}" + "x" * 299_998} for i in range(12)]
    pq.write_table(pa.Table.from_pylist(rows), big, row_group_size=1, compression="none", use_dictionary=False)
    for path in [*folder.iterdir(), big]:
        gcs.upload(path, f"layouts/in x/{path.name}")
    remote = FileSystems.match([gcs.url("layouts/in x/big.parquet")])[0].metadata_list[0]
    local_ranges = [r[1:] for r in _RowGroupRangesDoFn().process(FileSystems.match([str(big)])[0].metadata_list[0])]
    assert [r[1:] for r in _RowGroupRangesDoFn().process(remote)] == local_ranges and len(local_ranges) > 1
    with BeamTestPipeline(options=PipelineOptions(runner="DirectRunner")) as p:
        assert_that(p | ReadDocuments(gcs.url("layouts/in x/*.parquet")), equal_to(expected + rows))


def test_beams_older_runtime_type_check_is_an_option_error(tmp_path, capsys):
    """It fails in Beam's own Parquet sink (FinalizeWrite) once the whole job has run."""
    docs = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": ["a"], "content": ["text"]}), docs)
    assert main(["--input", str(docs), "--output", str(tmp_path / "out"), "--runtime_type_check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rechunk: error: --runtime_type_check: ")
    assert "--performance_runtime_type_check" in err[0]


@pytest.mark.slow
def test_an_incremental_run_passes_beams_runtime_type_check(tmp_path):
    """The comparison with --previous has tagged outputs too (kept manifest rows, kept ids)."""
    docs = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "content": ["first text", "second text", None]}), docs)
    first = ["--input", str(docs), "--output", str(tmp_path / "v1"), "--progress-seconds", "0"]
    assert main([*first, "--max-dead-letter-fraction", "1"]) == 0  # (1 of 3 dead-lettered)
    argv = [
        "--input",
        str(docs),
        "--output",
        str(tmp_path / "v2"),
        "--previous",
        str(tmp_path / "v1"),
        "--progress-seconds",
        "0",
        "--performance_runtime_type_check",
        "--max-dead-letter-fraction",
        "1",
    ]
    assert main(argv) == 0
    report = json.loads((tmp_path / "v2" / "report.json").read_text())
    assert report["documents_skipped_unchanged"] == 2 and report["documents_dead_lettered"] == 1


@pytest.mark.slow
def test_folder_hints_for_subfolders_and_marker_files(tmp_path, capsys):
    """A Spark output partitioned into subfolders (``DIR/`` matches no file) and ``DIR/*`` stopped
    at a ``.crc`` file: each error says what to write."""
    part = tmp_path / "part"
    (part / "year=2024").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a"], "content": ["first"]}), part / "year=2024" / "part-0.parquet")
    (part / "_SUCCESS").write_bytes(b"")
    (part / "year=2024" / ".part-0.parquet.crc").write_bytes(b"")
    assert main(["--input", f"{part}/", "--output", str(tmp_path / "o1")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"rechunk: error: --input {part}/: no file matches (names starting with . or _ are skipped; "
        f"files in its subfolders are read with '{part}/**.parquet')"
    )
    assert main(["--input", f"{part}/year=2024/*", "--output", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"; {part}/year=2024/ skips names starting with . or _ (Spark's _SUCCESS, Hadoop's .crc files)")
    assert main(["--input", f"{part}/**.parquet", "--output", str(tmp_path / "o3")]) == 0


@pytest.mark.slow
def test_a_folder_with_an_unescaped_bracket_gets_the_rule(tmp_path, capsys):
    """``--input 'my docs [v1]/'``: the error says ``[v1]`` is a set, not only "no file matches"."""
    folder = tmp_path / "my docs [v1]"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a"], "content": ["first"]}), folder / "docs.parquet")
    assert main(["--input", f"{folder}/", "--output", str(tmp_path / "out")]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("; [...] is a set of characters in a pattern: write [[] for a literal [")
    )
    escaped = str(folder).replace("[", "[[]")
    assert main(["--input", f"{escaped}/", "--output", str(tmp_path / "out")]) == 0


def test_no_subfolder_hint_when_the_subfolders_hold_no_parquet(tmp_path, capsys):
    """A subfolder holding only ``_SUCCESS`` or ``part-0.txt`` gets no hint "files in its subfolders
    are read with 'DIR/**.parquet'", a pattern that would match nothing."""
    for name in ("sub/_SUCCESS", "sub/part-0.txt"):
        folder = tmp_path / name.replace("/", "_")
        (folder / "sub").mkdir(parents=True)
        (folder / name).write_bytes(b"")
        assert main(["--input", f"{folder}/", "--output", str(tmp_path / "o")]) == 2
        assert capsys.readouterr().err.strip() == (
            f"rechunk: error: --input {folder}/: no file matches (names starting with . or _ are skipped)"
        )


def test_no_set_hint_for_a_bracket_read_literally(tmp_path, capsys):
    """``--input 'data[2024/'`` (a '[' nothing closes: read literally) with no data file, or ``'my
    docs [[]v1] [2024/'``, gets no hint "write [[] for a literal [", which would change nothing."""
    for name in ("data[2024", "my docs [v1] [2024"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "_SUCCESS").write_bytes(b"")
        given = str(folder).replace("[v1]", "[[]v1]")
        assert main(["--input", f"{given}/", "--output", str(tmp_path / "o")]) == 2
        assert capsys.readouterr().err.strip() == (
            f"rechunk: error: --input {given}/: no file matches (names starting with . or _ are skipped)"
        )
