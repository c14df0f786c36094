"""The rechunk job: Parquet documents in; chunks, a dead letter, a manifest and report.json out.

    rechunk --input 'PATTERN' --output DIR [--config chunking.yaml] [--tokenizer SPEC]
            [--max-tokens N] [--column-map content=text,...] [--previous DIR] [any Beam pipeline option]
    rechunk parse ...     raw files into this job's input (:mod:`pipelines.parse`)
    rechunk check ...     a finished run's output checked against its input (:mod:`pipelines.check`)
    python -m pipelines.rechunk ...

The graph (see ``transforms.beam``)::

    Read documents -> Admit -> [Compare with previous] -> Route, chunk and validate -> Write chunks, manifest
                        \\               \\_ kept chunks, manifest rows _______________________/
                         \\_________________________\\______________________\\_____-> Write dead letter
    [previous chunk ids, new chunk ids -> List deleted -> Write deleted]
    tokenizer identity (singleton side input) -> Admit, Compare, Route, chunk and validate

With ``--previous`` every decision is a keyed join by document id, not a side input
(``transforms.beam.incremental``)::

    Read ids (with their ranges) + previous manifest -> join by id -> join by range -> Read documents
        (each row with its previous entry) -> Admit -> Compare with previous
    kept ids + previous chunks' ids by unit -> join by id -> join by unit -> Read and keep previous chunks
    kept rows counted + kept manifest counts -> join by id -> checked

Each chunk is validated as the chunker makes it and goes on to the writer (a huge document's
chunks are never all held at once).

The story, top to bottom: :func:`parse_job` reads the options and checks everything the run needs
(:mod:`pipelines.options`, :mod:`pipelines.preflight`, :mod:`pipelines.runners`), each mistake one
line on stderr with exit status 2; :func:`build_pipeline` adds the graph; :func:`run` runs it and
writes ``report.json``; :func:`summary` gives the lines :func:`main` prints.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions, TestOptions

from pipelines import commit
from pipelines.config import ConfigError, load_config, resolve_config
from pipelines.console import error, say, show_progress, version_line
from pipelines.options import (
    DEFAULT_MAX_DOCUMENT_CHARS,
    DEFAULT_PROGRESS_SECONDS,
    USAGE,
    OptionError,
    RechunkOptions,
    RunError,
    one_line,
    parse_column_map,
    parse_max_dead_letter_fraction,
    parse_max_document_chars,
    parse_max_tokens,
    parse_progress_seconds,
    read_options,
)
from pipelines.paths import inside_pattern, worker_path, worker_pattern
from pipelines.preflight import (
    check_filesystem,
    check_folder_name,
    check_input,
    check_output_empty,
    check_output_is_no_file,
    check_previous,
    check_reachable,
    check_utf8,
    create_output,
)
from pipelines.report import build_report, write_report
from pipelines.report_html import write_report_html
from pipelines.runners import check_runner
from pipelines.verdict import DEFAULT_MAX_DEAD_LETTER_FRACTION, verdict_line
from transforms.beam import (
    DEAD_LETTER,
    KEPT_CHUNKS,
    KEPT_MANIFEST,
    MANIFEST,
    PREVIOUS_IDS,
    AdmitDocuments,
    ChunkDocuments,
    CompareWithPrevious,
    ListDeleted,
    PreviousManifestNotes,
    ReadDocumentsAndIds,
    WriteChunks,
    WriteDeadLetter,
    WriteDeleted,
    WriteKeptChunks,
    WriteManifest,
    shared_tokenizer,
)
from transforms.chunkers.registry import build_router
from transforms.documents import folder_files
from transforms.integrity import stopped_run_line
from transforms.tokenizers import TokenizerError

if TYPE_CHECKING:
    from pipelines.sync import ClaimedStore

__all__ = ["OUTPUT_FILES", "Job", "build_pipeline", "cli", "load_spec", "main", "parse_job", "run", "summary"]

#: The folders the chunk job writes under --output, which must hold no file before it runs.
OUTPUT_FOLDERS = ("chunks", "dead_letter", "documents", "deleted")
#: Files the chunk job writes under --output (relative paths), which --input must not match.
OUTPUT_FILES = (
    "report.json",
    "report.html",
    "chunks/chunks-00000-of-00001.parquet",
    "dead_letter/dead_letter-00000-of-00001.parquet",
    "dead_letter/admission-00000-of-00001.parquet",
    "documents/documents-00000-of-00001.parquet",
    "deleted/deleted-00000-of-00001.parquet",
)


@dataclass(frozen=True)
class Job:
    """Everything checked before the pipeline starts.

    ``input`` is the pattern as given, a trailing ``/`` made the folder's data files; ``output``
    and ``previous`` are folders without their trailing ``/``; ``spec`` is the resolved
    configuration (:func:`pipelines.config.resolve_config`); ``max_document_chars`` is in code
    points; ``documents_total`` is the input's rows by its Parquet footers (``None`` when more
    files matched than :data:`pipelines.preflight.MAX_FILES_CHECKED`), for the progress lines.
    """

    input: str
    output: str
    spec: dict[str, Any]
    tokenizer_identity: str
    column_map: dict[str, str]
    options: PipelineOptions
    previous: str | None = None
    max_document_chars: int = DEFAULT_MAX_DOCUMENT_CHARS
    progress_seconds: float = DEFAULT_PROGRESS_SECONDS
    max_dead_letter_fraction: float = DEFAULT_MAX_DEAD_LETTER_FRACTION
    documents_total: int | None = None
    #: The run's id, which holds ``OUTPUT/_rechunk.lock`` (:mod:`pipelines.commit`).
    run_id: str | None = None
    #: With ``vector_store:``, the store opened and claimed for the run's sync
    #: (:func:`pipelines.sync.claim_store`), held until the run ends.
    claimed_store: ClaimedStore | None = None


def parse_job(argv: Sequence[str]) -> Job:
    """Parse and check the command line, the configuration, the tokenizer, input and output.

    Raises:
        OptionError: Any mistake, as one line naming the option.
    """
    options = read_options(argv)
    job_opts = options.view_as(RechunkOptions)
    for flag, path in (("--input", job_opts.input), ("--output", job_opts.output), ("--previous", job_opts.previous)):
        if path is not None:
            check_utf8(flag, path, path)
    column_map = parse_column_map(job_opts.column_map)
    max_document_chars = parse_max_document_chars(job_opts.max_document_chars)
    progress_seconds = parse_progress_seconds(job_opts.progress_seconds)
    max_dead_letter_fraction = parse_max_dead_letter_fraction(job_opts.max_dead_letter_fraction)
    # A gs:// path whose service does not answer: one line in 5 s, not minutes of Beam's retries
    # (the tokenizer's, from the flag or the configuration, in load_spec).
    for flag, path in (
        ("--input", job_opts.input),
        ("--output", job_opts.output),
        ("--previous", job_opts.previous),
        ("--config", job_opts.config),
    ):
        if path:
            check_reachable(flag, path)
    spec, tokenizer = load_spec(job_opts)
    check_utf8("--tokenizer", spec["tokenizer"], spec["tokenizer"])  # hf:PATH goes into the graph as text
    # The runner's own options first: they need no filesystem, and listing gs:// without them
    # (no project, no credentials) can take minutes.
    check_runner(options, tokenizer=spec["tokenizer"])
    pattern, documents_total = _checked_input(job_opts.input, column_map)
    output = _checked_output(job_opts.output, job_opts.input, pattern)
    previous = check_previous(job_opts.previous, output) if job_opts.previous is not None else None
    claimed = None
    if spec.get("vector_store") is not None:
        from pipelines.sync import check_embedding, claim_store

        check_embedding(spec)  # the model answers now, not only after the chunking
        claimed = claim_store(spec)  # reachable and not another sync's now, not only after the chunking
    try:
        create_output(output)
        run_id = commit.take_lock(output, _written_folders(previous))
    except BaseException:
        if claimed is not None:
            claimed.store.close()
        raise
    return Job(
        input=pattern,
        output=output,
        spec=spec,
        tokenizer_identity=tokenizer.identity,
        column_map=column_map,
        options=options,
        previous=previous,
        max_document_chars=max_document_chars,
        progress_seconds=progress_seconds,
        max_dead_letter_fraction=max_dead_letter_fraction,
        documents_total=documents_total,
        run_id=run_id,
        claimed_store=claimed,
    )


def _written_folders(previous: str | None) -> tuple[str, ...]:
    """The folders a run writes under ``--output``: ``deleted/`` only with ``--previous``."""
    return OUTPUT_FOLDERS if previous is not None else tuple(f for f in OUTPUT_FOLDERS if f != "deleted")


def load_spec(job_opts: RechunkOptions) -> tuple[dict[str, Any], Any]:
    """The resolved configuration and the loaded tokenizer; every chunker is built once to check it.

    A local ``hf:PATH`` tokenizer is made absolute in the spec (workers load it again, from their
    own working directory).

    Raises:
        OptionError: The configuration, the budget or the tokenizer is wrong, or a chunker cannot
            be built from it.
    """
    where = f"--config {job_opts.config}" if job_opts.config else "default config"
    spec = _resolved_config(job_opts, where)
    store = spec.get("vector_store")
    if store is not None and store["type"] == "milvus" and "://" not in store["uri"]:
        store["uri"] = os.path.abspath(store["uri"])  # a Milvus Lite file, opened by every worker
    kind, _, path = spec["tokenizer"].partition(":")
    if kind == "hf" and path and "://" not in path:
        spec["tokenizer"] = f"hf:{os.path.abspath(path)}"
    if kind == "hf":
        check_reachable("--tokenizer" if job_opts.tokenizer else f"{where}: tokenizer", path, spec["tokenizer"])
    try:
        # The workers' per-process cache: in-process runners (in_memory) reuse this instance
        # instead of loading the vocabulary a second time (0.4 s for cl100k_base).
        tokenizer = shared_tokenizer(spec["tokenizer"])
    except TokenizerError as err:
        raise OptionError(f"--tokenizer: {err}") from None
    try:
        build_router(spec, tokenizer=tokenizer)
    except (TypeError, ValueError, ImportError) as err:
        raise OptionError(f"{where}: {one_line(err, 400)}") from None
    return spec, tokenizer


def _resolved_config(job_opts: RechunkOptions, where: str) -> dict[str, Any]:
    """``--config`` (or the default) resolved with ``--tokenizer`` and ``--max-tokens``."""
    max_tokens = parse_max_tokens(job_opts.max_tokens)
    try:
        return resolve_config(
            load_config(job_opts.config), tokenizer=job_opts.tokenizer, max_tokens=max_tokens, source=where
        )
    except ConfigError as err:
        raise OptionError(str(err)) from None
    except (TypeError, ValueError, AttributeError, KeyError) as err:  # a shape no check foresaw
        raise OptionError(f"{where}: malformed configuration ({type(err).__name__}: {err})") from None


def _checked_input(given: str, column_map: dict[str, str]) -> tuple[str, int | None]:
    """``--input`` checked (its files listed, their footers read); the pattern the job reads and
    its rows (``None`` when not every footer was read)."""
    # A trailing "/" is the folder's data files: say so before the workers' absolute path drops
    # the "/" (which would leave the folder itself, read as a file mid-pipeline).
    pattern = folder_files(given) if given.endswith("/") else given
    check_filesystem("--input", given)  # (Beam's own error would quote FOLDER_FILES)
    # The pattern the workers read: Beam lists a relative pattern from the folder before its first
    # glob character, so '*.parquet' (no folder before it) must be made absolute here too.
    return pattern, check_input(given, worker_pattern(pattern), column_map)


def _checked_output(given: str, given_input: str, pattern: str) -> str:
    """``--output`` checked: an empty folder, outside the input ``pattern``; without its trailing ``/``."""
    output = given.rstrip("/") or "/"
    check_filesystem("--output", output)
    check_folder_name("--output", output)
    check_output_is_no_file(output)
    stale = commit.refuse_held_lock(output)  # a running run's lock: named before its files
    try:
        check_output_empty(output, OUTPUT_FOLDERS)
    except OptionError as err:
        if stale is None:
            raise
        raise OptionError(
            f"{err} (a run that ended without committing left them: {commit.LOCK_NAME} names {stale.describe()}, "
            "no longer running)"
        ) from None
    if inside_pattern(worker_path(output), worker_pattern(pattern), OUTPUT_FILES):
        raise OptionError(
            f"--output {given}: inside --input {given_input}; its chunk files would be read as "
            "documents by the next run"
        )
    return output


def build_pipeline(pipeline: beam.Pipeline, job: Job) -> None:
    """Add the job's transforms to ``pipeline``."""
    identity = pipeline | "Tokenizer identity" >> beam.Create([job.tokenizer_identity])
    output = worker_path(job.output)
    # With --previous each row is read with its previous manifest entry, joined to it by id.
    notes = PreviousManifestNotes(worker_path(job.previous)) if job.previous else None
    read = pipeline | "Read input" >> ReadDocumentsAndIds(
        worker_pattern(job.input),
        column_map=job.column_map,
        max_document_chars=job.max_document_chars,
        row_notes=notes,
    )
    rows, ids = read["rows"], read["ids"]
    admitted = rows | "Admit documents" >> AdmitDocuments(
        identity,
        ids=ids,
        max_document_chars=job.max_document_chars,
        progress_seconds=job.progress_seconds,
        documents_total=job.documents_total,
        noted=notes is not None,
    )
    documents = admitted.documents
    if job.previous:
        compared = documents | "Compare with previous" >> CompareWithPrevious(
            worker_path(job.previous),
            job.spec,
            identity,
            progress_seconds=job.progress_seconds,
            documents_total=job.documents_total,
        )
        documents = compared["documents"]
        # The kept documents' manifest rows go to a sink of their own, not behind a Flatten with
        # the chunked ones': the FnApiRunner materializes every Flatten of two inputs, so each kept
        # row would be held encoded until the last document is chunked, then decoded again.
        _ = compared[KEPT_MANIFEST] | "Write kept manifest" >> WriteManifest(
            f"{output}/documents/kept", run_id=job.run_id
        )
        _ = compared[KEPT_CHUNKS] | "Write kept chunks" >> WriteKeptChunks(f"{output}/chunks/kept", run_id=job.run_id)
    validated = documents | "Route, chunk and validate" >> ChunkDocuments(
        job.spec, identity, progress_seconds=job.progress_seconds, documents_total=job.documents_total
    )
    _ = validated.chunks | "Write chunks" >> WriteChunks(f"{output}/chunks/chunks", run_id=job.run_id)
    _ = validated[MANIFEST] | "Write manifest" >> WriteManifest(f"{output}/documents/documents", run_id=job.run_id)
    if job.previous:
        _ = (
            {"previous": compared[PREVIOUS_IDS], "chunks": validated.chunks}
            | "List deleted" >> ListDeleted()
            | "Write deleted" >> WriteDeleted(f"{output}/deleted/deleted", run_id=job.run_id)
        )
    # Two sinks, not one behind a Flatten: the FnApiRunner materializes a Flatten of two stages'
    # outputs, so a document dead-lettered whole at admission would be encoded and decoded again
    # on its way to the sink (200 M characters: 2.2 GiB of peak against 1.4).
    _ = admitted[DEAD_LETTER] | "Write admission dead letter" >> WriteDeadLetter(
        f"{output}/dead_letter/admission", run_id=job.run_id
    )
    _ = validated[DEAD_LETTER] | "Write dead letter" >> WriteDeadLetter(
        f"{output}/dead_letter/dead_letter", run_id=job.run_id
    )


def run(job: Job, *, started: float | None = None) -> dict[str, Any] | None:
    """Run the job to completion and commit its output (:func:`_run`); return the report. The
    output's lock and the store's claim are released whatever the outcome.

    Raises:
        RunError: The output cannot be committed (another writer, a full disk); nothing is.
    """
    try:
        return _run(job, started=started)
    finally:
        if job.claimed_store is not None:
            job.claimed_store.store.close()
        if job.run_id is not None:
            commit.release_lock(job.output, job.run_id)


def _run(job: Job, *, started: float | None = None) -> dict[str, Any] | None:
    """Run the job to completion and commit its output; return the report.

    The commit (:mod:`pipelines.commit`): the run checks that it still holds the output's lock
    and that the data files there are the ones it wrote, then writes ``report.json``,
    ``report.html`` and ``_SUCCESS``. ``started`` (``time.monotonic()``) is when the command
    started, for the report's ``wall_seconds`` (by default, now). With ``--dry_run``
    (DataflowRunner) the runner only translates and checks the graph: nothing runs, nothing is
    written, and there is no report (``None``).
    """
    started = time.monotonic() if started is None else started
    pipeline = beam.Pipeline(options=job.options)
    build_pipeline(pipeline, job)
    try:
        result = pipeline.run()
        if job.options.view_as(TestOptions).dry_run:
            return None
        result.wait_until_finish()
    except Exception as err:  # the runner wraps a worker's error in its own, by runner
        stopped = stopped_run_line(str(err))  # the input changed or damaged, --previous damaged
        if stopped is None:
            raise
        raise RunError(stopped) from None
    files = _verify_written(job)  # before the report reads the files
    report = build_report(
        result,
        output=job.output,
        spec=job.spec,
        tokenizer_identity=job.tokenizer_identity,
        wall_seconds=time.monotonic() - started,
        previous=job.previous,
        max_dead_letter_fraction=job.max_dead_letter_fraction,
    )
    report = _with_store_sections(job, report)
    report["wall_seconds"] = round(time.monotonic() - started, 3)  # the store's sync included
    _commit(job, files, report)
    return report


def _with_store_sections(job: Job, report: dict[str, Any]) -> dict[str, Any]:
    """The report with ``embedding`` and ``vector_store`` before its ``verdict``: the store
    synced to the run's chunks (:func:`pipelines.sync.sync_store`) when one is configured.

    Raises:
        RunError: The sync failed; the run is not committed.
    """
    from pipelines.sync import embedding_model, sync_sections, sync_store

    if job.claimed_store is not None:  # every run with vector_store: (parse_job claims it)
        whole = report["verdict"]["exit_status"] == 0
        sections = sync_store(
            job.output,
            job.spec,
            job.options,
            whole=whole,
            chunks=report["chunks_written"],
            claimed=job.claimed_store,
        )
    elif job.spec.get("embedding") is not None:
        sections = sync_sections(job.spec, {}, model=embedding_model(job.spec).identity, rows_after=None, synced=False)
    else:
        sections = sync_sections(job.spec, {}, model=None, rows_after=None, synced=False)
    verdict = report.pop("verdict")
    return {**report, **sections, "verdict": verdict}


def _verify_written(job: Job) -> dict[str, dict[str, int]]:
    """The data files of the run (relative path -> bytes and rows), checked to be its own
    (:func:`pipelines.commit.verify_written`); none checked for a :class:`Job` built by hand
    (without a run id).

    Raises:
        RunError: Another writer used the output, or the run lost its lock.
    """
    if job.run_id is None:
        return {}
    prefixes = ["chunks/chunks", "dead_letter/dead_letter", "dead_letter/admission", "documents/documents"]
    prefixes += ["chunks/kept", "documents/kept", "deleted/deleted"] if job.previous else []
    return commit.verify_written(job.output, job.run_id, prefixes)


def _commit(job: Job, files: dict[str, dict[str, int]], report: dict[str, Any]) -> None:
    """Write ``report.json``, ``report.html`` and ``_SUCCESS`` (:func:`pipelines.commit.commit`);
    ``report.json`` only for a :class:`Job` built by hand (without a run id).

    Raises:
        RunError: As :func:`pipelines.commit.commit` raises it.
    """
    if job.run_id is None:
        write_report(report, f"{job.output}/report.json")
        write_report_html(report, f"{job.output}/report.html")
        return
    commit.commit(job.output, job.run_id, files, report, write_html=write_report_html)


def _count(n: int, noun: str) -> str:
    """``n`` (thousands separated, as the progress lines give it) and ``noun``, the noun without its
    ``s`` when ``n`` is 1 (``1 document``, ``48,384 chunks``)."""
    return f"{n:,} {noun[:-1] if n == 1 else noun}"


def summary(report: dict[str, Any], output: str) -> str:
    """The lines printed at the end of a run: documents, chunks, dead letter, the previous run's
    kept documents (with ``--previous``), where the report is and, when the run is over
    ``--max-dead-letter-fraction``, why it exits with status 3; counts thousands-separated."""
    reasons = ", ".join(f"{k} {v:,}" for k, v in report["dead_letter_by_reason"].items()) or "none"
    tokens = report["token_count"]
    sizes = (
        f"tokens min {tokens['min']:,}, p50 {tokens['p50']:,}, p95 {tokens['p95']:,}, max {tokens['max']:,} "
        if tokens["max"] is not None
        else "no chunk, "
    )
    return "\n".join(
        [
            f"rechunk: {_count(report['documents_read'], 'documents')} read, {report['documents_chunked']:,} chunked, "
            f"{report['documents_dead_lettered']:,} dead-lettered ({report['documents_partially_rejected']:,} partly)",
            f"rechunk: {_count(report['chunks_written'], 'chunks')} written to {output}/chunks/ "
            f"({sizes}of max {report['max_tokens']:,}, {report['tokenizer']})",
            f"rechunk: {_count(report['dead_letter_rows'], 'dead-letter rows')} in {output}/dead_letter/ ({reasons})",
            *(
                [
                    f"rechunk: {_count(report['documents_skipped_unchanged'], 'unchanged documents')} kept from "
                    f"{inc['previous']} without chunking ({inc['documents_new']:,} new, {inc['documents_changed']:,} "
                    f"changed, {inc['documents_deleted']:,} deleted); {_count(inc['chunks_deleted'], 'previous chunk ids')} "
                    f"listed in {output}/deleted/"
                ]
                if (inc := report.get("incremental"))
                else []
            ),
            *([_store_line(store, report["embedding"])] if (store := report.get("vector_store")) else []),
            f"rechunk: report in {output}/report.json and report.html ({report['wall_seconds']} s)",
            *([line] if (line := verdict_line(report)) else []),
        ]
    )


def _store_line(store: dict[str, Any], embedding: dict[str, Any]) -> str:
    """The summary's line on the vector store: what the sync wrote, or why it did not run."""
    if not store["synced"]:
        return f"rechunk: vector store {store['store']} left as it was: the run is over --max-dead-letter-fraction"
    return (
        f"rechunk: vector store {store['store']}: {store['upserted']:,} upserted, {store['updated']:,} updated, "
        f"{store['deleted']:,} deleted, {_count(store['rows_after'], 'rows')} now "
        f"({_count(embedding['chunks_embedded'], 'chunks')} embedded, {embedding['chunks_reused']:,} reused)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job from command-line arguments; return the exit status (0 committed, 1 not
    committed, 2 option error, 3 committed but over ``--max-dead-letter-fraction``).

    ``parse ...`` runs :func:`pipelines.parse.main`, ``check ...`` :func:`pipelines.check.main`.
    """
    started = time.monotonic()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["parse"]:  # rechunk parse ...: raw files into this job's input
        from pipelines.parse import main as parse_main

        return parse_main(argv[1:])
    if argv[:1] == ["check"]:  # rechunk check ...: a finished run checked against its input
        from pipelines.check import main as check_main

        return check_main(argv[1:])
    if any(a in ("-h", "--help") for a in argv):
        say(USAGE, end="")
        return 0
    if "--version" in argv:
        say(version_line())
        return 0
    show_progress()
    try:
        job = parse_job(argv)
    except OptionError as err:
        error("rechunk", err)
        return 2
    try:
        report = run(job, started=started)
    except RunError as err:
        error("rechunk", err)
        return 1
    if report is None:
        runner = job.options.view_as(StandardOptions).runner
        say(f"rechunk: dry run: {runner} built the job graph; nothing ran and nothing was written to {job.output}")
        return 0
    say(summary(report, job.output))
    return int(report["verdict"]["exit_status"])


def cli(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``rechunk``, ``rechunk parse`` and ``rechunk check``).

    Exits with ``os._exit`` once the output and report are written: at interpreter finalization a
    native thread left by Arrow or gRPC can abort the process (exit 134, about one run in ten
    here), which would turn a finished job into a failure.
    """
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    cli()
