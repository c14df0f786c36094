"""``rechunk parse``: raw files (Markdown, text, reST, HTML, DOCX, PPTX, XLSX, PDF) into the chunk job's input.

    rechunk parse --input 'PATTERN' --output DIR [--content-format docling|markdown]
                  [--format-for EXT=FORMAT,...] [--max-file-bytes N] [--pdf-artifacts-path DIR]
                  [any Beam pipeline option]
    python -m pipelines.parse ...

The graph (see ``transforms.beam.parse``)::

    Match files -> Open files -> Convert files -> Write parsed       (DIR/parsed/*.parquet)
                                      \\________-> Write dead letter  (DIR/dead_letter/*.parquet)
    metrics -> DIR/report.json

``DIR/parsed/*.parquet`` is the chunk job's ``--input``. Every mistake in the options is one line
on stderr and exit status 2, before the pipeline starts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystem import FileMetadata
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

import transforms
from pipelines import commit
from pipelines.console import error, say, use_escaping_formatter, version_line
from pipelines.options import (
    OptionError,
    OptionParser,
    RechunkOptions,
    check_given_once,
    known_option_names,
    unknown_options,
    unrecognized,
)
from pipelines.paths import inside_pattern, worker_path, worker_pattern
from pipelines.preflight import (
    check_filesystem,
    check_folder_name,
    check_output_empty,
    check_output_is_no_file,
    check_reachable,
    check_utf8,
    create_output,
    matched_input,
)
from pipelines.report import write_report
from pipelines.runners import check_runner
from transforms.parsing import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILE_SECONDS,
    OUTPUT_FORMATS,
    PARSE_INSTALL_HINT,
    PDF_MODELS_HINT,
    FileFormats,
)

__all__ = ["ParseJob", "main", "parse_job", "run"]

#: Files the parse job writes under --output (relative paths), which --input must not match.
PARSE_OUTPUT_FILES = (
    "report.json",
    "parsed/parsed-00000-of-00001.parquet",
    "dead_letter/dead_letter-00000-of-00001.parquet",
)

#: The folders of the parse job's output.
_OUTPUT_FOLDERS = ("parsed", "dead_letter")

_USAGE = """usage: rechunk parse --input PATTERN --output DIR [--content-format docling|markdown]
                     [--format-for EXT=FORMAT,...] [--max-file-bytes N] [--max-file-seconds S]
                     [--pdf-artifacts-path DIR] [Beam pipeline options]

Turn raw files into the chunk job's input Parquet: Markdown (.md .markdown), text (.txt .text),
reST (.rst .rest) and HTML (.html .htm .xhtml) as they are, UTF-8; DOCX, PPTX, XLSX with Docling;
PDF with Docling's models when given, else from its text layer with page numbers.

  --input PATTERN         raw files (local path, gs://, any Beam filesystem); directories are skipped;
                          ** is any characters, / included: 'raw/**.md' (not 'raw/**/*.md', which
                          misses raw/a.md)
  --output DIR            writes DIR/parsed/ (the chunk job's --input), DIR/dead_letter/, DIR/report.json
  --content-format F      for Docling's conversions and PDFs: docling (DoclingDocument JSON, default)
                          or markdown (Docling's Markdown export)
  --format-for MAP        extension -> format, e.g. mdx=markdown,log=text,html=docling: read those
                          files as markdown, text, rst or html, or convert them with docling
  --max-file-bytes N      larger files are dead-lettered as file_too_large, unread (default 52,428,800)
  --max-file-seconds S    a conversion still running after S seconds is stopped and the file
                          dead-lettered as conversion_timeout (default 300)
  --pdf-artifacts-path D  a local folder of Docling's PDF models; without it a PDF's text layer is
                          read (a PDF without one is dead-lettered as pdf_no_text_layer)

Any Apache Beam option passes through: --runner, --direct_num_workers, ... A mistake in the
options exits with status 2 before the pipeline starts.
"""


@dataclass(frozen=True)
class ParseJob:
    """Everything checked before the parse pipeline starts."""

    input: str
    output: str
    content_format: str
    max_file_bytes: int
    max_file_seconds: float
    pdf_artifacts_path: str | None
    options: PipelineOptions
    format_for: dict[str, str] | None = None


def parse_job(argv: Sequence[str]) -> ParseJob:
    """Parse and check the command line, input and output.

    Raises:
        OptionError: Any mistake, as one line naming the option.
    """
    own, rest = _read_options(argv)
    max_file_bytes = _max_file_bytes(own.max_file_bytes)
    max_file_seconds = _max_file_seconds(own.max_file_seconds)
    format_for = parse_format_for(own.format_for)
    pdf_artifacts_path = _checked_pdf_artifacts(own.pdf_artifacts_path)
    options = PipelineOptions(rest)
    check_runner(options)
    if options.view_as(StandardOptions).runner == "DataflowRunner":
        for flag, path in (("--input", own.input), ("--output", own.output)):
            if "://" not in path or path.startswith("file://"):
                raise OptionError(f"{flag} {path}: DataflowRunner workers cannot reach local paths; use gs://")
    pattern, output = _checked_input_and_output(
        own.input, own.output, formats=FileFormats(format_for), pdf_artifacts_path=pdf_artifacts_path
    )
    return ParseJob(
        input=pattern,
        output=output,
        content_format=own.content_format,
        max_file_bytes=max_file_bytes,
        max_file_seconds=max_file_seconds,
        pdf_artifacts_path=pdf_artifacts_path,
        options=options,
        format_for=format_for,
    )


def _read_options(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """The parse job's own options (``--input`` and ``--output`` given, a known content format)
    and Beam's, which must all be known to Beam."""
    own, rest = _own_options(argv)
    # The chunk job's own options are mistakes here too.
    unknown = unknown_options(rest, exclude=(RechunkOptions,))
    if unknown:
        known = [*_own_option_names(), *known_option_names(exclude=(RechunkOptions,))]
        raise OptionError(unrecognized(unknown[0], known, "rechunk parse --help"))
    if not own.input:
        raise OptionError(
            "--input is required: a file pattern of raw files (Markdown, text, reST, HTML, DOCX, PPTX, XLSX, PDF)"
        )
    if not own.output:
        raise OptionError("--output is required: the directory to write parsed/, dead_letter/ and report.json")
    if own.content_format not in OUTPUT_FORMATS:
        raise OptionError(f"--content-format must be one of {', '.join(OUTPUT_FORMATS)}, got {own.content_format!r}")
    return own, rest


def _own_options(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """The parse job's own options, and the rest of ``argv`` (Beam's options)."""
    parser = _own_parser()
    own, rest = parser.parse_known_args(list(argv))
    check_given_once(argv, parser)
    return own, rest


def _own_option_names() -> list[str]:
    """The parse job's own option strings."""
    return [o for a in _own_parser()._actions for o in a.option_strings]


def _own_parser() -> OptionParser:
    """The parser of the parse job's own options."""
    parser = OptionParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--input")
    parser.add_argument("--output")
    parser.add_argument("--content-format", "--content_format", dest="content_format", default="docling")
    parser.add_argument("--max-file-bytes", "--max_file_bytes", dest="max_file_bytes")
    parser.add_argument("--max-file-seconds", "--max_file_seconds", dest="max_file_seconds")
    parser.add_argument("--pdf-artifacts-path", "--pdf_artifacts_path", dest="pdf_artifacts_path")
    parser.add_argument("--format-for", "--format_for", dest="format_for")
    return parser


def parse_format_for(value: str | None) -> dict[str, str]:
    """``--format-for`` (``EXT=FORMAT,...``) as ``{ext: format}`` (extensions in lower case, no
    dot), checked by :class:`~transforms.parsing.FileFormats`; empty when not given.

    Raises:
        OptionError: An item is not ``EXT=FORMAT``, or :class:`FileFormats` refuses it.
    """
    if value is None:
        return {}
    overrides: dict[str, str] = {}
    for item in value.split(","):
        extension, sep, target = (part.strip() for part in item.partition("="))
        if not sep or not extension or not target:
            raise OptionError(f"--format-for: expected EXT=FORMAT (e.g. mdx=markdown), got {item.strip()!r}")
        key = extension.lower().removeprefix(".")
        if key in overrides:
            raise OptionError(f"--format-for: .{key} is given twice in {value!r}")
        overrides[key] = target
        try:
            FileFormats({extension: target})
        except ValueError as err:
            raise OptionError(f"--format-for {err}") from None
    return overrides


def _max_file_bytes(value: str | None) -> int:
    """``--max-file-bytes`` (default ``DEFAULT_MAX_FILE_BYTES``): a positive integer."""
    if value is None:
        return DEFAULT_MAX_FILE_BYTES
    try:
        size = int(value)
    except ValueError:
        size = 0
    if size <= 0:
        raise OptionError(f"--max-file-bytes must be a positive integer (bytes), got {value!r}")
    return size


def _max_file_seconds(value: str | None) -> float:
    """``--max-file-seconds`` (default ``DEFAULT_MAX_FILE_SECONDS``): a positive finite number."""
    if value is None:
        return DEFAULT_MAX_FILE_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise OptionError(f"--max-file-seconds must be a positive number of seconds, got {value!r}")
    return seconds


def _checked_pdf_artifacts(pdf: str | None) -> str | None:
    """``--pdf-artifacts-path`` made absolute (a non-empty local folder), once Docling is found
    (asked for by this option whatever the input holds)."""
    if pdf is not None and not os.path.isdir(pdf):
        raise OptionError(f"--pdf-artifacts-path {pdf}: no such local directory (Docling's PDF models)")
    if pdf is not None and not os.listdir(pdf):
        raise OptionError(
            f"--pdf-artifacts-path {pdf}: empty; fetch Docling's models there (docling-tools models download -o {pdf})"
        )
    if pdf is None:
        return None
    _check_docling(os.path.abspath(pdf))
    return os.path.abspath(pdf)


def _check_docling(pdf_artifacts_path: str | None) -> None:
    """Docling and PDFium (pypdfium2) must be importable here (the launcher builds nothing, but a
    missing extra would otherwise fail on every worker); with ``--pdf-artifacts-path``, Docling's
    PDF pipeline too."""
    try:
        import importlib.util

        from transforms.parsing import FileConverter

        if importlib.util.find_spec("pypdfium2") is None:
            raise ImportError(PARSE_INSTALL_HINT)
        FileConverter(pdf_artifacts_path=pdf_artifacts_path)
    except ImportError as err:
        hint = PDF_MODELS_HINT if pdf_artifacts_path and str(err) == PDF_MODELS_HINT else PARSE_INSTALL_HINT
        raise OptionError(f"{'--pdf-artifacts-path: ' if hint == PDF_MODELS_HINT else ''}{hint}") from None


def _checked_input_and_output(
    given_input: str, given_output: str, *, formats: FileFormats, pdf_artifacts_path: str | None
) -> tuple[str, str]:
    """The input pattern the workers read, and the output folder (created), both checked; when a
    matched file is converted (office formats, PDFs, ``--format-for EXT=docling``), Docling must
    be installed (text files alone need no extra)."""
    check_utf8("--input", given_input, given_input)
    check_utf8("--output", given_output, given_output)
    check_filesystem("--input", given_input)  # as given: gs:/b/x made absolute would hide its missing slash
    pattern = worker_pattern(given_input)
    output = given_output.rstrip("/") or "/"
    check_filesystem("--output", output)
    check_folder_name("--output", output)
    if inside_pattern(worker_path(output), pattern, PARSE_OUTPUT_FILES):
        raise OptionError(
            f"--output {given_output}: inside --input {given_input}; its files would be read as raw files by the next run"
        )
    check_reachable("--input", pattern)
    check_reachable("--output", output)
    matched = _check_raw_input(given_input, pattern)
    converted = next((m.path for m in matched if _converted(formats, m.path)), None)
    if converted is not None and pdf_artifacts_path is None:
        try:
            _check_docling(None)
        except OptionError as err:
            raise OptionError(f"--input {given_input}: {converted} is converted by Docling; {err}") from None
    check_output_is_no_file(output)
    create_output(output)
    check_output_empty(output, _OUTPUT_FOLDERS)
    return pattern, output


def _converted(formats: FileFormats, path: str) -> bool:
    """Whether Docling or PDFium converts ``path`` (not read as text, nor of no known format)."""
    found = formats.of(path)
    return found is not None and found[1] != "text"


def _check_raw_input(given: str, pattern: str) -> list[FileMetadata]:
    """``--input`` (``given``; ``pattern`` as the workers read it) matches files with UTF-8 names:
    their metadata."""
    if "://" not in pattern and os.path.isdir(worker_path(given)):
        raise OptionError(
            f"--input {given}: is a directory; give a file pattern such as {given.rstrip('/')}/** (all files below it)"
        )
    return matched_input(given, pattern)


def build_pipeline(pipeline: beam.Pipeline, job: ParseJob) -> None:
    """Add the parse job's transforms to ``pipeline``."""
    from transforms.beam import DEAD_LETTER, ParseFiles, WriteParsed, WriteParseDeadLetter

    output = worker_path(job.output)
    parsed = pipeline | "Parse files" >> ParseFiles(
        job.input,
        content_format=job.content_format,
        max_file_bytes=job.max_file_bytes,
        max_file_seconds=job.max_file_seconds,
        pdf_artifacts_path=job.pdf_artifacts_path,
        format_for=job.format_for,
    )
    _ = parsed.documents | "Write parsed" >> WriteParsed(f"{output}/parsed/parsed")
    _ = parsed[DEAD_LETTER] | "Write dead letter" >> WriteParseDeadLetter(f"{output}/dead_letter/dead_letter")


def build_report(result, *, job: ParseJob, wall_seconds: float) -> dict[str, Any]:
    """The parse job's report from its Beam metrics.

    Keys: ``files_read``, ``files_parsed``, ``files_dead_lettered``, ``files_by_format``,
    ``parsed_by_format``, ``parsed_by_content_format``, ``dead_letter_by_reason``, ``dead_letter_rows``, ``bytes_parsed``,
    ``convert_seconds_by_format`` (time in the converter, summed over workers),
    ``files_per_second_by_format`` (files over that time: one worker's rate), ``content_format``,
    ``format_for``,
    ``max_file_bytes``, ``max_file_seconds``, ``wall_seconds``, ``version``, ``output``. Maps are sorted by key.
    """
    from transforms.beam import PARSE_METRICS_NAMESPACE

    totals: dict[str, int] = {}
    for counter in result.metrics().query(MetricsFilter().with_namespace(PARSE_METRICS_NAMESPACE))["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + (value or 0)

    def group(prefix: str) -> dict[str, int]:
        return {k.split(".", 1)[1]: v for k, v in sorted(totals.items()) if k.startswith(prefix + ".")}

    by_format = group("files_by_format")
    seconds = {fmt: round(us / 1_000_000, 6) for fmt, us in group("convert_us").items()}
    reasons = group("dead_letter")
    return {
        "files_read": sum(by_format.values()),
        "files_parsed": totals.get("files_parsed", 0),
        "files_dead_lettered": totals.get("files_dead_lettered", 0),
        "files_by_format": by_format,
        "parsed_by_format": group("parsed_by_format"),
        "parsed_by_content_format": group("parsed_by_content_format"),
        "dead_letter_by_reason": reasons,
        "dead_letter_rows": sum(reasons.values()),
        "bytes_parsed": totals.get("bytes_parsed", 0),
        "convert_seconds_by_format": seconds,
        "files_per_second_by_format": {
            fmt: round(by_format[fmt] / s, 1) if s > 0 else None for fmt, s in seconds.items() if fmt in by_format
        },
        "content_format": job.content_format,
        "format_for": dict(sorted((job.format_for or {}).items())),
        "max_file_bytes": job.max_file_bytes,
        "max_file_seconds": job.max_file_seconds,
        "wall_seconds": round(wall_seconds, 3),
        "version": transforms.__version__,
        "output": {"parsed": f"{job.output}/parsed/", "dead_letter": f"{job.output}/dead_letter/"},
    }


def run(job: ParseJob, *, started: float | None = None) -> dict[str, Any]:
    """Run the parse job to completion, write ``report.json`` and return the report.

    ``started`` (``time.monotonic()``) is when the command started, for ``wall_seconds`` (by
    default, now)."""
    started = time.monotonic() if started is None else started
    pipeline = beam.Pipeline(options=job.options)
    build_pipeline(pipeline, job)
    result = pipeline.run()
    result.wait_until_finish()
    report = build_report(result, job=job, wall_seconds=time.monotonic() - started)
    write_report(report, f"{job.output}/report.json")
    return report


def _summary(report: dict[str, Any], output: str) -> str:
    formats = ", ".join(f"{k} {v:,}" for k, v in report["files_by_format"].items()) or "none"
    reasons = ", ".join(f"{k} {v:,}" for k, v in report["dead_letter_by_reason"].items()) or "none"
    documents = ", ".join(f"{k} {v:,}" for k, v in report["parsed_by_content_format"].items()) or "none"
    return "\n".join(
        [
            f"rechunk parse: {report['files_read']:,} files read ({formats}), {report['files_parsed']:,} parsed, "
            f"{report['files_dead_lettered']:,} dead-lettered",
            f"rechunk parse: {report['files_parsed']:,} documents ({documents}) written to {output}/parsed/",
            f"rechunk parse: {report['dead_letter_rows']:,} dead-letter rows in {output}/dead_letter/ ({reasons})",
            f"rechunk parse: report in {output}/report.json ({report['wall_seconds']} s)",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the parse job from command-line arguments; return the exit status (0 ok, 2 option error)."""
    started = time.monotonic()
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        say(_USAGE, end="")
        return 0
    if "--version" in argv:
        say(version_line())
        return 0
    os.environ["HF_HUB_OFFLINE"] = "1"  # Docling never reaches the Hugging Face Hub
    use_escaping_formatter()
    try:
        job = parse_job(argv)
        run_id = _take_output(job.output)
    except OptionError as err:
        error("rechunk parse", err)
        return 2
    try:
        report = run(job, started=started)
    finally:
        commit.release_lock(job.output, run_id)
    say(_summary(report, job.output))
    return 0


def _take_output(output: str) -> str:
    """Hold ``output`` for this run (the chunk job's lock, :func:`pipelines.commit.take_lock`), and
    check under it that no other run has written there since the launch's checks; the run id.

    Raises:
        OptionError: Another run holds ``output`` or has written into it.
    """
    run_id = commit.take_lock(output, _OUTPUT_FOLDERS)
    try:
        check_output_empty(output, _OUTPUT_FOLDERS)
    except OptionError:
        commit.release_lock(output, run_id)
        raise
    return run_id


if __name__ == "__main__":
    from pipelines.rechunk import cli

    cli(["parse", *sys.argv[1:]])
