"""gs:// end to end against a local GCS emulator: input, output, --config and an hf: tokenizer.

Every test here uses the session's ``gcs`` fixture (``tests/conftest.py``): Beam's credentials are
preset to anonymous in this process and by a ``sitecustomize`` in subprocesses, so no test waits
for Beam's default-credentials lookup (about 20 s per process without it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models, pre_tokenizers, trainers

from pipelines.rechunk import main
from tests.conftest import read_output, sample_with_dead_letters
from transforms.tokenizers import HuggingFaceTokenizer, TokenizerError, load_tokenizer

RUN_KEYS = ("wall_seconds", "output")


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The input file and the DirectRunner's output of it on local disk: what gs:// runs must match."""
    folder = tmp_path_factory.mktemp("local")
    docs = sample_with_dead_letters(folder / "docs.parquet")
    assert (
        main(["--input", str(docs), "--output", str(folder / "out"), "--max-dead-letter-fraction", "1"]) == 0
    )  # (6 of 13 dead-lettered)
    report = json.loads((folder / "out" / "report.json").read_text())
    return docs, read_output(folder / "out", "chunks"), read_output(folder / "out", "dead_letter"), report


def _ids(rows: list[dict]) -> list[tuple]:
    return sorted((r["document_id"], r["chunk_id"] or "", r.get("reason", "")) for r in rows)


def _read_with_gcsfs(gcs, output: str) -> tuple[list[dict], list[dict], dict]:
    """Read a run's output from gs:// as a user would: gcsfs and pyarrow.dataset."""
    fs = gcs.fs()
    root = output.removeprefix("gs://")
    chunks = ds.dataset(f"{root}/chunks", filesystem=fs, format="parquet").to_table().to_pylist()
    dead = ds.dataset(f"{root}/dead_letter", filesystem=fs, format="parquet").to_table().to_pylist()
    return chunks, dead, json.loads(fs.cat_file(f"{root}/report.json"))


def _read_with_beam(output: str) -> tuple[list[dict], dict]:
    """The chunks and report through Beam's FileSystems (what the job itself uses)."""
    from apache_beam.io.filesystems import FileSystems

    chunks = []
    for m in FileSystems.match([f"{output}/chunks/*.parquet"])[0].metadata_list:
        with FileSystems.open(m.path) as f:
            chunks += pq.read_table(f).to_pylist()
    with FileSystems.open(f"{output}/report.json") as f:
        return chunks, json.loads(f.read())


def _same_figures(report: dict, expected: dict) -> None:
    assert {k: v for k, v in report.items() if k not in RUN_KEYS} == {
        k: v for k, v in expected.items() if k not in RUN_KEYS
    }


@pytest.mark.slow
def test_gs_input_and_output_in_process(gcs, local_run):
    docs, chunks, dead, report = local_run
    source = gcs.upload(docs, "inproc/in/docs.parquet")
    output = gcs.url("inproc/out")
    assert main(["--input", gcs.url("inproc/in/*.parquet"), "--output", output, "--max-dead-letter-fraction", "1"]) == 0
    gs_chunks, gs_dead, gs_report = _read_with_gcsfs(gcs, output)
    assert _ids(gs_chunks) == _ids(chunks) and len(gs_chunks) == 20
    assert _ids(gs_dead) == _ids(dead) and len(gs_dead) == 6
    _same_figures(gs_report, report)
    assert gs_report["output"] == {
        "chunks": f"{output}/chunks/",
        "dead_letter": f"{output}/dead_letter/",
        "documents": f"{output}/documents/",
    }
    beam_chunks, beam_report = _read_with_beam(output)
    assert _ids(beam_chunks) == _ids(chunks) and beam_report == gs_report
    # A second run into the same gs:// output is refused before anything runs.
    assert main(["--input", source, "--output", output]) == 2
    # An incremental run with the gs:// output as --previous keeps every chunked document.
    again = gcs.url("inproc/again")
    assert main(["--input", source, "--output", again, "--previous", output, "--max-dead-letter-fraction", "1"]) == 0
    again_chunks, again_dead, again_report = _read_with_gcsfs(gcs, again)
    assert _ids(again_chunks) == _ids(chunks) and _ids(again_dead) == _ids(dead)
    assert again_report["documents_skipped_unchanged"] == report["documents_chunked"] > 0
    assert again_report["incremental"]["chunks_deleted"] == 0


@pytest.mark.slow
def test_rechunk_command_with_gs_paths(gcs, local_run):
    docs, chunks, dead, report = local_run
    gcs.upload(docs, "cli/in/docs.parquet")
    output = gcs.url("cli/out")
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "rechunk"),
            "--input",
            gcs.url("cli/in/*.parquet"),
            "--output",
            output,
            "--max-dead-letter-fraction",
            "1",
        ],
        capture_output=True,
        text=True,
        env=gcs.env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"20 chunks written to {output}/chunks/" in proc.stdout
    assert f"6 dead-letter rows in {output}/dead_letter/" in proc.stdout
    gs_chunks, gs_dead, gs_report = _read_with_gcsfs(gcs, output)
    assert _ids(gs_chunks) == _ids(chunks) and _ids(gs_dead) == _ids(dead)
    _same_figures(gs_report, report)


# ----------------------------------------------------------------------------------------------
# hf:gs://... tokenizers and --config gs://...
# ----------------------------------------------------------------------------------------------


def _word_level(folder: Path) -> Path:
    """A tiny WordLevel tokenizer.json built here (nothing downloaded), in ``folder``."""
    tok = HFTokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ["the cat sat on the mat", "a dog and a cat"],
        trainers.WordLevelTrainer(special_tokens=["[UNK]"], show_progress=False),
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder / "tokenizer.json"


@pytest.mark.slow
def test_hf_tokenizer_from_gs_file_or_folder(gcs, tmp_path):
    local = _word_level(tmp_path / "tok")
    url = gcs.upload(local, "hf/tok/tokenizer.json")
    expected = load_tokenizer(f"hf:{local}")
    for spec in (f"hf:{url}", f"hf:{gcs.url('hf/tok')}", f"hf:{gcs.url('hf/tok/')}"):
        tok = load_tokenizer(spec)
        assert isinstance(tok, HuggingFaceTokenizer)
        assert tok.identity == expected.identity and tok.identity.startswith("hf:tok:")
        assert tok.path == url
        assert tok.count("the cat sat on a zebra") == 6
    with pytest.raises(TokenizerError, match=f"no tokenizer.json at '{gcs.url('hf/nope')}'"):
        load_tokenizer(f"hf:{gcs.url('hf/nope')}")
    gcs.upload(Path(__file__), "hf/bad/tokenizer.json")
    with pytest.raises(TokenizerError, match=r"is not a Hugging Face tokenizer.json"):
        load_tokenizer(f"hf:{gcs.url('hf/bad')}")


@pytest.mark.slow
def test_job_with_config_and_hf_tokenizer_on_gs(gcs, tmp_path, capsys):
    tok_url = gcs.upload(_word_level(tmp_path / "vocab"), "job/vocab/tokenizer.json")
    config = tmp_path / "chunking.yaml"
    config.write_text(
        f"tokenizer: hf:{gcs.url('job/vocab')}\nmax_tokens: 3\n"
        "chunkers: {words: {type: TokenTextSplitter, params: {chunk_overlap: 0}}}\ndefault: words\n"
    )
    docs = sample_with_dead_letters(tmp_path / "docs.parquet")
    out = tmp_path / "out"
    config_url = gcs.upload(config, "job/chunking.yaml")
    assert (
        main(["--input", str(docs), "--output", str(out), "--config", config_url, "--max-dead-letter-fraction", "1"])
        == 0
    )
    identity = load_tokenizer(f"hf:{tok_url}").identity
    report = json.loads((out / "report.json").read_text())
    assert report["tokenizer"] == identity and report["max_tokens"] == 3
    assert report["chunks_by_chunker"] == {"TokenTextSplitter": report["chunks_written"]}
    chunks = read_output(out, "chunks")
    assert chunks and {c["tokenizer"] for c in chunks} == {identity}
    assert max(c["token_count"] for c in chunks) <= 3
    missing = gcs.url("job/none.yaml")
    assert main(["--input", str(docs), "--output", str(tmp_path / "o2"), "--config", missing]) == 2
    assert f"--config {missing}: cannot read the file" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--project=P"], "--runner DataflowRunner: Invalid Project ID (P)"),
        (
            ["--tokenizer", "hf:{tok}"],
            "--tokenizer hf:{tok}: DataflowRunner workers cannot reach local paths; use gs://",
        ),
    ],
)
def test_dataflow_option_mistakes_with_gs_paths(gcs, tmp_path, capsys, extra, message):
    tok = _word_level(tmp_path / "tok").parent  # a local tokenizer that loads, here but not on workers
    docs = gcs.upload(sample_with_dead_letters(tmp_path / "docs.parquet"), "opts/in/docs.parquet")
    argv = [
        "--input",
        docs,
        "--output",
        gcs.url("opts/out"),
        "--runner=DataflowRunner",
        "--project=rechunk-test",
        "--region=europe-west1",
        f"--temp_location={gcs.url('opts/tmp')}",
        *(e.format(tok=tok) for e in extra),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rechunk: error: ") and message.format(tok=tok) in err[0], err
