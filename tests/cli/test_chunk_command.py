"""The command line: every option mistake is one line on stderr and exit status 2, before any pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.options import OptionError
from pipelines.rechunk import main
from tests.conftest import REPO, read_output, write_documents

SAMPLE = REPO / "sample" / "docs.parquet"


@pytest.fixture()
def docs(tmp_path):
    return write_documents(
        tmp_path / "in" / "docs.parquet",
        [{"id": "a", "content": "Hello world.\n\nSecond paragraph.", "content_format": "text", "metadata": None}],
    )


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("rechunk: error: ")
    return err[0]


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "argv_tail, message",
    [
        (["--max-tokens", "abc"], "--max-tokens must be a positive integer, got 'abc'"),
        (["--max-tokens", "0"], "--max-tokens must be a positive integer, got 0"),
        (["--max-tokens", "100000000000"], "--max-tokens must be at most 1,000,000, got 100,000,000,000"),
        (
            ["--tokenizer", "nope"],
            "--tokenizer: tokenizer must be 'tiktoken:cl100k_base', 'tiktoken:o200k_base', 'utf8-bytes', 'hf:PATH' or 'hf-model:PATH', got 'nope'",
        ),
        (
            ["--tokenizer", "tiktoken:o999k"],
            "--tokenizer: tiktoken encoding must be one of ['cl100k_base', 'o200k_base'] (offline), got 'o999k'",
        ),
        (["--tokenizer", "hf:/no/such/dir"], "--tokenizer: no tokenizer.json at '/no/such/dir'"),
        (
            ["--column-map", "body"],
            "--column-map: expected NAME=COLUMN with NAME one of id, content, content_format, metadata, got 'body'",
        ),
        (["--max_tokn", "5"], "unrecognized option --max_tokn"),
        (["--previous", "/no/such/dir"], "--previous /no/such/dir: not a finished run: no _SUCCESS there"),
        (["--config", "/no/such.yaml"], "--config /no/such.yaml: cannot read the file"),
        (["--max-tokens", "100", "--max_tokens=200"], "--max-tokens is given 2 times; give it once"),
        (["--previous", "/a", "--previous", "/b"], "--previous is given 2 times; give it once"),
    ],
)
def test_option_mistakes(capsys, tmp_path, docs, argv_tail, message):
    line = _error(capsys, ["--input", str(docs), "--output", str(tmp_path / "out"), *argv_tail])
    assert message in line


def test_missing_input_and_output(capsys, tmp_path, docs):
    assert "--input is required" in _error(capsys, ["--output", str(tmp_path / "o")])
    assert "--output is required" in _error(capsys, ["--input", str(docs)])
    assert "no file matches" in _error(
        capsys, ["--input", str(tmp_path / "nothing*.parquet"), "--output", str(tmp_path / "o")]
    )


@pytest.mark.parametrize(
    "config, message",
    [
        ("chunkers: [unclosed", "not valid YAML/JSON"),
        ("- a list", "the top level must be a mapping, got list"),
        ("chunkers: {p: {type: Nope}}\ndefault: p", "chunkers.p: unknown chunker type 'Nope'"),
        (
            "chunkers: {p: {type: RecursiveCharacterTextSplitter, params: {chunk_sise: 5}}}",
            "chunkers.p.params: unknown parameter 'chunk_sise' for RecursiveCharacterTextSplitter",
        ),
        (
            "chunkers: {p: {type: RecursiveCharacterTextSplitter, params: {chunk_size: 0}}}",
            "chunkers.p.params: chunk_size must be > 0, got 0",
        ),
        (
            "chunkers: {s: {type: StructureAwareChunker, params: {target_tokens: -5}}}",
            "chunkers.s.params: target_tokens must be >= 1, got -5",
        ),
        (
            "chunkers: {s: {type: StructureAwareChunker, params: {max_tokens: 2000}}}",
            "chunkers.s.params: max_tokens 2000 is over the job's max_tokens 512",
        ),
        (
            "chunkers: {h: {type: DoclingChunker, params: {chunker: hybrid, max_tokens: 600}}}",
            "chunkers.h.params: max_tokens 600 is over the job's max_tokens 512",
        ),
        (
            "chunkers: {p: {type: TokenTextSplitter}}\nroutes: [{when: {content_format: [text]}, chunker: q}]",
            "routes[0]: names chunker 'q', not one of ['p']",
        ),
        ("chunkers: {p: {type: TokenTextSplitter}}\ndefault: q", "default names chunker 'q', not one of ['p']"),
        (
            "chunkers: {p: {type: TokenTextSplitter}}\nroutes: [{when: {content_format: [pdf]}, chunker: p}]",
            "routes[0].when.content_format: 'pdf' is not one of",
        ),
        ("chunkers: {p: {type: TokenTextSplitter}}\nmax_tokens: -3", "max_tokens must be a positive integer, got -3"),
        ("chunkers: {p: {type: TokenTextSplitter}}\nrouting: []", "unknown key 'routing'"),
        (
            "chunkers: {p: {type: TokenTextSplitter}}\nroutes: [{when: {content_fromat: [text]}, chunker: p}]",
            "routes[0].when: unknown key 'content_fromat' (keys are content_format, metadata)",
        ),
        (
            "chunkers: {p: {type: TokenTextSplitter}}\nroutes: [{when: [text], chunker: p}]",
            "routes[0].when: must be a mapping with keys among content_format, metadata, got ['text']",
        ),
    ],
)
def test_config_mistakes(capsys, tmp_path, docs, config, message):
    path = _write(tmp_path / "c.yaml", config)
    line = _error(capsys, ["--input", str(docs), "--output", str(tmp_path / "out"), "--config", path])
    assert message in line
    assert path in line


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_bad_max_tokens_names_the_option(capsys, tmp_path, docs, value):
    line = _error(capsys, ["--input", str(docs), "--output", str(tmp_path / "o"), "--max-tokens", value])
    assert line.startswith("rechunk: error: --max-tokens must be a positive integer, got")
    assert "config" not in line


@pytest.mark.slow
def test_refuses_an_output_that_holds_a_previous_run(capsys, tmp_path, docs):
    out = tmp_path / "out"
    assert main(["--input", str(docs), "--output", str(out)]) == 0
    assert "chunks/ already holds files" in _error(capsys, ["--input", str(docs), "--output", str(out)])


def test_refuses_an_output_that_holds_a_killed_runs_temporary_files(capsys, tmp_path, docs):
    """A run killed while writing leaves chunks/beam-temp-*/ (a partial Parquet file): a second run
    into the same folder is refused, since it would leave the dead file inside chunks/, where
    pyarrow.dataset and DuckDB's chunks/**/*.parquet fail on it."""
    out = tmp_path / "out"
    leftover = out / "chunks" / "beam-temp-chunks-0123" / "0a1b.chunks.parquet"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"PAR1 partial")
    assert "chunks/ already holds files" in _error(capsys, ["--input", str(docs), "--output", str(out)])


@pytest.mark.slow
def test_runs_and_reports(capsys, tmp_path, docs):
    out = tmp_path / "out"
    assert main(["--input", str(docs), "--output", str(out), "--max-tokens", "4"]) == 0
    summary = capsys.readouterr().out
    assert f"{out}/chunks/" in summary and f"{out}/report.json" in summary
    assert "rechunk: 1 document read, 1 chunked" in summary and "rechunk: 2 chunks written" in summary
    assert "rechunk: 0 dead-letter rows in" in summary
    report = json.loads((out / "report.json").read_text())
    assert report["documents_read"] == 1 and report["documents_chunked"] == 1
    assert report["chunks_written"] == len(read_output(out, "chunks")) == 2
    assert report["max_tokens"] == 4 and report["tokenizer"] == "tiktoken:cl100k_base:223921b7"
    # The default StructureAwareChunker at 4 tokens: one chunk per paragraph ("Hello world.\n\n"
    # is "Hello", " world", ".\n\n" in cl100k_base; "Second paragraph." is 3 as well).
    assert report["chunks_by_chunker"] == {"StructureAwareChunker": 2}
    assert report["token_count"] == {"min": 3, "p50": 3, "p95": 3, "max": 3}
    assert [r["text"] for r in read_output(out, "chunks")] == ["Hello world.\n\n", "Second paragraph."]


@pytest.mark.slow
def test_column_map_and_utf8_bytes_tokenizer(tmp_path):
    import pyarrow as pa

    schema = pa.schema([("doc_id", pa.string()), ("body", pa.string()), ("lang", pa.string())])
    path = write_documents(tmp_path / "in.parquet", [{"doc_id": "x", "body": "héllo wörld", "lang": "de"}], schema)
    out = tmp_path / "out"
    code = main(
        [
            "--input",
            str(path),
            "--output",
            str(out),
            "--column-map",
            "id=doc_id,content=body",
            "--tokenizer",
            "utf8-bytes",
            "--max-tokens",
            "8",
        ]
    )
    assert code == 0
    rows = read_output(out, "chunks")
    # 12 bytes do not fit 8: the paragraph is split between words, the space left between chunks.
    assert [(r["document_id"], r["text"], r["token_count"], r["tokenizer"], r["start_offset"]) for r in rows] == [
        ("x", "héllo", 6, "utf8-bytes:v1", 0),
        ("x", "wörld", 6, "utf8-bytes:v1", 6),
    ]
    assert json.loads(rows[0]["metadata"])["lang"] == "de"


@pytest.mark.slow
def test_module_entry_point_exits_2_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines.rechunk", "--input", str(SAMPLE), "--output", str(tmp_path / "o"), "--bogus"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "rechunk: error: unrecognized option --bogus (see rechunk --help)"


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "--max-tokens" in capsys.readouterr().out


def test_input_that_is_not_parquet_or_lacks_columns(capsys, tmp_path):
    import pyarrow as pa

    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet at all")
    line = _error(capsys, ["--input", str(junk), "--output", str(tmp_path / "o")])
    assert f"{junk} is not a readable Parquet file" in line
    other = write_documents(
        tmp_path / "other.parquet",
        [{"doc_id": "x", "body": "b"}],
        pa.schema([("doc_id", pa.string()), ("body", pa.string())]),
    )
    line = _error(capsys, ["--input", str(other), "--output", str(tmp_path / "o")])
    assert "has no column 'id' (it has body, doc_id); name yours with --column-map id=COLUMN" in line
    line = _error(capsys, ["--input", str(other), "--output", str(tmp_path / "o"), "--column-map", "id=doc_id"])
    assert "has no column 'content' (it has body, doc_id); name yours with --column-map content=COLUMN" in line


def test_every_matched_file_is_checked(capsys, tmp_path):
    good = write_documents(
        tmp_path / "in" / "a.parquet", [{"id": "a", "content": "x", "content_format": None, "metadata": None}]
    )
    (good.parent / "b.parquet").write_bytes(b"PAR1")
    line = _error(capsys, ["--input", str(good.parent / "*.parquet"), "--output", str(tmp_path / "o")])
    assert f"{good.parent / 'b.parquet'} is not a readable Parquet file" in line


def test_output_that_is_a_file(capsys, tmp_path, docs):
    line = _error(capsys, ["--input", str(docs), "--output", str(docs)])
    assert f"--output {docs}: is a file, not a directory" in line


def test_output_that_cannot_be_created(capsys, tmp_path, docs):
    line = _error(capsys, ["--input", str(docs), "--output", str(docs / "out")])
    assert f"--output {docs / 'out'}: cannot create the directory" in line


def test_output_on_a_filesystem_beam_does_not_have(capsys, docs):
    line = _error(capsys, ["--input", str(docs), "--output", "gcs://bucket/out"])
    assert "--output gcs://bucket/out: no Beam filesystem for this path" in line


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--runner=NoSuchRunner"], "--runner NoSuchRunner: Unexpected pipeline runner"),
        (["--direct_num_workers=-3"], "--direct_num_workers must be >= 0"),
        (["--direct_num_workers=abc"], "argument --direct_num_workers: invalid int value: 'abc'"),
        (["--max-tokens"], "argument --max-tokens/--max_tokens: expected one argument"),
        (["stray_word"], "unrecognized argument stray_word"),
        (["--setup_file=/no/setup.py"], "--setup_file /no/setup.py: no such file"),
    ],
)
def test_beam_option_mistakes_are_one_line(capsys, tmp_path, docs, extra, message):
    assert message in _error(capsys, ["--input", str(docs), "--output", str(tmp_path / "o"), *extra])


@pytest.mark.parametrize(
    "config, message",
    [
        (
            "chunkers: {p: {type: TokenTextSplitter}}\nroutes: [{when: {content_format: 5}, chunker: p}]",
            "must be a list of formats, got 5",
        ),
        ("chunkers: {p: {type: [TokenTextSplitter]}}", "unknown chunker type ['TokenTextSplitter']"),
        ("chunkers: {p: {type: TokenTextSplitter, params: [1, 2]}}", "params: must be a mapping, got [1, 2]"),
        ("chunkers: {p: {type: TokenTextSplitter}}\ndefault: {p: 1}", "default names chunker {'p': 1}"),
        ("1: a\nchunkers: {p: {type: TokenTextSplitter}}", "unknown key '1'"),
        (
            "chunkers: {p: {type: TokenTextSplitter}}\nroutes: [{when: {metadata: {k: [[1]]}}, chunker: p}]",
            "values must be scalars",
        ),
    ],
)
def test_config_values_of_the_wrong_type(capsys, tmp_path, docs, config, message):
    path = _write(tmp_path / "c.yaml", config)
    assert message in _error(capsys, ["--input", str(docs), "--output", str(tmp_path / "out"), "--config", path])


@pytest.mark.parametrize(
    "mapping, message",
    [
        ("content_format=format", "--column-map content_format=format: "),
        ("id=doc,content=doc", "two names map to the same column"),
        ("content=text,content=source,id=doc_id", "content is mapped twice in"),
        ("content=id", "content=id would read the id column as content"),
    ],
)
def test_column_map_mistakes(capsys, tmp_path, docs, mapping, message):
    line = _error(capsys, ["--input", str(docs), "--output", str(tmp_path / "o"), "--column-map", mapping])
    assert message in line


DATAFLOW = [
    "--runner=DataflowRunner",
    "--project=rechunk-test",
    "--region=europe-west1",
    "--temp_location=gs://bkt/tmp",
]


@pytest.mark.parametrize(
    "extra, message",
    [
        ([a for a in DATAFLOW if not a.startswith("--project")], "--project is required with DataflowRunner"),
        ([a for a in DATAFLOW if not a.startswith("--region")], "--region is required with DataflowRunner"),
        ([a for a in DATAFLOW if not a.startswith("--temp")], "--temp_location is required with DataflowRunner"),
        (
            [*DATAFLOW[:3], "--temp_location=/tmp/beam"],
            "--temp_location /tmp/beam: DataflowRunner needs a gs://BUCKET/PATH here",
        ),
        (
            [*DATAFLOW[:3], "--temp_location=gs://b/tmp"],
            "--temp_location gs://b/tmp: DataflowRunner needs a gs://BUCKET/PATH here (Invalid GCS bucket",
        ),
        (
            [*DATAFLOW[:3], "--staging_location=gs://bkt"],
            "--staging_location gs://bkt: DataflowRunner needs a gs://BUCKET/PATH here",
        ),
        (DATAFLOW, "--input {docs}: DataflowRunner workers cannot reach local paths; use gs://"),
        (["--runner=PortableRunner"], "--job_endpoint is required with PortableRunner"),
        (
            ["--runner=PortableRunner", "--job_endpoint=localhost:1"],
            "--job_endpoint localhost:1: no job service answers there",
        ),
        (["--runner=PortableRunner", "--job_endpoint=nowhere"], "--job_endpoint nowhere: expected HOST:PORT"),
        # Runners that would download a binary at start (Prism: a long traceback without network).
        (["--runner=PrismRunner"], "--prism_location is required with PrismRunner"),
        (["--runner=PrismRunner", "--prism_location=/no/prism"], "--prism_location /no/prism: PrismRunner downloads"),
        (["--runner=FlinkRunner"], "--flink_job_server_jar: FlinkRunner downloads its job-server jar"),
        (
            ["--runner=SparkRunner", "--spark_job_server_jar=/no.jar"],
            "--spark_job_server_jar /no.jar: SparkRunner downloads",
        ),
        (
            ["--runner=FlinkRunner", "--job_endpoint=localhost:1"],
            "--job_endpoint localhost:1: no job service answers there",
        ),
        (["--dry_run=True"], "--dry_run: only DataflowRunner has a dry run; FnApiRunner would run the job"),
        ([*DATAFLOW, "--dry_run=False"], "--dry_run=False: give --dry_run=True, or leave the option out"),
        (["--type_check_additional=nope"], "--runner FnApiRunner: Unrecognized --type_check_additional feature: nope"),
    ],
)
def test_cluster_runner_option_mistakes(capsys, monkeypatch, tmp_path, docs, extra, message):
    monkeypatch.delenv("CLOUDSDK_COMPUTE_REGION", raising=False)
    line = _error(capsys, ["--input", str(docs), "--output", str(tmp_path / "o"), *extra])
    assert message.format(docs=docs) in line


def test_a_folder_given_as_input_without_its_slash_says_how(capsys, tmp_path, docs):
    """A folder of Parquet files named without the trailing "/" is an option error that says to add it."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.parquet").write_bytes(Path(docs).read_bytes())
    line = _error(capsys, ["--input", str(folder), "--output", str(tmp_path / "o")])
    assert line.endswith(f"; for the files in a folder write {folder}/")


@pytest.mark.parametrize("flag", ["--input", "--output", "--previous", "--config", "--tokenizer", "tokenizer"])
def test_unreachable_cloud_storage_fails_at_once(capsys, monkeypatch, tmp_path, docs, flag):
    """A gs:// path with no service to answer: one line within seconds, before the configuration,
    the tokenizer or the input is read (Beam's GCS client retried for about two minutes, printing
    its tracebacks, before the listing failed)."""
    import time

    from tests.conftest import free_ports

    (port,) = free_ports(1)  # nothing listens there
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    docs = str(docs)
    argv = {
        "--input": ["--input", "gs://bkt/docs/*.parquet", "--output", str(tmp_path / "o")],
        "--output": ["--input", docs, "--output", "gs://bkt/out"],
        "--previous": ["--input", docs, "--output", str(tmp_path / "o"), "--previous", "gs://bkt/old"],
        "--config": ["--input", docs, "--output", str(tmp_path / "o"), "--config", "gs://bkt/job.yaml"],
        "--tokenizer": ["--input", docs, "--output", str(tmp_path / "o"), "--tokenizer", "hf:gs://bkt/tok"],
        # (the tokenizer named in the configuration file is checked too)
        "tokenizer": [
            "--input",
            docs,
            "--output",
            str(tmp_path / "o"),
            "--config",
            _write(
                tmp_path / "c.yaml",
                "tokenizer: hf:gs://bkt/tok\nchunkers: {p: {type: TokenTextSplitter}}\ndefault: p\n",
            ),
        ],
    }[flag]
    started = time.monotonic()
    line = _error(capsys, argv)
    named = {"--tokenizer": "--tokenizer hf:gs://bkt/", "tokenizer": "c.yaml: tokenizer hf:gs://bkt/"}.get(
        flag, f"{flag} gs://bkt/"
    )
    assert named in line and f"cannot reach Cloud Storage at 127.0.0.1:{port}" in line
    assert time.monotonic() - started < 30
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_storage_service_that_never_replies_fails_at_once(capsys, monkeypatch, tmp_path, scheme):
    """A listener that takes the connection and never replies fails the check within 5 s (the reply
    itself is awaited), instead of Beam's GCS client retrying for minutes."""
    import socket
    import time

    with socket.socket() as listener:  # the kernel completes the handshake; nothing ever answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"{scheme}://127.0.0.1:{port}")
        started = time.monotonic()
        line = _error(capsys, ["--input", "gs://bkt/docs/*.parquet", "--output", str(tmp_path / "o")])
        elapsed = time.monotonic() - started
    assert (
        line
        == f"rechunk: error: --input gs://bkt/docs/*.parquet: cannot reach Cloud Storage at 127.0.0.1:{port} (no reply in 5 s)"
    )
    assert 4 < elapsed < 30


def test_a_grpc_server_that_is_no_job_service_is_refused(capsys, tmp_path, docs):
    """A gRPC server without Beam's job API (an artifact port, say) is an option error, not an
    UNIMPLEMENTED traceback with exit 1 once the job starts."""
    from concurrent import futures

    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        line = _error(
            capsys,
            [
                "--input",
                str(docs),
                "--output",
                str(tmp_path / "o"),
                "--runner",
                "PortableRunner",
                f"--job_endpoint=127.0.0.1:{port}",
            ],
        )
    finally:
        server.stop(None)
    assert line.startswith(
        f"rechunk: error: --job_endpoint 127.0.0.1:{port}: no Beam job service answers there (UNIMPLEMENTED"
    )


@pytest.mark.slow
def test_a_job_service_that_never_replies_fails_at_once(capsys, tmp_path, docs):
    """A TCP listener that is no gRPC job service: Beam would wait 300 s for it."""
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        line = _error(
            capsys,
            [
                "--input",
                str(docs),
                "--output",
                str(tmp_path / "o"),
                "--runner",
                "PortableRunner",
                f"--job_endpoint=127.0.0.1:{port}",
            ],
        )
    assert line.startswith(f"rechunk: error: --job_endpoint 127.0.0.1:{port}: no job service answers there")


@pytest.mark.parametrize("runner", ["BundleBasedDirectRunner", "InteractiveRunner"])
def test_runners_the_job_does_not_run_on_are_refused(capsys, tmp_path, docs, runner):
    """BundleBasedDirectRunner (with --previous it writes no kept chunks, exit 0) and
    InteractiveRunner (a traceback) are refused, though Beam's own message lists both as valid."""
    line = _error(capsys, ["--input", str(docs), "--output", str(tmp_path / "o"), "--runner", runner])
    assert line.startswith(f"rechunk: error: --runner {runner}: not supported, ")
    assert line.endswith("; use DirectRunner (FnApiRunner)")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "runner",
    [
        "DirectRunner",
        "direct",
        "directrunner",
        "DIRECTRUNNER",
        "SwitchingDirectRunner",
        "apache_beam.runners.direct.direct_runner.DirectRunner",
    ],
)
def test_every_spelling_of_the_direct_runner_is_the_fn_api_runner(tmp_path, docs, runner):
    """Every spelling of the direct runner runs on the FnApiRunner, never on Beam's
    SwitchingDirectRunner, which downloads Prism from GitHub first (behind a silent proxy: a hang
    of minutes)."""
    from apache_beam.options.pipeline_options import StandardOptions

    from pipelines.rechunk import parse_job

    job = parse_job(["--input", str(docs), "--output", str(tmp_path / "o"), "--runner", runner])
    assert job.options.view_as(StandardOptions).runner == "FnApiRunner"


@pytest.mark.parametrize("value", ["docker", "loopback", "bogus", "BEAM:ENV:DOCKER:V1", "beam:env:loopback:v1"])
def test_an_unknown_environment_type_is_one_option_error(capsys, tmp_path, docs, value):
    """Beam's lookup is case-sensitive: these are one option error each, not an AttributeError,
    ValueError or KeyError traceback after the checks."""
    line = _error(
        capsys,
        [
            "--input",
            str(docs),
            "--output",
            str(tmp_path / "o"),
            "--runner",
            "PortableRunner",
            "--job_endpoint",
            "embed",
            "--environment_type",
            value,
        ],
    )
    assert (
        line == f"rechunk: error: --environment_type {value}: one of DOCKER, PROCESS, EXTERNAL, LOOPBACK (upper case)"
    )


def test_docker_that_does_not_answer_is_refused_for_an_embedded_job_service(capsys, monkeypatch, tmp_path, docs):
    """A docker command with no daemon behind it is refused before the job, not a ``docker run``
    traceback. Beam's URN for DOCKER is taken as DOCKER."""
    import subprocess

    def no_daemon(*args, **kwargs):
        raise subprocess.CalledProcessError(1, args[0])

    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/docker")
    monkeypatch.setattr("subprocess.run", no_daemon)
    line = _error(
        capsys,
        [
            "--input",
            str(docs),
            "--output",
            str(tmp_path / "o"),
            "--runner",
            "PortableRunner",
            "--job_endpoint",
            "embed",
            "--environment_type",
            "beam:env:docker:v1",
        ],
    )
    assert line == (
        "rechunk: error: --environment_type DOCKER: Docker does not answer here (docker info failed); "
        "start it, or use LOOPBACK"
    )


@pytest.mark.parametrize("host", ["jobs..example.com", "a" * 70])
def test_a_job_endpoint_host_name_idna_rejects_is_one_option_error(capsys, tmp_path, docs, host):
    """socket's UnicodeError is no OSError: it is caught too, and is one option error."""
    line = _error(
        capsys,
        [
            "--input",
            str(docs),
            "--output",
            str(tmp_path / "o"),
            "--runner",
            "PortableRunner",
            "--job_endpoint",
            f"{host}:8099",
        ],
    )
    assert line.startswith(f"rechunk: error: --job_endpoint {host}:8099: no job service answers there (")


def test_an_embedded_job_service_needs_an_environment_type(capsys, monkeypatch, tmp_path, docs):
    """``--job_endpoint embed`` alone is an option error: Beam would default to DOCKER (a long
    traceback where Docker is absent, and an empty --output left behind)."""
    base = [
        "--input",
        str(docs),
        "--output",
        str(tmp_path / "o"),
        "--runner",
        "PortableRunner",
        "--job_endpoint",
        "embed",
    ]
    line = _error(capsys, base)
    assert line == (
        "rechunk: error: --job_endpoint embed: give --environment_type LOOPBACK (workers in this process), "
        "or DOCKER (Beam's SDK container: needs Docker, and the image or the network to pull it)"
    )
    monkeypatch.setattr("shutil.which", lambda name: None)
    line = _error(capsys, [*base, "--environment_type", "DOCKER"])
    assert line == "rechunk: error: --environment_type DOCKER: no docker command on this machine; use LOOPBACK"
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_an_output_inside_the_input_pattern_is_refused(capsys, tmp_path, docs):
    """``--input 'DIR/**'`` with ``--output DIR/out`` is refused: the next run would read this
    run's chunk files as documents."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.parquet").write_bytes(Path(docs).read_bytes())
    line = _error(capsys, ["--input", f"{folder}/**", "--output", str(folder / "out")])
    assert line == (
        f"rechunk: error: --output {folder}/out: inside --input {folder}/**; its chunk files would be "
        "read as documents by the next run"
    )
    assert not (folder / "out").exists()
    # A sibling folder, or the pattern's own folder with a one-level glob, is fine.
    assert main(["--input", f"{folder}/*.parquet", "--output", str(folder / "out")]) == 0


@pytest.mark.parametrize(
    "reply, why",
    [
        (b"garbage\r\n", "no HTTP answer: BadStatusLine: garbage"),
        (b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n", "HTTP 500 from the service"),
        (b"HTTP/1.1 5", "no HTTP answer: BadStatusLine: HTTP/1.1 5"),
        (b"", "no HTTP answer: RemoteDisconnected: Remote end closed connection without response"),
    ],
)
def test_a_storage_service_that_answers_no_http_fails_at_once(capsys, monkeypatch, tmp_path, reply, why):
    """A service answering garbage or HTTP 500 fails the check at once, instead of Beam's GCS
    client retrying for minutes with tracebacks."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(1024)
                conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    try:
        line = _error(capsys, ["--input", str(tmp_path / "x.parquet"), "--output", "gs://bkt/out"])
    finally:
        listener.close()
    assert line == f"rechunk: error: --output gs://bkt/out: cannot reach Cloud Storage at 127.0.0.1:{port} ({why})"


def _http_server(handler_body: bytes):
    """A local HTTP server answering every GET with 200 and ``handler_body``; returns it and its port."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(handler_body)))
            self.end_headers()
            self.wfile.write(handler_body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


@pytest.mark.slow
def test_the_storage_check_goes_through_the_environments_proxy(monkeypatch):
    """The check goes through http_proxy as Beam's client does: behind a proxy (the only way out)
    a reachable gs:// path is accepted."""
    from pipelines.preflight import check_reachable

    server, port = _http_server(b'{"kind": "storage#buckets"}')
    try:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://gcs.internal.invalid:9023")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{port}")
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        check_reachable("--input", "gs://b/x")  # answered through the proxy
        monkeypatch.delenv("http_proxy")
        with pytest.raises(OptionError, match=r"cannot reach Cloud Storage at gcs.internal.invalid:9023"):
            check_reachable("--input", "gs://b/x")
    finally:
        server.shutdown()


@pytest.mark.slow
def test_a_self_signed_emulator_that_beam_would_reject_is_refused(monkeypatch, tmp_path):
    """A TLS certificate nobody trusts is no answer: Beam's client rejects it too (and retries for
    minutes with no output), so the check refuses it at once."""
    import datetime
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    from pipelines.preflight import check_reachable

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server, port = _http_server(b"{}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    try:
        for variable in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"https://localhost:{port}")
        with pytest.raises(
            OptionError, match=r"cannot reach Cloud Storage at localhost:\d+ \(.*CERTIFICATE_VERIFY_FAILED"
        ):
            check_reachable("--output", "gs://b/out")
    finally:
        server.shutdown()


@pytest.mark.slow
def test_an_emulator_path_is_asked_as_beams_client_would(monkeypatch):
    """For ``http://host:port/storage`` the check asks ``/storage/storage/v1/b``, the path Beam's
    client asks there, so an endpoint that would fail mid-run fails the check."""
    import http.server
    import threading

    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            self.send_response(200 if self.path.startswith("/storage/v1/") else 501)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        for variable in ("http_proxy", "HTTP_PROXY"):
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}/")
        from pipelines.preflight import check_reachable

        check_reachable("--input", "gs://b/x")
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}/storage")
        with pytest.raises(OptionError, match="HTTP 501 from the service"):
            check_reachable("--input", "gs://b/x")
    finally:
        server.shutdown()
    assert asked == ["/storage/v1/b?project=rechunk-check", "/storage/storage/v1/b?project=rechunk-check"]


def test_an_emulator_host_without_its_scheme_is_refused(capsys, monkeypatch, tmp_path):
    """``127.0.0.1:9023`` is refused: Beam's client takes the value as given, so listing would fail
    after seconds and an output at write time with exit 1."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:9023")
    line = _error(capsys, ["--input", "gs://b/x", "--output", str(tmp_path / "o")])
    assert line == (
        "rechunk: error: --input gs://b/x: STORAGE_EMULATOR_HOST='127.0.0.1:9023' needs its scheme, "
        "e.g. http://127.0.0.1:9023 (Beam's GCS client takes it as given)"
    )


@pytest.mark.parametrize("endpoint", ["user:s3cret@127.0.0.1:9023", "http://user:s3cret@127.0.0.1:notaport"])
def test_an_emulator_hosts_password_is_never_printed(capsys, monkeypatch, tmp_path, endpoint):
    """The option error quotes STORAGE_EMULATOR_HOST: its user and password are masked."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", endpoint)
    line = _error(capsys, ["--input", "gs://b/x", "--output", str(tmp_path / "o")])
    assert "s3cret" not in line and "user" not in line and "***@127.0.0.1" in line


@pytest.mark.parametrize("endpoint", ["https://x:notaport", "http://localhost:99999", "http://[::1"])
def test_a_malformed_emulator_endpoint_is_one_option_error(capsys, monkeypatch, tmp_path, endpoint):
    """urlsplit's ValueError is one option error, not a traceback with exit status 1."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", endpoint)
    line = _error(capsys, ["--input", "gs://b/x", "--output", str(tmp_path / "o")])
    assert f"--input gs://b/x: STORAGE_EMULATOR_HOST={endpoint!r} is not a host and port" in line


@pytest.mark.slow
def test_a_summary_read_by_head_is_no_traceback(tmp_path):
    """``rechunk ... | head -1`` after a finished run ends with no BrokenPipeError traceback."""
    out = tmp_path / "out"
    proc = subprocess.run(
        f"{sys.executable} -m pipelines.rechunk --input {SAMPLE} --output {out} | head -c 10",
        shell=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.stdout == "rechunk: 7" and proc.stderr == ""
    assert json.loads((out / "report.json").read_text())["chunks_written"] > 7


@pytest.mark.slow
def test_the_reports_wall_time_counts_the_option_checks(tmp_path, monkeypatch):
    """``wall_seconds`` starts before the option checks: a slow check (a gs:// credential lookup
    can take 20 s) is part of the time the README calls the job's, start-up included."""
    import time

    import pipelines.rechunk as rechunk

    checked = rechunk.check_input

    def slow_check(*args, **kwargs):
        time.sleep(1.0)
        return checked(*args, **kwargs)

    monkeypatch.setattr(rechunk, "check_input", slow_check)
    assert main(["--input", str(SAMPLE), "--output", str(tmp_path / "out")]) == 0
    assert json.loads((tmp_path / "out" / "report.json").read_text())["wall_seconds"] >= 1.0


@pytest.mark.parametrize("flag", ["--output", "--previous"])
def test_a_url_missing_a_slash_is_an_option_error(tmp_path, capsys, flag):
    """``--output gs:/bucket/x`` is an option error, not a local folder ``gs:``."""
    argv = ["--input", str(SAMPLE), "--output", str(tmp_path / "out")]
    argv += ["--previous", "gs:/bucket/prev"] if flag == "--previous" else []
    if flag == "--output":
        argv[3] = "gs:/bucket/x"
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a local path starting with gs:, did you mean gs://...?" in err[0]
    assert not Path("gs:").exists()


@pytest.mark.slow
def test_an_unexpanded_tilde_is_an_option_error(tmp_path, capsys, monkeypatch):
    """``--output=~/x`` (no shell expands ``~`` after ``=``) is an option error, not a folder
    ``./~/x``, which invites ``rm -rf ~``."""
    monkeypatch.chdir(tmp_path)
    assert main(["--input", str(SAMPLE), "--output=~/x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rechunk: error: --output ~/x: ~ is not expanded here")
    assert not (tmp_path / "~").exists()
    assert main(["--input", str(SAMPLE), "--output", "./~x"]) == 0
